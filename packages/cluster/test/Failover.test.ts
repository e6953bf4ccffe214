/**
 * Two real runner processes (`toolvisor runner`), a real PostgreSQL server and this process as a
 * client, on 127.0.0.1, with short timers (a 4 s lease). Ten journal servers are spread over the
 * runners; half of them ignore stdin EOF and SIGTERM, as some real servers do. The scenario runs
 * in order: spread, SIGKILL a runner with a call in flight, bring it back, SIGTERM the other.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { ServerProcess, type State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as CallOutcome from "../src/CallOutcome.ts"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as RemoteToolset from "../src/internal/remoteToolset.ts"
import * as ToolsetEntity from "../src/internal/toolsetEntity.ts"
import { journalEntry } from "./helpers.ts"
import * as Postgres from "./Postgres.ts"
import {
  clientRegistry,
  leaseSeconds,
  type RunnerProcess,
  runnerOf,
  startRunner,
  startRunners,
  stopRunners,
  timers
} from "./Runners.ts"

class Scenario extends Context.Service<
  Scenario,
  {
    readonly postgres: string
    readonly registry: ToolsetRegistry.Registry
    readonly journals: string
    readonly runners: Map<string, RunnerProcess>
  }
>()("test/Scenario") {}

const ports = [24461, 24462] as const

const scenario = Layer.effect(
  Scenario,
  Effect.gen(function* () {
    const { url } = yield* Postgres.Postgres
    const runners = yield* startRunners(url, ports)
    const journals = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-failover-"))
    const toolsets = Array.from({ length: 10 }, (_, i) =>
      journalEntry(`t${i}`, {
        env: { JOURNAL_FILE: NodePath.join(journals, `t${i}`), ...(i % 2 === 1 ? { IGNORE_EOF: "1" } : {}) }
      })
    )
    const registry = yield* clientRegistry(url, toolsets)
    return { postgres: url, registry, journals, runners }
  })
).pipe(Layer.provide(Postgres.layer))

/** Polls the board until `done` holds, at most `seconds`; returns the board and the time it took. */
const until = (
  registry: ToolsetRegistry.Registry,
  seconds: number,
  done: (board: ReadonlyArray<State.StatusSnapshot>) => boolean
) =>
  Effect.gen(function* () {
    const started = Date.now()
    const board = yield* registry.snapshot.pipe(
      Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: done }),
      Effect.timeoutOrElse({
        duration: `${seconds} seconds`,
        orElse: () =>
          Effect.flatMap(registry.snapshot, (b) =>
            Effect.die(new Error(`not within ${seconds}s: ${JSON.stringify(b.map((s) => [s.name, s.state, s.pid]))}`))
          )
      })
    )
    return { board, seconds: (Date.now() - started) / 1000 }
  })

const allReadyOn = (runners: ReadonlyArray<string>) => (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.length === 10 && board.every((s) => s.state === "Ready" && runners.includes(runnerOf(s.pid) ?? ""))

const gone = (pids: ReadonlyArray<number>, seconds: number) =>
  Effect.sync(() => pids.filter(ServerProcess.isAlive)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (left) => left.length === 0 }),
    Effect.timeoutOrElse({
      duration: `${seconds} seconds`,
      orElse: () => Effect.sync(() => pids.filter(ServerProcess.isAlive))
    })
  )

