import { assert, describe, it } from "@effect/vitest"
import { LifecycleError, Toolset } from "@toolvisor/core"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as ClusterError from "effect/cluster/ClusterError"
import * as EntityAddress from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as EntityType from "effect/cluster/EntityType"
import * as ShardId from "effect/cluster/ShardId"
import * as Snowflake from "effect/cluster/Snowflake"
import * as CallOutcome from "../src/CallOutcome.ts"

const call = { toolset: "notes", tool: "append", callId: "c-1" }
const address = EntityAddress.make({
  entityType: EntityType.make("Toolset"),
  entityId: EntityId.make("mcp/notes@0"),
  shardId: ShardId.make("default", 1)
})

describe("CallOutcome", () => {
  it("a failure after the hand-off to the server may have run, whatever its type", () => {
    const after = [
      LifecycleError.notStarted("notes", "supervisor closed while the request was in flight"),
      new LifecycleError.ServerCrashed({ toolset: "notes", message: "notes: exited" }),
      new LifecycleError.CallTimeout({ toolset: "notes", message: "notes: 1s", afterMillis: 1000 }),
      new LifecycleError.TransportError({ toolset: "notes", message: "notes: reset" }),
      new LifecycleError.SessionMissing({ toolset: "notes", message: "notes: gone" })
    ]
    for (const error of after) {
      const classified = CallOutcome.afterHandOff(call, error)
      assert.strictEqual(classified._tag, "CallOutcomeUnknown")
      assert.strictEqual(CallOutcome.outcome(classified), "MayHaveRun")
      assert.include(classified.message, error._tag)
    }
  })

  it("a veto before sending and an answer from the server keep their types", () => {
    const notFound = new Toolset.ToolNotFound({ toolset: "notes", tool: "x", message: "notes: no tool x" })
    const answered = new Toolset.ToolCallFailed({ toolset: "notes", tool: "append", message: "bad args", code: -32602 })
    assert.strictEqual(CallOutcome.afterHandOff(call, notFound), notFound)
    assert.strictEqual(CallOutcome.outcome(notFound), "NotRun")
    assert.strictEqual(CallOutcome.afterHandOff(call, answered), answered)
    assert.strictEqual(CallOutcome.outcome(answered), "Answered")
  })

  it("the cluster's own failures: a refused or unassigned message did not run, one already processing may have", () => {
    const full = CallOutcome.undelivered(call, new ClusterError.MailboxFull({ address }))
    const unassigned = CallOutcome.undelivered(call, new ClusterError.EntityNotAssignedToRunner({ address }))
    const processing = CallOutcome.undelivered(
      call,
      new ClusterError.AlreadyProcessingMessage({ address, envelopeId: Snowflake.Snowflake(BigInt(1)) })
    )
    const storage = CallOutcome.undelivered(call, new ClusterError.PersistenceError({ cause: new Error("down") }))
    assert.strictEqual(CallOutcome.didNotRun(full), true)
    assert.strictEqual(CallOutcome.didNotRun(unassigned), true)
    assert.strictEqual(processing._tag, "CallOutcomeUnknown")
    assert.strictEqual(storage._tag, "CallOutcomeUnknown")
    assert.strictEqual(processing._tag === "CallOutcomeUnknown" ? processing.requestId : undefined, "c-1")
  })

  it("every error type is in the table, in exactly one class", () => {
    const classes = new Set(Object.values(CallOutcome.table))
    assert.deepStrictEqual([...classes].sort(), ["Answered", "MayHaveRun", "NotRun"])
    const tags = [
      ...LifecycleError.LifecycleError.members,
      ...Toolset.ToolError.members,
      ToolsetRegistry.UnknownTool,
      ToolsetRegistry.UnknownAgent
    ].map((member) => member.fields._tag.schema.literal)
    assert.deepStrictEqual(Object.keys(CallOutcome.table).sort(), [...tags].sort())
  })
})
