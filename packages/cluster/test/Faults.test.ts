/**
 * The faults a cluster must tell the truth under, on three real runner processes, a real
 * PostgreSQL server and this process as a client (short timers: a 4 s lease):
 * - PostgreSQL restarted (fast shutdown) and crashed (SIGKILL) with calls flowing: nothing that
 *   runs stops or restarts, read-only calls keep flowing, and a call that needs the store fails
 *   fast as not run — truly not run;
 * - a runner paused (SIGSTOP) past its lease with a call sent to it just after: the call runs at
 *   most once, on the new owner or not at all, as its answer says; a call elsewhere meanwhile
 *   does not wait on it; the paused runner, resumed, stops its copy at once and gets nothing back
 *   during its cooldown, even when another runner leaves then (what that one hosted moves at
 *   once to the runner not fenced); and SIGTERM ends it within its shutdown grace and a margin.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { ServerProcess, type State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as CallOutcome from "../src/CallOutcome.ts"
import * as ClusterRunner from "../src/ClusterRunner.ts"
import { journalEntry } from "./helpers.ts"
import * as Postgres from "./Postgres.ts"
import { clientRegistry, leaseSeconds, type RunnerProcess, runnerOf, startRunners, timers } from "./Runners.ts"

const ports = [24491, 24492, 24493] as const
const toolsets = 6
const shutdownGraceSeconds = 5
/** Long enough to see that a runner back from a pause gets nothing back during it. */
const cooldownSeconds = 8
const cooldown = ["--rebalance-cooldown", `${cooldownSeconds}s`]
const clientTimers = { ...timers, rebalanceCooldown: Duration.seconds(cooldownSeconds) }

/**
 * Waits until the placement is final, so that no test takes a move for a fault's doing. Runners
 * that joined after the first had published its assignments get toolsets once the cooldown is
 * over, all at about the same time: final once every runner hosts a toolset and nothing changed
 * for 2 s, or (the toolsets' shards may all hash to fewer runners) nothing changed for longer
 * than the cooldown.
 */
const settled = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    let shown = ""
    let since = Date.now()
    for (;;) {
      const board = yield* registry.snapshot
      const now = board.map((s) => `${s.name}:${s.state}:${s.pid}`).join(" ")
      if (now !== shown) {
        shown = now
        since = Date.now()
      }
      const still = Date.now() - since
      const ready = board.length === toolsets && board.every((s) => s.state === "Ready")
      const spread = new Set(board.map((s) => runnerOf(s.pid))).size === ports.length
      if (ready && (spread ? still >= 2000 : still > (cooldownSeconds + 1) * 1000)) return
      yield* Effect.sleep("100 millis")
    }
  })

class Scenario extends Context.Service<
  Scenario,
  {
    readonly registry: ToolsetRegistry.Registry
    readonly journals: string
    readonly runners: Map<string, RunnerProcess>
  }
>()("test/Faults") {}

const scenario = Layer.effect(
  Scenario,
  Effect.gen(function* () {
    const { url } = yield* Postgres.Postgres
    const runners = yield* startRunners(url, ports, cooldown)
    const journals = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-faults-"))
    const entries = Array.from({ length: toolsets }, (_, i) =>
      journalEntry(`t${i}`, { env: { JOURNAL_FILE: NodePath.join(journals, `t${i}`) } })
    )
    const registry = yield* clientRegistry(url, entries, clientTimers)
    yield* registry.start
    yield* settled(registry).pipe(Effect.timeout(`${cooldownSeconds + leaseSeconds + 30} seconds`))
    return { registry, journals, runners }
  })
).pipe(Layer.provideMerge(Postgres.layer))

const journal = (journals: string, toolset: string): ReadonlyArray<string> => {
  const file = NodePath.join(journals, toolset)
  return NodeFs.existsSync(file)
    ? NodeFs.readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : []
}

interface Outcome {
  readonly toolset: string
  readonly line: string
  readonly exit: Exit.Exit<unknown, CallOutcome.CallError>
}

/** Calls flowing until `stop` is set: read-only `echo` and journaling `append`, one after the other. */
const traffic = (registry: ToolsetRegistry.Registry, tag: string, stop: { done: boolean }) =>
  Effect.gen(function* () {
    const readOnly: Array<Outcome> = []
    const guarded: Array<Outcome> = []
    for (let i = 0; !stop.done; i++) {
      const toolset = `t${i % toolsets}`
      const line = `${tag}-${i}`
      readOnly.push({
        toolset,
        line,
        exit: yield* Effect.exit(registry.callTool(`${toolset}_echo`, { message: line }))
      })
      guarded.push({ toolset, line, exit: yield* Effect.exit(registry.callTool(`${toolset}_append`, { line })) })
      yield* Effect.sleep("50 millis")
    }
    return { readOnly, guarded }
  })

