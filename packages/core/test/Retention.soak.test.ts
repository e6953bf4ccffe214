/**
 * What a supervisor keeps as it goes on crashing: nothing per crash. A toolset that crashes all
 * day must not grow (a timer, a fiber or a session held per restart is a leak that only shows
 * after hours), so this crashes 100 supervisors 160 times each on the real clock and weighs the
 * heap, with a forced GC, after 60 rounds and at the end. The first rounds are left out: they
 * grow the heap once (compiled code, the runtime's own buffers) by about 600 KB, whatever the
 * number of crashes.
 */

import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as LifecycleError from "../src/LifecycleError.ts"
import * as Policy from "../src/Policy.ts"
import type * as Session from "../src/Session.ts"
import * as Supervisor from "../src/Supervisor.ts"

const SUPERVISORS = 100
const SETTLING_ROUNDS = 60
const ROUNDS = 160
/** A backoff timer kept per crash is about 260 bytes; nothing kept is a few. */
const LIMIT_BYTES_PER_CRASH = 100

NodeV8.setFlagsFromString("--expose-gc")
const gc = NodeVm.runInNewContext("gc") as () => void
const heapUsed = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** A connector whose newest session the test can crash. */
const crashable = () => {
  let ended: Deferred.Deferred<void, LifecycleError.LifecycleError> | undefined
  const connector: Session.Connector<number> = {
    connect: Effect.map(Deferred.make<void, LifecycleError.LifecycleError>(), (deferred) => {
      ended = deferred
      return { handle: 0, ended: Deferred.await(deferred) }
    })
  }
  const crash = new LifecycleError.ServerCrashed({ toolset: "c", message: "c: crashed", exitCode: 1, signal: null })
  return { connector, crash: () => (ended === undefined ? Effect.void : Deferred.fail(ended, crash)) }
}

describe("Supervisor retention", () => {
  it.live(
    "100 supervisors crashed 160 times each keep nothing per crash",
    () =>
      Effect.gen(function* () {
        const policy = Policy.fromLifecycleUnknownSync({ backoff: { initial: "1ms", max: "1ms" }, max_restarts: -1 })
        const scope = yield* Scope.make()
        const toolsets = Array.from({ length: SUPERVISORS }, crashable)
        const supervisors = yield* Effect.forEach(toolsets, ({ connector }, i) =>
          Supervisor.make({ name: `c${i}`, kind: "test", connector, policy }).pipe(Scope.provide(scope))
        )
        yield* Effect.forEach(supervisors, (s) => s.start, { concurrency: "unbounded", discard: true })

        const round = (n: number) =>
          Effect.gen(function* () {
            yield* Effect.forEach(toolsets, (t) => t.crash(), { discard: true })
            yield* Effect.forEach(
              supervisors,
              (s) =>
                Effect.gen(function* () {
                  for (;;) {
                    const status = yield* s.state
                    if (status.state === "Ready" && status.restarts === n) return
                    yield* Effect.sleep("1 millis")
                  }
                }),
              { concurrency: "unbounded", discard: true }
            )
          })
        for (let n = 1; n <= SETTLING_ROUNDS; n++) yield* round(n)
        const before = heapUsed()
        for (let n = SETTLING_ROUNDS + 1; n <= ROUNDS; n++) yield* round(n)
        const after = heapUsed()
        yield* Scope.close(scope, Exit.void)

        const crashes = SUPERVISORS * (ROUNDS - SETTLING_ROUNDS)
        const perCrash = (after - before) / crashes
        assert.isBelow(perCrash, LIMIT_BYTES_PER_CRASH, `${perCrash.toFixed(0)} bytes kept per crash`)
      }),
    60_000
  )
})
