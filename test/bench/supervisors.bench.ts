/**
 * Supervisor benchmark: 1,000 toolsets over an in-memory connector (no I/O, no health probe).
 * Measures, in one process with the real clock:
 *   1. start → all Ready, in parallel, against 1,000 unsupervised connects in Scopes (baseline),
 *      each timed several times in alternating order and compared by medians;
 *   2. heap per supervisor (GC forced before and after);
 *   3. transitions per second delivered through `events` while every session is crashed
 *      repeatedly, checking that each crash yields exactly Ready→Restarting→Ready per subscriber
 *      and that crashes keep nothing (the heap after round 5 against the heap after round 20);
 *   4. idle CPU over 5 s with everything Ready;
 *   5. the time to stop all of them by closing their scope.
 *
 * Run: cd /work/main && npm run bench   (needs node --expose-gc, set in the root "bench" script)
 */

import type { Session } from "@toolvisor/core"
import { LifecycleError, Policy, Supervisor } from "@toolvisor/core"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { formatter, gc, median } from "./stats.ts"

const N = 1_000
const WARMUP = 100
const ROUNDS = 20
/** Crash rounds run before the heap is first measured in section 3. */
const SETTLING_ROUNDS = 5
/** Heap a crash may leave behind per supervisor: a fiber kept per crash (about 250 bytes) fails it. */
const LEAK_LIMIT_BYTES = 100
/** Start-up runs per series (section 1). */
const REPEATS = 21
const IDLE_MILLIS = 5_000
/** Quiet time between the forced GC and the idle window, so V8's background GC threads are done. */
const SETTLE_MILLIS = 1_000
const ROUND_TIMEOUT = "10 seconds"

/** Backoff of 1 ms and no restart limit: every crash goes Ready → Restarting → Ready. */
const policy = Policy.fromLifecycleUnknownSync({ backoff: { initial: "1ms", max: "1ms" }, max_restarts: -1 })

/** One toolset's end of the in-memory connector: the `ended` Deferred of its newest session. */
interface Slot {
  ended: Deferred.Deferred<void, LifecycleError.LifecycleError> | undefined
  connects: number
}

/** Sessions whose scope is still open, over every connector. */
let openSessions = 0

const makeSlots = (n: number): Array<Slot> => Array.from({ length: n }, () => ({ ended: undefined, connects: 0 }))

const makeConnector = (slot: Slot): Session.Connector<number> => ({
  connect: Effect.gen(function* () {
    const ended = yield* Deferred.make<void, LifecycleError.LifecycleError>()
    slot.ended = ended
    slot.connects += 1
    openSessions += 1
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        openSessions -= 1
      })
    )
    const session: Session.Session<number> = { handle: slot.connects, ended: Deferred.await(ended) }
    return session
  })
})

const crash = (i: number) =>
  new LifecycleError.ServerCrashed({ toolset: `bench-${i}`, message: "simulated crash", exitCode: 1, signal: null })

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = performance.now()
    const value = yield* effect
    return { value, ms: performance.now() - start }
  })

const heapUsed = () => {
  gc("bench")
  gc("bench")
  return process.memoryUsage().heapUsed
}

const fmt = formatter(1)

const row = (label: string, value: string) => Console.log(`  ${label.padEnd(48)} ${value}`)

/** 1,000 direct connects, each in its own Scope, in parallel; the scopes are closed after timing. */
const baseline = (n: number) =>
  Effect.gen(function* () {
    const connectors = makeSlots(n).map(makeConnector)
    const { value: scopes, ms } = yield* timed(
      Effect.forEach(
        connectors,
        (connector) =>
          Effect.gen(function* () {
            const scope = yield* Scope.make()
            yield* connector.connect.pipe(Scope.provide(scope))
            return scope
          }),
        { concurrency: "unbounded" }
      )
    )
    yield* Effect.forEach(scopes, (scope) => Scope.close(scope, Exit.void), { discard: true })
    return ms
  })

/** Creates one supervisor per slot in `scope`, each with its own connector. */
const supervise = (scope: Scope.Scope, slots: ReadonlyArray<Slot>) =>
  Effect.forEach(slots, (slot, i) =>
    Supervisor.make({ name: `bench-${i}`, kind: "bench", connector: makeConnector(slot), policy }).pipe(
      Scope.provide(scope)
    )
  )

/** One supervised start-up of `n` toolsets in a fresh scope: make, then start all, timed apart. */
const supervisedRound = (n: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const slots = makeSlots(n)
    const { value: supervisors, ms: makeMs } = yield* timed(supervise(scope, slots))
    const { ms: startMs } = yield* timed(startAll(supervisors))
    return { scope, slots, supervisors, makeMs, startMs }
  })

