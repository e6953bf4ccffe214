import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as Deadline from "../src/Deadline.ts"
import * as LifecycleError from "../src/LifecycleError.ts"
import type * as Policy from "../src/Policy.ts"
import type * as Session from "../src/Session.ts"
import * as Supervisor from "../src/Supervisor.ts"
import {
  auth,
  crash,
  elapse,
  fail,
  inState,
  ok,
  policy,
  refused,
  type Step,
  scripted,
  scriptedWith,
  until
} from "./fakes.ts"

const make = (steps: ReadonlyArray<Step>, p: Policy.Policy = policy(), options: { selfBounded?: boolean } = {}) => {
  const script = scriptedWith(options, ...steps)
  return Effect.map(Supervisor.make({ name: "fake", kind: "test", connector: script.connector, policy: p }), (s) => ({
    supervisor: s,
    script
  }))
}

/** Collects the next `n` transitions as "From→To" strings; subscribe before acting. */
const record = <A>(supervisor: Supervisor.Supervisor<A>, n: number) =>
  supervisor.events.pipe(
    Stream.take(n),
    Stream.map((t) => `${t.from}→${t.snapshot.state}`),
    Stream.runCollect,
    Effect.forkChild({ startImmediately: true })
  )

const crashSession = (session: { readonly ended: Deferred.Deferred<void, LifecycleError.LifecycleError> }) =>
  Deferred.fail(session.ended, crash())

