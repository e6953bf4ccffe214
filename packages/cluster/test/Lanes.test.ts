/**
 * The call lane (`LaneServer`, `LaneClient`): two real runner processes, a real PostgreSQL server
 * and this process as a client, on 127.0.0.1, with the test timers (a 4 s lease). Calls take the
 * lane of the runner hosting their toolset; what the lane cannot finish goes through the cluster
 * with the same call id; hostile peers on the lane's port end only their own connection.
 */
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import type { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as CallOutcome from "../src/CallOutcome.ts"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as ClusterRegistry from "../src/ClusterRegistry.ts"
import * as LaneClient from "../src/internal/laneClient.ts"
import * as LaneWire from "../src/internal/laneWire.ts"
import * as ToolsetEntity from "../src/internal/toolsetEntity.ts"
import { config, journalEntry } from "./helpers.ts"
import * as Postgres from "./Postgres.ts"
import { type RunnerProcess, runnerOf, startRunners, timers } from "./Runners.ts"

class Scenario extends Context.Service<
  Scenario,
  {
    readonly registry: ToolsetRegistry.Registry
    readonly lanes: LaneClient.Service
    /** A toolset's entity id. */
    readonly entityOf: (toolset: string) => string
    /** The lane a toolset's entity says it takes calls on. */
    readonly laneOf: (toolset: string) => Effect.Effect<string | undefined, unknown>
    readonly dir: string
    readonly runners: Map<string, RunnerProcess>
  }
>()("test/Scenario") {}

const ports = [24511, 24512] as const
const names = ["l0", "l1", "l2", "l3"]

const scenario = Layer.effect(
  Scenario,
  Effect.gen(function* () {
    const { url } = yield* Postgres.Postgres
    const runners = yield* startRunners(url, ports)
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-lanes-"))
    const entries = names.map((name) =>
      journalEntry(name, {
        env: { JOURNAL_FILE: NodePath.join(dir, `${name}.journal`), TRACE_FILE: NodePath.join(dir, `${name}.trace`) }
      })
    )
    const context = yield* Layer.build(ClusterClient.layer({ postgres: url, timers }))
    const registry = yield* ClusterRegistry.make(config(entries), { requestTimeout: "15 seconds" }).pipe(
      Effect.provideContext(context)
    )
    const entity = yield* ToolsetEntity.ToolsetEntity.client.pipe(Effect.provideContext(context))
    const entityOf = (toolset: string) => {
      const entry = entries.find((e) => e.name === toolset)
      return entry === undefined ? "" : ToolsetEntity.entityId(ToolsetEntity.toSpec(entry))
    }
    const laneOf = (toolset: string) => Effect.map(entity(entityOf(toolset)).Status(), (observed) => observed.lane)
    return { registry, lanes: Context.get(context, LaneClient.LaneClient), entityOf, laneOf, dir, runners }
  })
).pipe(Layer.provide(Postgres.layer))

const allReady = (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.length === names.length && board.every((s) => s.state === "Ready")

const ready = (registry: ToolsetRegistry.Registry) =>
  registry.snapshot.pipe(
    Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: allReady }),
    Effect.timeout("60 seconds")
  )

/** The lines of a toolset's trace (`TRACE_FILE`), once `done` holds for them (polled, at most 20 s). */
const traced = (dir: string, toolset: string, done: (lines: ReadonlyArray<string>) => boolean) =>
  Effect.sync(() => {
    const file = NodePath.join(dir, `${toolset}.trace`)
    return NodeFs.existsSync(file) ? NodeFs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []
  }).pipe(Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: done }), Effect.timeout("20 seconds"))

/** A raw connection to a lane: what it answers (lines), and whether the runner closed it. */
const rawPeer = (address: string) =>
  Effect.acquireRelease(
    Effect.callback<{ socket: NodeNet.Socket; lines: Array<string>; closed: Promise<void> }, Error>((resume) => {
      const colon = address.lastIndexOf(":")
      const socket = NodeNet.connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) })
      const lines: Array<string> = []
      const split = LaneWire.lines()
      socket.on("data", (chunk: Buffer) => lines.push(...(split(chunk) ?? [])))
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
      socket.once("error", (error) => resume(Effect.fail(error)))
      socket.once("connect", () => resume(Effect.succeed({ socket, lines, closed })))
    }),
    (peer) => Effect.sync(() => peer.socket.destroy())
  )

/** Waits until the runner ends `peer`'s connection (at most 10 s). */
const closedByRunner = (peer: { readonly closed: Promise<void> }) =>
  Effect.promise(() => peer.closed).pipe(Effect.timeout("10 seconds"))