const startAll = (supervisors: ReadonlyArray<Supervisor.Supervisor<number>>) =>
  Effect.forEach(supervisors, (supervisor) => supervisor.start, { concurrency: "unbounded", discard: true })

const program = Effect.gen(function* () {
  yield* Console.log(`Supervisor benchmark: ${N} toolsets, in-memory connector, Node ${process.version}`)

  // Warm-up (not measured): both code paths once at a smaller size, so neither pays for the JIT alone.
  {
    yield* baseline(WARMUP)
    const scope = yield* Scope.make()
    yield* startAll(yield* supervise(scope, makeSlots(WARMUP)))
    yield* Scope.close(scope, Exit.void)
  }

  // ---- 1 + 2: start-up time and heap ---------------------------------------------------------
  // Each series is timed REPEATS times, alternating which goes first, and compared by medians: one
  // start-up of 1,000 takes 10–50 ms, where a single GC pause moves a one-shot ratio by 2×.
  const baselines: Array<number> = []
  const makes: Array<number> = []
  const starts: Array<number> = []
  const supervisedOnce = Effect.gen(function* () {
    const round = yield* supervisedRound(N)
    makes.push(round.makeMs)
    starts.push(round.startMs)
    return round
  })
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    if (repeat % 2 === 1) baselines.push(yield* baseline(N))
    yield* Scope.close((yield* supervisedOnce).scope, Exit.void)
    if (repeat % 2 === 0) baselines.push(yield* baseline(N))
  }
  // The last start-up is kept for the phases below, with the heap measured around it.
  const heapBefore = heapUsed()
  const { scope, slots, supervisors } = yield* supervisedOnce
  const heapAfter = heapUsed()
  const ready = yield* Effect.forEach(supervisors, (s) => s.state)
  const readyCount = ready.filter((s) => s.state === "Ready").length
  const [baselineMs, makeMs, startMs] = [median(baselines), median(makes), median(starts)]
  const spread = (xs: ReadonlyArray<number>) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`

  yield* Console.log(`\n1. Start-up (all in parallel, concurrency unbounded; median of ${starts.length} runs, range)`)
  yield* row("supervised: Supervisor.make ×1,000", `${fmt(makeMs)} ms  (${spread(makes)})`)
  yield* row("supervised: start → all Ready", `${fmt(startMs)} ms  (${spread(starts)}; last: ${readyCount}/${N} Ready)`)
  yield* row("baseline: connector.connect ×1,000 in Scopes", `${fmt(baselineMs)} ms  (${spread(baselines)})`)
  yield* row("ratio start→Ready / baseline", `${fmt(startMs / baselineMs)}×`)
  yield* row("ratio (make + start) / baseline", `${fmt((makeMs + startMs) / baselineMs)}×`)
  yield* row("first run only (start→Ready / baseline)", `${fmt(starts[0] / baselines[0])}×`)

  yield* Console.log("\n2. Heap (GC forced before creating and after all Ready)")
  yield* row("heapUsed before / after", `${fmt(heapBefore / 2 ** 20)} MB / ${fmt(heapAfter / 2 ** 20)} MB`)
  yield* row("per supervisor (incl. its session)", `${fmt((heapAfter - heapBefore) / N / 1024, 2)} KB`)

  // ---- 3: transitions through `events` -------------------------------------------------------
  const counts = new Uint32Array(N)
  let received = 0
  let misordered = 0
  let target = 0
  let roundDone = yield* Deferred.make<void>()
  yield* Effect.forEach(
    supervisors,
    (supervisor, i) =>
      supervisor.events.pipe(
        Stream.runForEach((transition) =>
          Effect.suspend(() => {
            // Crash k of this toolset must arrive as Ready→Restarting, then Restarting→Ready.
            const expectFrom = counts[i] % 2 === 0 ? "Ready" : "Restarting"
            const expectTo = counts[i] % 2 === 0 ? "Restarting" : "Ready"
            if (transition.from !== expectFrom || transition.snapshot.state !== expectTo) misordered += 1
            counts[i] += 1
            received += 1
            return received === target ? Deferred.succeed(roundDone, undefined) : Effect.void
          })
        ),
        Effect.forkIn(scope, { startImmediately: true })
      ),
    { discard: true }
  )
  yield* Effect.yieldNow

  // One error per toolset, made up front: constructing errors (stack capture, Schema checks) is not
  // what this phase measures.
  const crashes = slots.map((_, i) => crash(i))
  let completedRounds = 0
  const runRounds = (first: number, last: number) =>
    timed(
      Effect.gen(function* () {
        for (let round = first; round <= last; round++) {
          roundDone = yield* Deferred.make<void>()
          target = 2 * N * round
          yield* Effect.forEach(
            slots,
            (slot, i) => (slot.ended ? Deferred.fail(slot.ended, crashes[i]) : Effect.void),
            { discard: true }
          )
          const done = yield* Deferred.await(roundDone).pipe(Effect.timeoutOption(ROUND_TIMEOUT))
          if (Option.isNone(done)) return
          completedRounds = round
        }
      })
    )
  // The heap is measured once the first rounds have made what any crash makes once (a timer map,
  // the last ended session, compiled code), and again at the end: what grows in between is kept
  // per crash, which is a leak.
  const { ms: firstMs } = yield* runRounds(1, SETTLING_ROUNDS)
  const heapBeforeRounds = heapUsed()
  const { ms: restMs } = yield* runRounds(SETTLING_ROUNDS + 1, ROUNDS)
  const crashMs = firstMs + restMs
  const expected = 2 * ROUNDS
  const checkLoss = () => {
    let short = 0
    let extra = 0
    for (const count of counts) {
      if (count < expected) short += 1
      if (count > expected) extra += 1
    }
    return { short, extra }
  }
  const afterRounds = checkLoss()
  const restarts = yield* Effect.forEach(supervisors, (s) => s.state)
  const restartsOk = restarts.filter((s) => s.state === "Ready" && s.restarts === ROUNDS).length
  const heapAfterRounds = heapUsed()

  yield* Console.log(`\n3. Transitions through events (${ROUNDS} rounds: crash all ${N}, wait for all Ready again)`)
  yield* row("rounds completed", `${completedRounds}/${ROUNDS}`)
  yield* row("transitions received / expected", `${received} / ${2 * N * ROUNDS}`)
  yield* row("elapsed", `${fmt(crashMs)} ms  (${fmt(crashMs / Math.max(completedRounds, 1))} ms per round)`)
  yield* row("transitions delivered per second", `${fmt(received / (crashMs / 1000), 0)}/s`)
  yield* row("crash → Ready cycles per second", `${fmt(received / 2 / (crashMs / 1000), 0)}/s`)
  yield* row(
    "lost / extra / out of order",
    `${afterRounds.short} subscribers short, ${afterRounds.extra} with extra, ${misordered} misordered`
  )
  yield* row("Ready with restarts = rounds", `${restartsOk}/${N}`)
  const growthPerRound = (heapAfterRounds - heapBeforeRounds) / N / (ROUNDS - SETTLING_ROUNDS)
  yield* row(
    `heap kept per supervisor per crash (rounds ${SETTLING_ROUNDS + 1}–${ROUNDS})`,
    `${fmt(growthPerRound, 0)} bytes (limit ${LEAK_LIMIT_BYTES})`
  )

  // ---- 4: idle CPU -----------------------------------------------------------------------------
  yield* Effect.sleep(SETTLE_MILLIS)
  const cpuStart = process.cpuUsage()
  const { ms: idleMs } = yield* timed(Effect.sleep(IDLE_MILLIS))
  const cpu = process.cpuUsage(cpuStart)
  const cpuMs = (cpu.user + cpu.system) / 1000
  const afterIdle = checkLoss()

  yield* Console.log(`\n4. Idle CPU with all ${N} Ready (real sleep, after ${SETTLE_MILLIS} ms to settle)`)
  yield* row("wall time", `${fmt(idleMs)} ms`)
  yield* row("CPU user + system", `${fmt(cpu.user / 1000)} + ${fmt(cpu.system / 1000)} = ${fmt(cpuMs)} ms`)
  yield* row("share of one core", `${fmt((cpuMs / idleMs) * 100, 3)} %`)
  yield* row("transitions during idle", `${received - 2 * N * completedRounds} (extra: ${afterIdle.extra})`)

  // ---- 5: stop everything ----------------------------------------------------------------------
  const { ms: closeMs } = yield* timed(Scope.close(scope, Exit.void))
  yield* Console.log(`\n5. Shutdown`)
  yield* row(`Scope.close (${N} supervisors + subscribers)`, `${fmt(closeMs)} ms`)
  yield* row("sessions still open afterwards", `${openSessions}`)

  const ok =
    readyCount === N &&
    completedRounds === ROUNDS &&
    afterIdle.short === 0 &&
    afterIdle.extra === 0 &&
    misordered === 0 &&
    restartsOk === N &&
    growthPerRound <= LEAK_LIMIT_BYTES &&
    openSessions === 0
  yield* Console.log(`\n${ok ? "OK: no transition lost, everything closed" : "CHECK FAILED (see above)"}`)
  if (!ok) process.exitCode = 1
})

const started = performance.now()
await Effect.runPromise(program)
console.log(`total ${fmt((performance.now() - started) / 1000, 1)} s`)