describe("Supervisor", () => {
  describe("start", () => {
    it.effect("start goes Stopped → Starting → Ready and reports the session's pid and tools", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([])
        const seen = yield* record(supervisor, 2)
        yield* supervisor.start
        assert.deepStrictEqual(yield* Fiber.join(seen), ["Stopped→Starting", "Starting→Ready"])
        const state = yield* supervisor.state
        assert.strictEqual(state.state, "Ready")
        assert.strictEqual(state.pid, 1001)
        assert.strictEqual(state.toolCount, 3)
      })
    )

    it.effect("the snapshot carries the server's identity and instructions, and follows its tool count", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const ready = yield* supervisor.state
        assert.deepStrictEqual(ready.server, { name: "fake-server", version: "1.2.3" })
        assert.strictEqual(ready.instructions, "Use the fake tools wisely.")
        yield* Queue.offer(script.last().toolCounts, 5)
        const changed = yield* until(supervisor, (s) => s.toolCount === 5)
        assert.strictEqual(changed.state, "Ready")
        assert.isAbove(changed.toolsVersion, ready.toolsVersion)
        yield* Queue.offer(script.last().toolCounts, 5)
        yield* until(supervisor, (s) => s.toolsVersion > changed.toolsVersion)
        yield* supervisor.stop
        const stopped = yield* supervisor.state
        assert.isUndefined(stopped.toolCount)
        assert.isUndefined(stopped.server)
      })
    )

    it.effect("start is idempotent: two starts, one connect", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* Effect.all([supervisor.start, supervisor.start], { concurrency: "unbounded" })
        yield* supervisor.start
        assert.strictEqual(script.connects(), 1)
      })
    )

    it.effect("a failed first start of a required toolset returns the typed error and leaves it Stopped", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([fail(refused())], policy({ required: true }))
        const error = yield* Effect.flip(supervisor.start)
        assert.strictEqual(error._tag, "ServerUnavailable")
        const state = yield* supervisor.state
        assert.strictEqual(state.state, "Stopped")
        assert.strictEqual(state.lastError?.tag, "ServerUnavailable")
        yield* supervisor.start
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("a start within the startup timeout succeeds", () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { supervisor } = yield* make([{ _tag: "gate", gate }], policy({ startup_timeout: "10s" }))
        const started = yield* Effect.forkChild(supervisor.start, { startImmediately: true })
        yield* TestClock.adjust("9 seconds")
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(started)
        assert.strictEqual((yield* supervisor.state).state, "Ready")
      })
    )
  })

  describe("startup timeout", () => {
    const hanging = Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const made = yield* make([{ _tag: "gate", gate }], policy({ startup_timeout: "5s", required: true }))
      return { ...made, gate }
    })

    it.effect("a connect that hangs past startup_timeout fails with InitTimeout and leaves Stopped", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* hanging
        const started = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        const error = yield* Fiber.join(started)
        assert.strictEqual(error._tag, "InitTimeout")
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
        assert.strictEqual(script.connects(), 1)
      })
    )

    it.effect("a later start adopts the late connect instead of opening a second one", () =>
      Effect.gen(function* () {
        const { supervisor, script, gate } = yield* hanging
        const first = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        assert.strictEqual((yield* Fiber.join(first))._tag, "InitTimeout")
        const second = yield* Effect.forkChild(supervisor.start, { startImmediately: true })
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(second)
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 1)
      })
    )

    it.effect("a late connect that completes while Stopped is adopted at once by the next start", () =>
      Effect.gen(function* () {
        const { supervisor, script, gate } = yield* hanging
        const first = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(first)
        yield* Deferred.succeed(gate, undefined)
        yield* Effect.yieldNow
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
        yield* supervisor.start
        assert.strictEqual(script.connects(), 1)
        assert.isFalse(script.last().closed)
      })
    )

    it.effect("a parked session's process shows in the snapshot while Stopped, and goes with stop", () =>
      Effect.gen(function* () {
        const { supervisor, script, gate } = yield* hanging
        const first = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(first)
        yield* Deferred.succeed(gate, undefined)
        const parked = yield* until(supervisor, (s) => s.pid !== undefined)
        assert.strictEqual(parked.state, "Stopped")
        assert.strictEqual(parked.pid, 1001)
        yield* supervisor.stop
        assert.isUndefined((yield* supervisor.state).pid)
        assert.isTrue(script.last().closed)
      })
    )

    it.effect("a parked session that ends is let go: the next start connects anew instead of adopting it", () =>
      Effect.gen(function* () {
        const { supervisor, script, gate } = yield* hanging
        const first = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(first)
        yield* Deferred.succeed(gate, undefined)
        yield* until(supervisor, (s) => s.pid === 1001)
        yield* Deferred.fail(script.last().ended, crash("died while parked"))
        yield* until(supervisor, (s) => s.pid === undefined)
        yield* supervisor.start
        assert.isTrue(script.sessions[0]!.closed)
        const ready = yield* supervisor.state
        assert.strictEqual(ready.state, "Ready")
        assert.strictEqual(ready.pid, 1002)
        assert.strictEqual(script.connects(), 2)
        assert.strictEqual(yield* supervisor.use((s) => Effect.succeed(s.id)), 2)
      })
    )

    it.effect(
      "a retried start reports InitTimeout at the deadline, while the stuck connect is killed in the background",
      () =>
        Effect.gen(function* () {
          const closed = yield* Deferred.make<void>()
          const { supervisor, script } = yield* make(
            [{ _tag: "stuck", close: "3 seconds", closed }],
            policy({ startup_timeout: "5s" })
          )
          const started = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
          yield* TestClock.adjust("5 seconds")
          const error = yield* Fiber.join(started)
          assert.strictEqual(error._tag, "InitTimeout")
          const status = yield* supervisor.state
          assert.strictEqual(status.state, "Restarting")
          assert.strictEqual(status.lastError?.tag, "InitTimeout")
          assert.isFalse(yield* Deferred.isDone(closed))
          // The next connect waits for the close, so two servers of one toolset never overlap.
          yield* TestClock.adjust("1 second")
          assert.strictEqual(script.sessions.length, 0)
          const stopped = yield* Effect.forkChild(supervisor.stop, { startImmediately: true })
          yield* TestClock.adjust("2 seconds")
          yield* Fiber.join(stopped)
          assert.isTrue(yield* Deferred.isDone(closed))
        })
    )

    it.effect("stop closes a late connect", () =>
      Effect.gen(function* () {
        const { supervisor, script, gate } = yield* hanging
        const first = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(first)
        yield* Deferred.succeed(gate, undefined)
        yield* Effect.yieldNow
        yield* supervisor.stop
        assert.isTrue(script.last().closed)
        yield* supervisor.start
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("stop while a connect is in flight interrupts it; nothing is left open", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* hanging
        const first = yield* Effect.forkChild(Effect.exit(supervisor.start), { startImmediately: true })
        yield* Effect.yieldNow
        yield* supervisor.stop
        const exit = yield* Fiber.join(first)
        assert.isTrue(Exit.isFailure(exit))
        assert.strictEqual(script.sessions.length, 0)
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
      })
    )
  })

  describe("first-start retries (optional toolsets)", () => {
    it.effect("a failed first start returns the error at once, then retries by the policy until Ready", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([fail(refused()), fail(refused())])
        const error = yield* Effect.flip(supervisor.start)
        assert.strictEqual(error._tag, "ServerUnavailable")
        const waiting = yield* inState(supervisor, "Restarting")
        assert.strictEqual(waiting.lastError?.tag, "ServerUnavailable")
        yield* elapse(1)
        assert.strictEqual(script.connects(), 2)
        yield* elapse(2)
        const ready = yield* inState(supervisor, "Ready")
        assert.strictEqual(script.connects(), 3)
        assert.strictEqual(ready.restarts, 2)
      })
    )

    it.effect("they end Failed when the budget is spent", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make(
          Array.from({ length: 10 }, () => fail(refused())),
          policy({ max_restarts: 2 })
        )
        yield* Effect.flip(supervisor.start)
        yield* elapse(10)
        const failed = yield* inState(supervisor, "Failed")
        assert.strictEqual(script.connects(), 3)
        assert.strictEqual(failed.lastError?.tag, "ServerUnavailable")
      })
    )

    it.effect("stop during the first-start backoff ends the retries: the server coming back changes nothing", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([fail(refused())])
        yield* Effect.flip(supervisor.start)
        yield* inState(supervisor, "Restarting")
        yield* supervisor.stop
        yield* elapse(60)
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
        assert.strictEqual(script.connects(), 1)
      })
    )

    it.effect("a call made while the first start is in flight waits for it", () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { supervisor } = yield* make([{ _tag: "gate", gate }])
        yield* Effect.forkChild(supervisor.start, { startImmediately: true })
        yield* inState(supervisor, "Starting")
        const call = yield* Effect.forkChild(
          supervisor.use((s) => Effect.succeed(s.id)),
          { startImmediately: true }
        )
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual(yield* Fiber.join(call), 1)
      })
    )
  })

  describe("requests that see the session die", () => {
    it.effect("lost without evidence waits for the session's own end and returns the crash with its exit", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const session = script.last()
        const seen = yield* Effect.forkChild(supervisor.lost(session), { startImmediately: true })
        yield* Deferred.fail(session.ended, crash("killed by SIGKILL"))
        const error = yield* Fiber.join(seen)
        assert.strictEqual(error._tag, "ServerCrashed")
        assert.include(error.message, "killed by SIGKILL")
        assert.strictEqual(error._tag === "ServerCrashed" ? error.exitCode : undefined, 1)
        const state = yield* supervisor.state
        assert.strictEqual(state.state, "Restarting")
        assert.strictEqual(state.lastError?.tag, "ServerCrashed")
      })
    )

    it.effect("lost with evidence ends the session once, as a crash counted against the budget", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const session = script.last()
        const seen = yield* record(supervisor, 1)
        const evidence = new LifecycleError.SessionMissing({ toolset: "fake", message: "fake: session not found" })
        const [a, b] = yield* Effect.all([supervisor.lost(session, evidence), supervisor.lost(session, evidence)], {
          concurrency: "unbounded"
        })
        assert.strictEqual(a._tag, "ServerCrashed")
        assert.strictEqual(b._tag, "ServerCrashed")
        assert.deepStrictEqual(yield* Fiber.join(seen), ["Ready→Restarting"])
        const state = yield* supervisor.state
        assert.strictEqual(state.lastError?.tag, "SessionMissing")
        assert.strictEqual(state.attempt, 0)
        yield* elapse(1)
        assert.strictEqual((yield* inState(supervisor, "Ready")).restarts, 1)
      })
    )

    it.effect("lost about a session that already ended returns how it ended, and changes nothing", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const session = script.last()
        yield* Deferred.fail(session.ended, crash("gone"))
        yield* inState(supervisor, "Restarting")
        yield* elapse(1)
        yield* inState(supervisor, "Ready")
        const error = yield* supervisor.lost(session, crash("late"))
        assert.include(error.message, "gone")
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("a crash loop reaches Failed after the same number of starts with and without calls", () =>
      Effect.gen(function* () {
        const starts = (withCalls: boolean) =>
          Effect.scoped(
            Effect.gen(function* () {
              const { supervisor, script } = yield* make([], policy({ max_restarts: 3 }))
              yield* supervisor.start
              const transitions = yield* supervisor.events.pipe(
                Stream.takeUntil((t) => t.snapshot.state === "Failed"),
                Stream.runCollect,
                Effect.forkChild({ startImmediately: true })
              )
              for (let i = 0; i < 10 && (yield* supervisor.state).state !== "Failed"; i++) {
                yield* inState(supervisor, "Ready")
                const session = script.last()
                if (withCalls) {
                  // A call notices the death first and reports it; the exit arrives after.
                  yield* Effect.forkChild(supervisor.lost(session), { startImmediately: true })
                }
                yield* Deferred.fail(session.ended, crash(`exit ${i}`))
                yield* until(supervisor, (s) => s.state === "Failed" || s.state === "Restarting")
                yield* elapse(16)
              }
              const restarting = (yield* Fiber.join(transitions)).filter((t) => t.snapshot.state === "Restarting")
              return {
                connects: script.connects(),
                errors: restarting.map((t) => t.snapshot.lastError?.tag)
              }
            })
          )
        const quiet = yield* starts(false)
        const busy = yield* starts(true)
        assert.strictEqual(quiet.connects, 4)
        assert.deepStrictEqual(busy, quiet)
        assert.isTrue(busy.errors.every((tag) => tag === "ServerCrashed"))
      })
    )
  })

  describe("restart policy", () => {
    it.effect("a crash goes to Restarting and reconnects after `initial`, not before", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const seen = yield* record(supervisor, 2)
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        yield* TestClock.adjust("999 millis")
        assert.strictEqual(script.connects(), 1)
        yield* TestClock.adjust("1 millis")
        yield* inState(supervisor, "Ready")
        assert.deepStrictEqual(yield* Fiber.join(seen), ["Ready→Restarting", "Restarting→Ready"])
        assert.strictEqual(script.connects(), 2)
        assert.isTrue(script.sessions[0]!.closed)
        const state = yield* supervisor.state
        assert.strictEqual(state.restarts, 1)
        assert.strictEqual(state.attempt, 1)
      })
    )

    it.effect("Ready after a reconnect clears the last error, and stop clears it too", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        yield* crashSession(script.last())
        const restarting = yield* inState(supervisor, "Restarting")
        assert.strictEqual(restarting.lastError?.tag, "ServerCrashed")
        yield* TestClock.adjust("1 second")
        const ready = yield* inState(supervisor, "Ready")
        assert.isUndefined(ready.lastError)
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        yield* supervisor.stop
        assert.isUndefined((yield* supervisor.state).lastError)
      })
    )

    it.effect("reconnects follow the policy's delays: 1s, 2s, 4s", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([ok, fail(refused()), fail(refused()), ok])
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        const timeline: Array<number> = []
        for (const step of [1000, 2000, 4000]) {
          yield* TestClock.adjust(step - 1)
          timeline.push(script.connects())
          yield* TestClock.adjust(1)
          yield* Effect.yieldNow
          timeline.push(script.connects())
        }
        assert.deepStrictEqual(timeline, [1, 2, 2, 3, 3, 4])
        yield* inState(supervisor, "Ready")
      })
    )

    it.effect("the budget exhausted ends Failed with the last error", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make(
          [ok, fail(refused()), fail(refused()), fail(crash("third"))],
          policy({ max_restarts: 3 })
        )
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* elapse(60)
        const failed = yield* inState(supervisor, "Failed")
        assert.strictEqual(script.connects(), 4)
        assert.deepStrictEqual(failed.lastError, { tag: "ServerCrashed", message: "third" })
        assert.strictEqual(failed.restarts, 3)
      })
    )

    it.effect("each failed reconnect is a transition, Restarting → Restarting with its failure, until Failed", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make(
          [ok, fail(refused()), fail(refused()), fail(crash("third"))],
          policy({ max_restarts: 3 })
        )
        yield* supervisor.start
        const seen = yield* supervisor.events.pipe(
          Stream.take(4),
          Stream.map((t) => ({
            line: `${t.from}→${t.snapshot.state} ${t.snapshot.restarts} ${t.snapshot.lastError?.message}`,
            since: t.snapshot.since
          })),
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        yield* crashSession(script.last())
        yield* elapse(60)
        // Before, `events` said nothing between the first Restarting and Failed.
        const refusedMessage = refused().message
        const transitions = yield* Fiber.join(seen)
        // Each stamped with its own time, as the backoff spaced them (a repeat reused the first's).
        const times = transitions.map((t) => t.since)
        assert.isTrue(
          times.every((at, i) => i === 0 || at > (times[i - 1] ?? at)),
          String(times)
        )
        assert.deepStrictEqual(
          transitions.map((t) => t.line),
          [
            `Ready→Restarting 0 ${crash().message}`,
            `Restarting→Restarting 1 ${refusedMessage}`,
            `Restarting→Restarting 2 ${refusedMessage}`,
            "Restarting→Failed 3 third"
          ]
        )
      })
    )

    it.effect("a server that crashes right after every start backs off and ends Failed (flap guard)", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ max_restarts: 3 }))
        yield* supervisor.start
        for (const backoff of ["1 second", "2 seconds", "4 seconds"] as const) {
          yield* crashSession(script.last())
          yield* inState(supervisor, "Restarting")
          yield* TestClock.adjust(backoff)
          yield* inState(supervisor, "Ready")
        }
        yield* crashSession(script.last())
        const failed = yield* inState(supervisor, "Failed")
        assert.strictEqual(script.connects(), 4)
        assert.strictEqual(failed.restarts, 3)
      })
    )

    it.effect("the budget and the backoff step reset once Ready has lasted reset_after", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ max_restarts: 1, backoff: { reset_after: "30s" } }))
        yield* supervisor.start
        for (let i = 0; i < 3; i++) {
          yield* crashSession(script.last())
          yield* inState(supervisor, "Restarting")
          yield* TestClock.adjust("1 second")
          const ready = yield* inState(supervisor, "Ready")
          assert.strictEqual(ready.attempt, 1)
          yield* TestClock.adjust("30 seconds")
          yield* until(supervisor, (s) => s.attempt === 0)
        }
        assert.strictEqual(script.connects(), 4)
        assert.strictEqual((yield* supervisor.state).restarts, 3)
      })
    )

    it.effect("restart: never — a crash goes to Failed with no reconnect", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ restart: "never" }))
        yield* supervisor.start
        yield* crashSession(script.last())
        const failed = yield* inState(supervisor, "Failed")
        yield* elapse(60)
        assert.strictEqual(script.connects(), 1)
        assert.strictEqual(failed.lastError?.tag, "ServerCrashed")
      })
    )

    it.effect("on_failure + clean close → Failed, no reconnect, the clean close its lastError", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        yield* Deferred.succeed(script.last().ended, undefined)
        const failed = yield* inState(supervisor, "Failed")
        yield* elapse(60)
        assert.strictEqual(script.connects(), 1)
        assert.strictEqual(failed.lastError?.tag, "ServerCrashed")
        assert.include(failed.lastError?.message, "a clean close")
      })
    )

    it.effect("always + clean close → reconnect", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ restart: "always" }))
        yield* supervisor.start
        yield* Deferred.succeed(script.last().ended, undefined)
        yield* inState(supervisor, "Restarting")
        yield* TestClock.adjust("1 second")
        yield* inState(supervisor, "Ready")
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("always still honours the budget of failed reconnects", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make(
          [ok, fail(refused()), fail(refused())],
          policy({ restart: "always", max_restarts: 2 })
        )
        yield* supervisor.start
        yield* Deferred.succeed(script.last().ended, undefined)
        yield* elapse(60)
        yield* inState(supervisor, "Failed")
        assert.strictEqual(script.connects(), 3)
      })
    )

    it.effect("a permanent error on the session goes to Failed at once without burning the budget", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        yield* Deferred.fail(script.last().ended, auth())
        const failed = yield* inState(supervisor, "Failed")
        yield* elapse(60)
        assert.strictEqual(script.connects(), 1)
        assert.strictEqual(failed.lastError?.tag, "AuthRequired")
        assert.strictEqual(failed.attempt, 0)
      })
    )

    it.effect("a permanent error on a reconnect goes to Failed after exactly two connects", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([ok, fail(auth())])
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* elapse(60)
        const failed = yield* inState(supervisor, "Failed")
        assert.strictEqual(script.connects(), 2)
        assert.strictEqual(failed.lastError?.tag, "AuthRequired")
      })
    )

    it.effect("a reconnect that hangs past startup_timeout counts as a failed attempt", () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { supervisor, script } = yield* make([ok, { _tag: "gate", gate }], policy({ startup_timeout: "5s" }))
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* TestClock.adjust("1 second")
        yield* TestClock.adjust("5 seconds")
        const restarting = yield* until(supervisor, (s) => s.lastError?.tag === "InitTimeout")
        assert.strictEqual(restarting.state, "Restarting")
        yield* TestClock.adjust("2 seconds")
        yield* inState(supervisor, "Ready")
        assert.strictEqual(script.connects(), 3)
      })
    )
  })

  describe("restart (forced)", () => {
    it.effect("on a Ready toolset it reconnects at once and resolves when Ready", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const seen = yield* record(supervisor, 2)
        yield* supervisor.restart
        assert.deepStrictEqual(yield* Fiber.join(seen), ["Ready→Restarting", "Restarting→Ready"])
        assert.strictEqual(script.connects(), 2)
        assert.isTrue(script.sessions[0]!.closed)
      })
    )

    it.effect("it does not count against the crash budget: the next crash is the first of its episode", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ max_restarts: 1 }))
        yield* supervisor.start
        yield* supervisor.restart
        const restarted = yield* supervisor.state
        assert.deepStrictEqual([restarted.state, restarted.restarts, restarted.attempt], ["Ready", 1, 0])
        yield* crashSession(script.last())
        const crashed = yield* inState(supervisor, "Restarting")
        assert.strictEqual(crashed.attempt, 0)
        yield* elapse(1)
        const ready = yield* inState(supervisor, "Ready")
        assert.deepStrictEqual([ready.restarts, ready.attempt], [2, 1])
        assert.strictEqual(script.connects(), 3)
      })
    )

    it.effect("it bypasses the policy: restart works under restart: never", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ restart: "never" }))
        yield* supervisor.start
        yield* supervisor.restart
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("on Stopped or Failed it starts afresh", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ restart: "never" }))
        yield* supervisor.restart
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        yield* crashSession(script.last())
        yield* inState(supervisor, "Failed")
        yield* supervisor.restart
        const state = yield* supervisor.state
        assert.strictEqual(state.state, "Ready")
        assert.strictEqual(state.restarts, 0)
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("a start on a Failed toolset recovers it, and a later restart succeeds", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ restart: "never" }))
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* inState(supervisor, "Failed")
        yield* supervisor.start
        yield* supervisor.restart
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 3)
      })
    )

    it.effect("concurrent restarts share one reconnect", () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { supervisor, script } = yield* make([ok, { _tag: "gate", gate }])
        yield* supervisor.start
        // Each fiber runs until it waits for its reply, so all three are asked before the reconnect ends.
        const restarts = yield* Effect.forEach([1, 2, 3], () =>
          Effect.forkChild(supervisor.restart, { startImmediately: true })
        )
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.joinAll(restarts)
        assert.strictEqual(script.connects(), 2)
        assert.strictEqual((yield* supervisor.state).state, "Ready")
      })
    )

    it.effect("it cuts a backoff wait short", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        yield* supervisor.restart
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("it resolves promptly with the error when the budget runs out meanwhile", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make(
          [ok, fail(refused()), fail(refused()), fail(refused())],
          policy({ max_restarts: 2 })
        )
        yield* supervisor.start
        const restarted = yield* Effect.forkChild(Effect.flip(supervisor.restart), { startImmediately: true })
        yield* elapse(5)
        const error = yield* Fiber.join(restarted)
        assert.strictEqual(error._tag, "ServerUnavailable")
        assert.strictEqual((yield* supervisor.state).state, "Failed")
      })
    )

    it.effect("stop wakes a waiting restart at once with NotStarted", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([ok, fail(refused())])
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        const waiting = yield* Effect.forkChild(Effect.flip(supervisor.start), { startImmediately: true })
        yield* supervisor.stop
        assert.strictEqual((yield* Fiber.join(waiting))._tag, "NotStarted")
      })
    )
  })

  describe("stop", () => {
    it.effect("stop before start, and twice, is fine", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([])
        yield* supervisor.stop
        yield* supervisor.stop
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
      })
    )

    it.effect("stop closes the session, concurrent stops all return, and start works again", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        yield* Effect.all([supervisor.stop, supervisor.stop, supervisor.stop, supervisor.stop], {
          concurrency: "unbounded"
        })
        assert.isTrue(script.last().closed)
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
        yield* supervisor.start
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.strictEqual(script.connects(), 2)
      })
    )

    it.effect("stop interrupts a backoff wait at once", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ backoff: { initial: "1h", max: "1h" } }))
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* inState(supervisor, "Restarting")
        yield* supervisor.stop
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
        yield* TestClock.adjust("2 hours")
        assert.strictEqual(script.connects(), 1)
        assert.strictEqual((yield* supervisor.state).state, "Stopped")
      })
    )
  })

  describe("use", () => {
    it.effect("on Ready it runs the request on the session", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([])
        yield* supervisor.start
        assert.strictEqual(yield* supervisor.use((s) => Effect.succeed(s.id)), 1)
      })
    )

    it.effect("while Starting it waits for Ready", () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { supervisor } = yield* make([{ _tag: "gate", gate }])
        yield* Effect.forkChild(supervisor.start, { startImmediately: true })
        yield* inState(supervisor, "Starting")
        const request = yield* Effect.forkChild(
          supervisor.use((s) => Effect.succeed(s.id)),
          { startImmediately: true }
        )
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual(yield* Fiber.join(request), 1)
      })
    )

    it.effect("on a terminal state it fails at once with NotStarted carrying the last error", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([fail(refused())], policy({ required: true }))
        const before = yield* Effect.flip(supervisor.use(() => Effect.void))
        assert.strictEqual(before._tag, "NotStarted")
        yield* Effect.flip(supervisor.start)
        const after = yield* Effect.flip(supervisor.use(() => Effect.void))
        assert.strictEqual(after._tag, "NotStarted")
        assert.instanceOf(after.cause, LifecycleError.ServerUnavailable)
      })
    )

    it.effect("a request in flight when the session dies fails at once with ServerCrashed", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        const request = yield* Effect.forkChild(
          supervisor.use(() => Effect.never),
          { startImmediately: true }
        )
        yield* crashSession(script.last())
        const error = yield* Effect.flip(Fiber.join(request))
        assert.strictEqual(error._tag, "ServerCrashed")
      })
    )

    it.effect("a request past call_timeout fails with CallTimeout and the session stays up", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], policy({ call_timeout: "2s" }))
        yield* supervisor.start
        const request = yield* Effect.forkChild(Effect.flip(supervisor.use(() => Effect.never)), {
          startImmediately: true
        })
        yield* TestClock.adjust("2 seconds")
        const error = yield* Fiber.join(request)
        assert.strictEqual(error._tag, "CallTimeout")
        assert.strictEqual((yield* supervisor.state).state, "Ready")
        assert.isFalse(script.last().closed)
      })
    )

    it.effect("on a self-bounded session a request runs directly, with no race and no timer of its own", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([], policy({ call_timeout: "2s" }), { selfBounded: true })
        yield* supervisor.start
        const request = yield* Effect.forkChild(
          supervisor.use(() => Effect.sleep("5 seconds").pipe(Effect.as("done"))),
          {
            startImmediately: true
          }
        )
        yield* TestClock.adjust("5 seconds")
        assert.strictEqual(yield* Fiber.join(request), "done")
      })
    )

    it.effect(
      "on a self-bounded session it still waits for Ready under call_timeout, and fails at once when terminal",
      () =>
        Effect.gen(function* () {
          const gate = yield* Deferred.make<void>()
          const { supervisor } = yield* make([{ _tag: "gate", gate }], policy({ call_timeout: "2s" }), {
            selfBounded: true
          })
          const stopped = yield* Effect.flip(supervisor.use((s) => Effect.succeed(s.id)))
          assert.strictEqual(stopped._tag, "NotStarted")
          yield* Effect.forkChild(supervisor.start, { startImmediately: true })
          yield* inState(supervisor, "Starting")
          const late = yield* Effect.forkChild(Effect.flip(supervisor.use((s) => Effect.succeed(s.id))), {
            startImmediately: true
          })
          yield* TestClock.adjust("2 seconds")
          assert.strictEqual((yield* Fiber.join(late))._tag, "CallTimeout")
          const waiting = yield* Effect.forkChild(
            supervisor.use((s) => Effect.succeed(s.id)),
            {
              startImmediately: true
            }
          )
          yield* Deferred.succeed(gate, undefined)
          assert.strictEqual(yield* Fiber.join(waiting), 1)
        })
    )

    it.effect("a request is given the call's deadline: call_timeout from when the call started", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([], policy({ call_timeout: "2s" }), { selfBounded: true })
        yield* supervisor.start
        const before = Date.now()
        const given = yield* supervisor.use((_, deadline) => Effect.succeed(deadline))
        const after = Date.now()
        assert.strictEqual(given?.millis, 2_000)
        assert.isAtLeast(given?.at ?? 0, before + 2_000)
        assert.isAtMost(given?.at ?? Infinity, after + 2_000)
        // A request that does not take it reads it from its context.
        assert.strictEqual((yield* supervisor.use(() => Deadline.Current))?.millis, 2_000)
      })
    )

    it.effect("a caller's own deadline is kept and given to the request, on any session", () =>
      Effect.gen(function* () {
        for (const selfBounded of [true, false]) {
          const { supervisor } = yield* make([], policy({ call_timeout: "2s" }), { selfBounded })
          yield* supervisor.start
          const mine = Deadline.after(60_000)
          const given = yield* supervisor
            .use((_, deadline) => Effect.succeed(deadline))
            .pipe(Effect.provideService(Deadline.Current, mine))
          assert.strictEqual(given, mine)
          const read = yield* supervisor.use(() => Deadline.Current).pipe(Effect.provideService(Deadline.Current, mine))
          assert.strictEqual(read, mine)
        }
      })
    )

    it.effect("with call_timeout 0 (none) a request is given no deadline", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([], policy({ call_timeout: "0s" }), { selfBounded: true })
        yield* supervisor.start
        assert.isUndefined(yield* supervisor.use((_, deadline) => Effect.succeed(deadline)))
        assert.isUndefined(yield* supervisor.use(() => Deadline.Current))
      })
    )

    it.effect("the request's own typed error passes through", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([])
        yield* supervisor.start
        const error = yield* Effect.flip(supervisor.use(() => Effect.fail("bad arguments" as const)))
        assert.strictEqual(error, "bad arguments")
      })
    )
  })

  describe("health", () => {
    const healthy = policy({ health: { interval: "10s", timeout: "2s", failures: 3 } })

    it.effect("a failed probe marks Degraded; requests are still served; a passing probe returns to Ready", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], healthy)
        yield* supervisor.start
        script.last().probe = Exit.fail(crash("probe"))
        yield* TestClock.adjust("10 seconds")
        yield* inState(supervisor, "Degraded")
        assert.strictEqual(yield* supervisor.use((s) => Effect.succeed(s.id)), 1)
        script.last().probe = Exit.void
        yield* TestClock.adjust("10 seconds")
        yield* inState(supervisor, "Ready")
        assert.strictEqual(script.connects(), 1)
      })
    )

    it.effect("a probe that does not answer within health.timeout counts as failed", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], healthy)
        yield* supervisor.start
        script.last().probe = "hang"
        yield* TestClock.adjust("10 seconds")
        yield* TestClock.adjust("2 seconds")
        const degraded = yield* inState(supervisor, "Degraded")
        assert.strictEqual(degraded.lastError?.tag, "CallTimeout")
      })
    )

    it.effect("health.failures consecutive failures force a restart that counts as one", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([], healthy)
        yield* supervisor.start
        const seen = yield* record(supervisor, 3)
        script.last().probe = Exit.fail(crash("probe"))
        for (let i = 0; i < 3; i++) yield* TestClock.adjust("10 seconds")
        yield* inState(supervisor, "Ready")
        assert.deepStrictEqual(yield* Fiber.join(seen), ["Ready→Degraded", "Degraded→Restarting", "Restarting→Ready"])
        assert.strictEqual(script.connects(), 2)
        assert.isTrue(script.sessions[0]!.closed)
        assert.strictEqual((yield* supervisor.state).restarts, 1)
      })
    )

    it.effect("without health settings no probe runs", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        yield* supervisor.start
        script.last().probe = Exit.fail(crash("probe"))
        yield* TestClock.adjust("1 hour")
        assert.strictEqual((yield* supervisor.state).state, "Ready")
      })
    )
  })

  describe("status streams and teardown", () => {
    it.effect("transitions reach every subscriber in order", () =>
      Effect.gen(function* () {
        const { supervisor, script } = yield* make([])
        const a = yield* record(supervisor, 4)
        const b = yield* record(supervisor, 4)
        yield* supervisor.start
        yield* crashSession(script.last())
        yield* TestClock.adjust("1 second")
        const expected = ["Stopped→Starting", "Starting→Ready", "Ready→Restarting", "Restarting→Ready"]
        assert.deepStrictEqual(yield* Fiber.join(a), expected)
        assert.deepStrictEqual(yield* Fiber.join(b), expected)
      })
    )

    it.effect("a late subscriber to changes first sees the current state", () =>
      Effect.gen(function* () {
        const { supervisor } = yield* make([])
        yield* supervisor.start
        const first = yield* supervisor.changes.pipe(Stream.take(1), Stream.runCollect)
        assert.strictEqual(first[0]?.state, "Ready")
      })
    )

    it.effect("a defect as the session goes live fails start with a typed error; stop and scope close complete", () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        let opened = 0
        let closed = 0
        // A session whose fields throw: the actor hits a defect while it makes the session live.
        const connector: Session.Connector<number> = {
          connect: Effect.sync(() => ++opened).pipe(
            Effect.tap(() => Effect.addFinalizer(() => Effect.sync(() => closed++))),
            Effect.map(
              (handle): Session.Session<number> => ({
                handle,
                ended: Effect.never,
                get toolCountChanges(): Stream.Stream<number> {
                  throw new Error("broken session")
                }
              })
            )
          )
        }
        const supervisor = yield* Supervisor.make({ name: "broken", kind: "test", connector }).pipe(
          Scope.provide(scope)
        )
        const error = yield* Effect.flip(supervisor.start)
        assert.strictEqual(error._tag, "NotStarted")
        assert.include(error.message, "broken session")
        assert.instanceOf(error.cause, Error)
        const failed = yield* supervisor.state
        assert.strictEqual(failed.state, "Failed")
        assert.strictEqual(failed.lastError?.tag, "NotStarted")
        // Not wedged: a request fails at once, and a new start tries again and fails the same way.
        assert.strictEqual((yield* Effect.flip(supervisor.use(() => Effect.void)))._tag, "NotStarted")
        assert.strictEqual((yield* Effect.flip(supervisor.start))._tag, "NotStarted")
        yield* supervisor.stop
        assert.deepStrictEqual([opened, closed], [2, 2])
        yield* Scope.close(scope, Exit.void)
      })
    )

    it.effect("closing the supervisor's scope closes the session and answers waiting callers", () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const script = scripted(ok, fail(refused()))
        const supervisor = yield* Supervisor.make({ name: "fake", kind: "test", connector: script.connector }).pipe(
          Scope.provide(scope)
        )
        yield* supervisor.start
        const request = yield* Effect.forkChild(Effect.flip(supervisor.use(() => Effect.never)), {
          startImmediately: true
        })
        yield* Scope.close(scope, Exit.void)
        assert.isTrue(script.last().closed)
        assert.strictEqual((yield* Fiber.join(request))._tag, "NotStarted")
        assert.strictEqual((yield* Effect.flip(supervisor.start))._tag, "NotStarted")
      })
    )
  })
})
