/**
 * Spans for work done often: every connect, every tool call. With Effect's native tracer a span
 * reaches no one, yet making it is a large share of what a call costs; so these spans are made
 * only when a tracer is installed (an OTLP exporter, a test's recorder). Spans for rare work
 * (a start, a restart) use `Effect.withSpan` directly.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

export interface Options {
  /** Read only when the span is made. */
  readonly attributes: () => Readonly<Record<string, unknown>>
}

/** Whether work run with `context` has a tracer to report to: then a call must take its span. */
export const isTraced = (context: Context.Context<never>): boolean =>
  Context.get(context, Tracer.Tracer) !== Tracer.nativeTracer

/** `Effect.withSpan` without a stack trace (the call site is always the same), for a caller that knows it is traced. */
export const withSpan = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string, options: Options) =>
  Effect.withSpan(effect, name, { attributes: options.attributes(), captureStackTrace: false })

/** `withSpan` when traced. */
export const span =
  (name: string, options: Options) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) => (isTraced(fiber.context) ? withSpan(effect, name, options) : effect))
