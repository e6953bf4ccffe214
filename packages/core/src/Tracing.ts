/**
 * Spans for work done often: every connect, every tool call. With Effect's native tracer a span
 * reaches no one, yet making it is a large share of what a call costs; so these spans are made
 * only when a tracer is installed (an OTLP exporter, a test's recorder). Spans for rare work
 * (a start, a restart) use `Effect.withSpan` directly.
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Tracer from "effect/Tracer"

export interface Options {
  readonly attributes: Readonly<Record<string, unknown>>
}

const traced = (fiber: Fiber.Fiber<unknown, unknown>) => fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer

/** `Effect.withSpan`, without a stack trace (the call site is always the same), when traced. */
export const span =
  (name: string, options: Options) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) =>
      traced(fiber)
        ? Effect.withSpan(effect, name, { attributes: options.attributes, captureStackTrace: false })
        : effect
    )

/** `Effect.annotateCurrentSpan` for a span made by `span`: nothing to annotate when none was made. */
export const annotate = (key: string, value: unknown): Effect.Effect<void> =>
  Effect.withFiber((fiber) => (traced(fiber) ? Effect.annotateCurrentSpan(key, value) : Effect.void))
