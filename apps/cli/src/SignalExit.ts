/**
 * How a signal ends a command. `run`, `serve` and `runner` run until one comes — Ctrl-C or
 * SIGTERM is how they are meant to end — so it ends them normally, with exit code 0. Any other
 * command it cuts short: the exit code says so, 128 plus the signal's number as a shell reports
 * it (130 for SIGINT, 143 for SIGTERM), so that `toolvisor call … && next` does not go on as if
 * the call had finished.
 */
import * as NodeOs from "node:os"
import * as Effect from "effect/Effect"

let untilSignal = false

/** Marks the command as one that runs until a signal ends it. */
export const runsUntilSignal = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    untilSignal = true
    return effect
  })

/** The exit code of a shutdown `signal` asked for, and what to say on stderr (nothing when it ended the command as meant). */
export const outcome = (signal: NodeJS.Signals): { readonly code: number; readonly message?: string } =>
  untilSignal
    ? { code: 0 }
    : {
        code: 128 + (NodeOs.constants.signals[signal] ?? 0),
        message: `interrupted by ${signal} before the command finished`
      }