describe("the call lane", () => {
  layer(scenario, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("calls go over the lane of the runner hosting the toolset, typed errors and all", () =>
      Effect.gen(function* () {
        const { registry, lanes, dir, entityOf, laneOf } = yield* Scenario
        yield* registry.start
        yield* ready(registry)
        const before = lanes.stats()
        const echoed = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, i) => `m${i}`),
          (message, i) => registry.callTool(`${names[i % names.length]}_echo`, { message }),
          { concurrency: 8 }
        )
        assert.deepStrictEqual(
          echoed.map((r) => r.content),
          Array.from({ length: 40 }, (_, i) => [{ type: "text", text: `m${i}` }])
        )
        // Not safe to repeat: recorded in the ledger on the runner, run once.
        const appended = yield* registry.callTool("l1_append", { line: "over the lane" })
        assert.match(JSON.stringify(appended.content), /appended over the lane in \d+/)
        assert.strictEqual(NodeFs.readFileSync(NodePath.join(dir, "l1.journal"), "utf8"), "over the lane\n")
        // The server's error result comes back whole…
        const invalid = yield* registry.callTool("l2_append", { ms: 1 })
        assert.isTrue(invalid.isError)
        assert.include(JSON.stringify(invalid.content), "Invalid arguments for tool append")
        // …and the runner's typed error crosses the lane as itself (a tool the server does not
        // have, sent past the registry, which would refuse it here).
        const lane = (yield* laneOf("l2")) ?? ""
        const call = { tool: "nope", args: {}, callId: crypto.randomUUID(), sentAt: Date.now() }
        const refused = yield* lanes.call(lane, entityOf("l2"), call, () => () => undefined)
        assert.strictEqual(refused._tag, "Error")
        if (refused._tag === "Error") {
          assert.strictEqual(refused.error._tag, "ToolNotFound")
          assert.include(refused.error.message, "nope")
          assert.isTrue(CallOutcome.didNotRun(refused.error))
        }
        const after = lanes.stats()
        assert.strictEqual(after.answered - before.answered, 43)
        assert.strictEqual(after.redelivered - before.redelivered, 0)
      })
    )

    it.effect("a call its caller interrupts is cancelled on the server, through the lane", () =>
      Effect.gen(function* () {
        const { registry, dir } = yield* Scenario
        const call = yield* registry
          .callTool("l0_echo", { message: "long", ms: 30_000 })
          .pipe(Effect.forkChild({ startImmediately: true }))
        yield* traced(dir, "l0", (lines) => lines.includes("start echo long"))
        yield* Fiber.interrupt(call)
        yield* traced(dir, "l0", (lines) => lines.includes("cancel echo long"))
      })
    )

    it.effect(
      "hostile peers on a lane's port end only their own connection; a toolset not hosted there is answered 'elsewhere'",
      () =>
        Effect.gen(function* () {
          const { registry, laneOf } = yield* Scenario
          const address = yield* laneOf("l3")
          assert.isDefined(address)
          const lane = address ?? ""
          const frame = (value: unknown) => `${JSON.stringify(value)}\n`
          const ask = { tool: "echo", args: { message: "x" }, callId: "c", sentAt: Date.now() }

          const stranger = yield* rawPeer(lane)
          stranger.socket.write(frame({ i: 7, e: "mcp/nobody@0000000000000000", p: ask }))
          yield* Effect.sync(() => stranger.lines).pipe(
            Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (lines) => lines.length > 0 }),
            Effect.timeout("10 seconds")
          )
          assert.deepStrictEqual(
            stranger.lines.map((l) => JSON.parse(l)),
            [{ i: 7, elsewhere: true }]
          )

          const hostile = [
            "not json\n",
            frame({ i: -1, e: "x", p: ask }),
            frame({ i: 1, e: "x", p: { tool: 3 } }),
            frame([1, 2, 3]),
            // A line past 16 MiB, never ended.
            "x".repeat(LaneWire.maxFrame + 1024)
          ]
          for (const bytes of hostile) {
            const peer = yield* rawPeer(lane)
            peer.socket.write(bytes)
            yield* closedByRunner(peer)
            assert.deepStrictEqual(peer.lines, [], `answered ${bytes.slice(0, 40)}`)
          }

          // The runner still serves, over the lane.
          const echoed = yield* registry.callTool("l3_echo", { message: "still here" })
          assert.deepStrictEqual(echoed.content, [{ type: "text", text: "still here" }])
        })
    )

    it.effect(
      "a call whose lane is lost mid-call (its runner SIGKILLed) is re-delivered and answered by the new owner",
      () =>
        Effect.gen(function* () {
          const { registry, lanes, dir, runners } = yield* Scenario
          const board = yield* registry.snapshot
          const target = board.find((s) => s.name === "l2")
          const victim = runners.get(runnerOf(target?.pid) ?? "")
          assert.isDefined(victim)
          const before = lanes.stats()
          const call = yield* registry
            .callTool("l2_echo", { message: "survives", ms: 1_000 })
            .pipe(Effect.exit, Effect.forkChild({ startImmediately: true }))
          yield* traced(dir, "l2", (lines) => lines.includes("start echo survives"))
          victim?.child.kill("SIGKILL")
          if (victim !== undefined) runners.delete(victim.id)
          const outcome = yield* Fiber.join(call)
          assert.isTrue(Exit.isSuccess(outcome), `the call failed: ${String(outcome)}`)
          if (Exit.isSuccess(outcome))
            assert.deepStrictEqual(outcome.value.content, [{ type: "text", text: "survives" }])
          // Read-only, so run again on the new owner: once per runner.
          const started = yield* traced(
            dir,
            "l2",
            (lines) => lines.filter((l) => l === "start echo survives").length >= 2
          )
          assert.strictEqual(started.filter((l) => l === "start echo survives").length, 2)
          assert.isAtLeast(lanes.stats().redelivered - before.redelivered, 1)
        })
    )
  })
})
