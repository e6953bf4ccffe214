/**
 * The one deadline of a request. `Supervisor.use` makes it from `call_timeout` when a call starts
 * (a caller that set one already — a call that may be sent twice — keeps its own) and gives it to
 * the request, so waiting for Ready, the request and any resend share one budget. Transports
 * whose requests take a timeout of their own read what is left (`remaining`); everything else is
 * bounded by `bound`. Wall-clock time, like every budget about a real process: the bound's timer
 * runs on Effect's clock, but what is left is measured with `Date.now()`.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as WallClock from "./internal/wallClock.ts"
import * as LifecycleError from "./LifecycleError.ts"

/** When a call must be done, and the budget it began with, so the timeout can say how long it was given. */
export interface Deadline {
  /** Wall-clock time (`Date.now()`) by which the call must be done. */
  readonly at: number
  /** The budget the call started with, for the error. */
  readonly millis: number
}

/** The current call's deadline; `undefined` outside a call (handshake, health probe). */
export const Current = Context.Reference<Deadline | undefined>("@toolvisor/core/Deadline", {
  defaultValue: () => undefined
})

/** A deadline `millis` from now. */
export const after = (millis: number): Deadline => ({ at: Date.now() + millis, millis })

/** Runs `effect` with a deadline `millis` from now, unless it already runs under one; `undefined` adds none. */
export const within =
  (millis: number | undefined) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    millis === undefined
      ? effect
      : Effect.withFiber((fiber) =>
          fiber.getRef(Current) === undefined ? Effect.provideService(effect, Current, after(millis)) : effect
        )

/**
 * Milliseconds left before `deadline`, never negative, and at most what a timer can wait: Node
 * fires a timer of more than 2^31 - 1 ms (about 24.8 days) at once, so a `call_timeout` of a month
 * would have failed every call on the spot.
 */
export const remaining = (deadline: Deadline): number =>
  Math.min(WallClock.maxTimerMillis, Math.max(0, deadline.at - Date.now()))

/** The failure of a call that ran out of time: the one `CallTimeout` every transport reports. */
export const exceeded = (toolset: string, deadline: Pick<Deadline, "millis">): LifecycleError.CallTimeout =>
  new LifecycleError.CallTimeout({
    toolset,
    message: `${toolset}: call did not complete within ${Duration.format(Duration.millis(deadline.millis))}`,
    afterMillis: deadline.millis
  })

/** Fails `effect` with `CallTimeout` when `deadline` passes first (counted from when it runs); unbounded without one. */
export const boundTo = <A, E, R>(
  toolset: string,
  deadline: Deadline | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | LifecycleError.CallTimeout, R> =>
  deadline === undefined
    ? effect
    : Effect.suspend(() =>
        Effect.timeoutOrElse(effect, {
          duration: Duration.millis(remaining(deadline)),
          orElse: () => Effect.fail(exceeded(toolset, deadline))
        })
      )

/** `boundTo` the current deadline. */
export const bound =
  (toolset: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | LifecycleError.CallTimeout, R> =>
    Effect.withFiber((fiber) => boundTo(toolset, fiber.getRef(Current), effect))
