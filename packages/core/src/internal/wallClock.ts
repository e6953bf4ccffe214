/**
 * Waits measured on the wall clock. Grace periods and deadlines about real processes (a server
 * given time to exit, a crash report given time to arrive) must pass in real time even when the
 * surrounding program runs on a `TestClock`, so they use a plain timer, not Effect's `Clock`.
 */
import * as Effect from "effect/Effect"

/** The longest a Node timer waits: a longer one fires at once (with a TimeoutOverflowWarning). */
export const maxTimerMillis = 2 ** 31 - 1

/** Sleeps `millis` of real time (at most `maxTimerMillis`); interruption clears the timer. */
export const sleep = (millis: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Math.min(millis, maxTimerMillis))
    return Effect.sync(() => clearTimeout(timer))
  })