describe("a cluster of two runner processes over PostgreSQL", () => {
  layer(scenario, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("toolsets are spread over both runners and serve calls", () =>
      Effect.gen(function* () {
        const { registry, runners } = yield* Scenario
        yield* registry.start
        // A runner that joined a moment after the other may sit out its cooldown (a second here) first.
        const spread = (board: ReadonlyArray<State.StatusSnapshot>) =>
          allReadyOn([...runners.keys()])(board) && new Set(board.map((s) => runnerOf(s.pid))).size === runners.size
        const { board } = yield* until(registry, 30, spread)
        const placed = new Set(board.map((s) => runnerOf(s.pid)))
        assert.deepStrictEqual([...placed].sort(), [...runners.keys()].sort())
        const echoed = yield* registry.callTool("t3_echo", { message: "hello" })
        assert.deepStrictEqual(echoed.content, [{ type: "text", text: "hello" }])
      })
    )

    it.effect(
      "SIGKILL of a runner: its toolsets are Ready on the other within the lease, none left behind, the call in flight not run twice",
      () =>
        Effect.gen(function* () {
          const { registry, runners, journals } = yield* Scenario
          const before = yield* registry.snapshot
          // The runner on the second port: the next test brings it back there.
          const victimId = `127.0.0.1:${ports[1]}`
          const victim = runners.get(victimId)
          assert.isDefined(victim)
          const survivor = [...runners.keys()].find((id) => id !== victimId) ?? ""
          const moved = before.filter((s) => runnerOf(s.pid) === victimId)
          assert.isAbove(moved.length, 0)
          const target = moved[0]?.name ?? ""
          const journal = NodePath.join(journals, target)

          const inFlight = yield* registry
            .callTool(`${target}_append`, { line: "once", ms: 3000 })
            .pipe(Effect.exit, Effect.forkChild({ startImmediately: true }))
          yield* Effect.sync(() => NodeFs.existsSync(journal)).pipe(
            Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (written) => written })
          )
          victim?.child.kill("SIGKILL")
          runners.delete(victimId)

          const { seconds } = yield* until(registry, leaseSeconds + 20, allReadyOn([survivor]))
          yield* Effect.log(`failover after SIGKILL: ${seconds.toFixed(2)} s for ${moved.length} toolset(s)`)
          assert.isBelow(seconds, leaseSeconds + 8)

          const outcome = yield* Fiber.join(inFlight)
          assert.isTrue(Exit.isFailure(outcome))
          if (Exit.isFailure(outcome)) {
            const reason = outcome.cause.reasons[0]
            assert.strictEqual(reason?._tag === "Fail" ? reason.error._tag : reason?._tag, "CallOutcomeUnknown")
          }
          assert.strictEqual(NodeFs.readFileSync(journal, "utf8"), "once\n")

          const left = yield* gone(
            moved.flatMap((s) => (s.pid === undefined ? [] : [s.pid])),
            10
          )
          assert.deepStrictEqual(left, [])
        })
    )

    it.effect("SIGTERM of a runner moves its toolsets to the one that came back; the status watch follows them", () =>
      Effect.gen(function* () {
        const { registry, runners, postgres, journals } = yield* Scenario
        const comeback = yield* startRunner(postgres, ports[1])
        runners.set(comeback.id, comeback)
        // Shards flow back to the new runner; wait until it hosts some and everything is Ready.
        yield* until(
          registry,
          30,
          (board) => allReadyOn([...runners.keys()])(board) && board.some((s) => runnerOf(s.pid) === comeback.id)
        )
        const leaving = [...runners.values()].find((r) => r.id !== comeback.id)
        assert.isDefined(leaving)
        const boards: Array<ReadonlyArray<State.StatusSnapshot>> = []
        const watch = yield* registry.status.pipe(
          Stream.runForEach((board) => Effect.sync(() => boards.push(board))),
          Effect.forkChild({ startImmediately: true })
        )
        const before = yield* registry.snapshot
        const moving = before.filter((s) => runnerOf(s.pid) === leaving?.id)
        // A call still running when the grace (5 s) is over is cut short: it ran, so it must not
        // come back as "not started" (it did, before calls were classified). It would take a minute,
        // so even a loaded machine's slow shutdown cannot let it finish.
        const target = moving[0]?.name ?? ""
        const journal = NodePath.join(journals, target)
        const journaled = () => (NodeFs.existsSync(journal) ? NodeFs.readFileSync(journal, "utf8") : "")
        const lines = journaled()
        const inFlight = yield* registry
          .callTool(`${target}_append`, { line: "cut by SIGTERM", ms: 60_000 })
          .pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
        yield* Effect.sync(journaled).pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (now) => now !== lines })
        )

        leaving?.child.kill("SIGTERM")
        const code = yield* Effect.promise(() => leaving?.exited ?? Promise.resolve(null))
        runners.delete(leaving?.id ?? "")
        assert.strictEqual(code, 0)
        // A graceful stop closes every server it ran, stubborn ones included.
        assert.deepStrictEqual(
          yield* gone(
            moving.flatMap((s) => (s.pid === undefined ? [] : [s.pid])),
            5
          ),
          []
        )

        const cut = yield* Fiber.join(inFlight)
        assert.strictEqual(CallOutcome.outcome(cut), "MayHaveRun", `${cut._tag}: ${cut.message}`)
        assert.strictEqual(journaled(), `${lines}cut by SIGTERM\n`)

        const { seconds } = yield* until(registry, 30, allReadyOn([comeback.id]))
        yield* Effect.log(`all Ready on the remaining runner ${seconds.toFixed(2)} s after the SIGTERMed one exited`)
        yield* Fiber.interrupt(watch)
        const last = boards.at(-1) ?? []
        assert.isTrue(allReadyOn([comeback.id])(last))
        // The watch saw the move as it happened, from one runner to the other, not only its end.
        const seen = boards.flatMap((b) => b.filter((s) => moving.some((m) => m.name === s.name)))
        assert.isTrue(seen.some((s) => s.state === "Restarting" || s.state === "Starting"))
        const relocations = seen.flatMap((s) => (s.lastError?.tag === "Relocating" ? [s.lastError.message] : []))
        assert.isTrue(
          relocations.some((m) => m.includes(`moving from runner ${leaving?.id} to runner ${comeback.id}`)),
          relocations.join("; ")
        )
      })
    )

    it.effect("with no runner left, requests fail within their deadlines with typed errors", () =>
      Effect.gen(function* () {
        const { postgres, runners } = yield* Scenario
        yield* stopRunners(runners.values())
        runners.clear()
        const context = yield* Layer.build(ClusterClient.layer({ postgres, timers }))
        const client = yield* ToolsetEntity.ToolsetEntity.client.pipe(Effect.provideContext(context))
        const entry = journalEntry("t0", { lifecycle: { call_timeout: "2s", startup_timeout: "1s" } })
        const { toolset } = yield* RemoteToolset.make(client, entry, { requestTimeout: "1 second" })
        const started = Date.now()
        const call = yield* Effect.flip(toolset.callTool("echo", { message: "anyone?" }))
        const start = yield* Effect.flip(toolset.start)
        // A toolset not seen serving lists nothing, at once, as a local one that is not ready does.
        const listing = yield* toolset.tools
        const seconds = (Date.now() - started) / 1000
        // Nobody can tell whether a call that was never answered reached a server.
        assert.strictEqual(call._tag, "CallOutcomeUnknown")
        assert.include(call.message, "no answer from the cluster")
        assert.strictEqual(start._tag, "TransportError")
        assert.isFalse(listing.complete)
        // 3 s for the call (call_timeout + request timeout), 1 s for the start request, 2 s for the
        // start (startup_timeout + request timeout), and some slack.
        assert.isBelow(seconds, 8)
      })
    )
  })
})
