/**
 * Tools that must run as MCP tasks (2025-11-25 `execution.taskSupport: "required"`), on a real
 * server-everything over stdio (`simulate-research-query`, four one-second stages): the call
 * creates the task, polls it and returns its result; interrupting the call cancels the task on the
 * server; a task in flight when its server is SIGKILLed fails with a typed error within a poll.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as McpToolset from "../src/McpToolset.ts"
import { everythingStdio, fastPolicy, textOf } from "./helpers.ts"

const open = Effect.gen(function* () {
  const scope = yield* Scope.make()
  const toolset = yield* McpToolset.make({ name: "everything", spec: everythingStdio(), policy: fastPolicy() }).pipe(
    Scope.provide(scope)
  )
  yield* toolset.start
  return { toolset, close: Scope.close(scope, Exit.void) }
})

/** The statuses of the session's tasks, as the server reports them (`tasks/list`). */
const statuses = (toolset: McpToolset.McpToolset) =>
  toolset.supervisor.use((session) =>
    Effect.promise(() => session.client.experimental.tasks.listTasks()).pipe(
      Effect.map((listed) => listed.tasks.map((task) => task.status))
    )
  )

/** Waits until the server lists a task with `status`. */
const untilTask = (toolset: McpToolset.McpToolset, status: "working" | "cancelled") =>
  statuses(toolset).pipe(
    Effect.repeat({ until: (all) => all.includes(status), schedule: Schedule.spaced("50 millis") }),
    Effect.timeout("20 seconds")
  )

describe("tools that require a task", () => {
  it.live("run as a task: created, polled, and its result returned", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open
      const result = yield* toolset.callTool("simulate-research-query", { topic: "otters" })
      assert.include(textOf(result), "# Research Report: otters")
      assert.deepStrictEqual(yield* statuses(toolset), ["completed"])
      yield* close
    })
  )

  it.live("interrupting the call cancels its task on the server", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open
      const call = yield* Effect.forkChild(toolset.callTool("simulate-research-query", { topic: "otters" }), {
        startImmediately: true
      })
      yield* untilTask(toolset, "working")
      yield* Fiber.interrupt(call)
      yield* untilTask(toolset, "cancelled")
      yield* close
    })
  )

  it.live("a task in flight when its server is SIGKILLed fails typed within a poll, never hangs", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open
      const call = yield* Effect.forkChild(toolset.callTool("simulate-research-query", { topic: "otters" }), {
        startImmediately: true
      })
      yield* untilTask(toolset, "working")
      const killedAt = Date.now()
      process.kill((yield* toolset.state).pid ?? 0, "SIGKILL")
      const exit = yield* Fiber.await(call)
      const took = Date.now() - killedAt
      // Not run again on the restarted server: the task was created on the session that died.
      assert.strictEqual(failureTag(exit), "ServerCrashed")
      assert.isBelow(took, 2_500, "failed within a poll of the death")
      yield* close
    })
  )
})

const failureTag = (exit: Exit.Exit<unknown, { readonly _tag: string }>): string =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail")?.error._tag ?? "none") : "success"
