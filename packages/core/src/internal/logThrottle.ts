/**
 * Warnings a peer can cause at will — a server's requests declined, say — logged at most once per
 * window and kind, with how many were held back: a server that sends 30,000 of them writes a few
 * lines, not 30,000. A burst's count is told with the next warning of its kind after the window.
 * A kind is what makes two warnings worth reading both: callers put the reason in it. What a peer
 * does by the book but we decline by policy is logged at info level, under the same throttle.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

export interface LogThrottle {
  /** Logs `message` as a warning, unless one of `kind` was logged less than the window ago. */
  readonly warn: (kind: string, message: string) => Effect.Effect<void>
  /** As `warn`, at info level. */
  readonly info: (kind: string, message: string) => Effect.Effect<void>
}

export const make = (windowMillis = 10_000): LogThrottle => {
  const kinds = new Map<string, { at: number; held: number }>()
  const throttled = (log: (message: string) => Effect.Effect<void>) => (kind: string, message: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const last = kinds.get(kind)
      if (last !== undefined && now - last.at < windowMillis) {
        last.held += 1
        return Effect.void
      }
      const held = last?.held ?? 0
      kinds.set(kind, { at: now, held: 0 })
      return log(held === 0 ? message : `${message} (and ${held} more like it before)`)
    })
  return { warn: throttled(Effect.logWarning), info: throttled(Effect.logInfo) }
}