/** The error of a failed call. */
const errorOf = (exit: Exit.Exit<unknown, CallOutcome.CallError>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined

/** Every answer matches the journal: a call said not run left no line; a success left exactly one. */
const assertTruthful = (journals: string, outcomes: ReadonlyArray<Outcome>) => {
  for (const o of outcomes) {
    const runs = journal(journals, o.toolset).filter((l) => l === o.line).length
    const error = errorOf(o.exit)
    if (Exit.isSuccess(o.exit)) assert.strictEqual(runs, 1, `${o.line} succeeded`)
    else if (error !== undefined && CallOutcome.didNotRun(error)) {
      assert.strictEqual(runs, 0, `${o.line}: ${error._tag}: ${error.message}`)
    } else assert.isAtMost(runs, 1, o.line)
  }
}

const pids = (board: ReadonlyArray<State.StatusSnapshot>) => board.map((s) => [s.name, s.pid, s.restarts])

describe("a cluster under faults", () => {
  layer(scenario, { timeout: 180_000, excludeTestServices: true })((it) => {
    for (const how of ["fast", "kill"] as const) {
      it.effect(
        `PostgreSQL ${how === "fast" ? "restarted" : "SIGKILLed and restarted"} with calls flowing: nothing stops`,
        () =>
          Effect.gen(function* () {
            const { registry, journals } = yield* Scenario
            const pg = yield* Postgres.Postgres
            const before = pids(yield* registry.snapshot)
            const stop = { done: false }
            const flowing = yield* traffic(registry, how, stop).pipe(Effect.forkChild({ startImmediately: true }))
            yield* Effect.sleep("1 second")
            yield* pg.down(how)
            // Down for longer than a lock refresh interval, so every runner meets the outage; the
            // crash for longer than a lease too, so every runner's heartbeat is stale when it is back.
            yield* Effect.sleep(how === "fast" ? "2 seconds" : `${leaseSeconds + 1} seconds`)
            const duringOutage = yield* Effect.sync(() => Date.now())
            yield* pg.up
            // Back for longer than a lease: anything that would restart has done so by now.
            yield* Effect.sleep(`${leaseSeconds + 2} seconds`)
            stop.done = true
            const { readOnly, guarded } = yield* Fiber.join(flowing)

            assert.deepStrictEqual(pids(yield* registry.snapshot), before, "a server was restarted")
            const failedReads = readOnly.filter((o) => Exit.isFailure(o.exit))
            assert.deepStrictEqual(
              failedReads.map((o) => `${o.line}: ${errorOf(o.exit)?.message}`),
              [],
              "read-only calls stopped"
            )
            assertTruthful(journals, guarded)
            // The outage was met: some calls that need the store were refused, as not run.
            assert.isTrue(
              guarded.some((o) => {
                const error = errorOf(o.exit)
                return error !== undefined && CallOutcome.didNotRun(error)
              }),
              `no call was refused while the store was down (${duringOutage})`
            )
            // And it is over: a call that needs the store runs again.
            yield* registry.callTool("t0_append", { line: `${how}-after` })
            assert.include(journal(journals, "t0"), `${how}-after`)
          })
      )
    }

    it.effect(
      "a runner paused past its lease: the call sent to it runs at most once, on the new owner or not at all; resumed, it stops its copy and SIGTERM ends it in time",
      () =>
        Effect.gen(function* () {
          const { registry, journals, runners } = yield* Scenario
          const board = yield* registry.snapshot
          const target = board.find((s) => s.pid !== undefined)
          assert.isDefined(target)
          const name = target?.name ?? ""
          const oldPid = target?.pid ?? 0
          const victimId = runnerOf(oldPid) ?? ""
          const victim = runners.get(victimId)
          assert.isDefined(victim)
          const victimServers = board.filter((s) => runnerOf(s.pid) === victimId).flatMap((s) => (s.pid ? [s.pid] : []))

          victim?.child.kill("SIGSTOP")
          yield* Effect.sleep("200 millis")
          const call = yield* registry
            .callTool(`${name}_append`, { line: "paused" })
            .pipe(Effect.exit, Effect.forkChild({ startImmediately: true }))
          // While it waits to move, a call to a toolset elsewhere does not wait on it: the agent's
          // catalog is listed again (a status moved), and the paused toolset answers that at once.
          const elsewhere = board.find((s) => s.pid !== undefined && runnerOf(s.pid) !== victimId)
          assert.isDefined(elsewhere)
          yield* registry.snapshot.pipe(
            Effect.repeat({
              schedule: Schedule.spaced("50 millis"),
              until: (now) => now.some((s) => s.name === name && s.state !== "Ready")
            }),
            Effect.timeout(`${leaseSeconds + 10} seconds`)
          )
          const asked = Date.now()
          yield* registry.callTool(`${elsewhere?.name}_echo`, { message: "meanwhile" })
          const waited = Date.now() - asked
          yield* Effect.log(`a call elsewhere, while the paused toolset waits to move, answered in ${waited} ms`)
          assert.isBelow(waited, 1000, "a call elsewhere waited on the paused toolset")
          // The toolset moves to a runner that is not paused…
          yield* registry.snapshot.pipe(
            Effect.repeat({
              schedule: Schedule.spaced("100 millis"),
              until: (now) => {
                const moved = now.find((s) => s.name === name)
                return moved?.state === "Ready" && moved.pid !== oldPid && runnerOf(moved.pid) !== victimId
              }
            }),
            Effect.timeout(`${leaseSeconds + 20} seconds`)
          )
          yield* Effect.sleep("2 seconds")
          // …and the paused one, resumed, stops its copy before serving anything from it.
          victim?.child.kill("SIGCONT")
          const resumed = Date.now()
          yield* Effect.sync(() => ServerProcess.isAlive(oldPid)).pipe(
            Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (alive) => !alive }),
            Effect.timeout("5 seconds")
          )
          yield* Effect.log(`the resumed runner stopped its copy ${Date.now() - resumed} ms after SIGCONT`)

          // Placement does not churn: the resumed runner was fenced, so it gets nothing back during
          // the cooldown; what moved stays where it is healthy…
          const movedTo = (yield* registry.snapshot).find((s) => s.name === name)
          const fencedOnly = (until: number, steady: boolean) =>
            Effect.gen(function* () {
              while (Date.now() < until) {
                const now = yield* registry.snapshot
                assert.isFalse(
                  now.some((s) => runnerOf(s.pid) === victimId),
                  `runner ${victimId} got a toolset back ${Date.now() - resumed} ms after it was resumed`
                )
                if (steady)
                  assert.strictEqual(now.find((s) => s.name === name)?.pid, movedTo?.pid, `${name} moved again`)
                yield* Effect.sleep("250 millis")
              }
            })
          yield* fencedOnly(Date.now() + 2000, true)
          // …and when another runner leaves during the cooldown, what it hosted goes to the one
          // runner not fenced, at once, rather than waiting for the fenced one's cooldown to end.
          const leavingId = runnerOf(movedTo?.pid) ?? ""
          const leaving = runners.get(leavingId)
          assert.isDefined(leaving)
          const hosted = (yield* registry.snapshot).filter((s) => runnerOf(s.pid) === leavingId).map((s) => s.name)
          const termed = Date.now()
          leaving?.child.kill("SIGTERM")
          yield* registry.snapshot.pipe(
            Effect.repeat({
              schedule: Schedule.spaced("100 millis"),
              until: (now) =>
                hosted.every((n) => {
                  const s = now.find((x) => x.name === n)
                  return s?.state === "Ready" && ![leavingId, victimId].includes(runnerOf(s.pid) ?? leavingId)
                })
            }),
            Effect.timeout(`${cooldownSeconds} seconds`)
          )
          const movedIn = Date.now() - termed
          yield* Effect.log(`${hosted.join(", ")} moved off a runner SIGTERMed during the cooldown in ${movedIn} ms`)
          assert.isBelow(movedIn, 5000, "what the SIGTERMed runner hosted waited for the fenced runner")
          yield* Effect.promise(() => leaving?.exited ?? Promise.resolve(null))
          runners.delete(leavingId)
          yield* fencedOnly(resumed + cooldownSeconds * 1000 - 1000, false)

          const exit = yield* Fiber.join(call)
          yield* Effect.log(
            `the call sent to the paused runner: ${Exit.isSuccess(exit) ? "ran" : `${errorOf(exit)?._tag}: ${errorOf(exit)?.message}`}`
          )
          const runs = journal(journals, name).filter((l) => l === "paused").length
          assert.isAtMost(runs, 1)
          if (Exit.isSuccess(exit)) {
            assert.strictEqual(runs, 1)
            const ranIn = Number(/in (\d+)/.exec(JSON.stringify(exit.value.content))?.[1])
            assert.notStrictEqual(ranIn, oldPid, "it ran on the paused runner")
          } else {
            const error = errorOf(exit)
            assert.isDefined(error)
            if (error !== undefined && CallOutcome.didNotRun(error)) assert.strictEqual(runs, 0, error.message)
          }

          // SIGTERM ends a runner that was paused past its lease, within its grace and a margin.
          const limit = shutdownGraceSeconds + Duration.toSeconds(ClusterRunner.shutdownMargin) + 3
          const sent = Date.now()
          victim?.child.kill("SIGTERM")
          const code = yield* Effect.promise(() => victim?.exited ?? Promise.resolve(null)).pipe(
            Effect.timeout(`${limit + 10} seconds`)
          )
          const seconds = (Date.now() - sent) / 1000
          runners.delete(victimId)
          yield* Effect.log(`the resumed runner exited ${seconds.toFixed(1)} s after SIGTERM (code ${code})`)
          assert.isBelow(seconds, limit)
          assert.deepStrictEqual(victimServers.filter(ServerProcess.isAlive), [])
        })
    )
  })
})
