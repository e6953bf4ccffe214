/**
 * Spans for work done often: every connect, every tool call. With Effect's native tracer a span
 * reaches no one, yet making it is a large share of what a call costs; so these spans are made
 * only when a tracer is installed (an OTLP exporter, a test's recorder). Spans for rare work
 * (a start, a restart) use `Effect.withSpan` directly.
 */
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

export interface Options {
  readonly attributes: Readonly<Record<string, unknown>>
}

/** `Effect.withSpan`, without a stack trace (the call site is always the same), when traced. */
export const span =
  (name: string, options: Options) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) =>
      fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer
        ? effect
        : Effect.withSpan(effect, name, { attributes: options.attributes, captureStackTrace: false })
    )
