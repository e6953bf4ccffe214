/**
 * The deadline of the tool call in progress. `LspToolset` sets it once per call from
 * `call_timeout`; every request, notification and diagnostics wait of that call gets the time
 * that is left, enforced with one plain timer each. That keeps `call_timeout` a bound on the whole
 * call — as a race against a sleeping fiber would — without forking a fiber per call.
 * Wall-clock time, like every budget about a real process, even under a TestClock.
 */
import { LifecycleError } from "@toolvisor/core"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

export interface Deadline {
  /** Wall-clock time (`Date.now()`) by which the call must be done. */
  readonly at: number
  /** The budget the call started with, for the error. */
  readonly millis: number
}

/** The current call's deadline; `undefined` outside a tool call (handshake, health probe). */
export const Current = Context.Reference<Deadline | undefined>("@toolvisor/lsp/Deadline", {
  defaultValue: () => undefined
})

/** Runs `effect` with a deadline `millis` from now; `undefined` leaves it unbounded. */
export const within =
  (millis: number | undefined) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    millis === undefined
      ? effect
      : Effect.suspend(() => Effect.provideService(effect, Current, { at: Date.now() + millis, millis }))

/** Milliseconds left before `deadline`, never negative. */
export const remaining = (deadline: Deadline): number => Math.max(0, deadline.at - Date.now())

/** The failure of a call that ran out of time. */
export const exceeded = (toolset: string, deadline: Deadline): LifecycleError.CallTimeout =>
  new LifecycleError.CallTimeout({
    toolset,
    message: `${toolset}: request did not complete within ${Duration.format(Duration.millis(deadline.millis))}`,
    afterMillis: deadline.millis
  })
