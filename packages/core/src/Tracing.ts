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

/** `Effect.withSpan`, without a stack trace (the call site is always the same), when traced. */
export const span =
  (name: string, options: Options) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) =>
      isTraced(fiber.context)
        ? Effect.withSpan(effect, name, { attributes: options.attributes(), captureStackTrace: false })
        : effect
    )

/** `Effect.annotateCurrentSpan` for a span made by `span`: nothing to annotate when none was made. */
export const annotate = (key: string, value: unknown): Effect.Effect<void> =>
  Effect.withFiber((fiber) => (isTraced(fiber.context) ? Effect.annotateCurrentSpan(key, value) : Effect.void))
