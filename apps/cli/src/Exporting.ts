/**
 * `--otlp URL`: runs a command with the runtime's telemetry exported to a collector. The layer
 * wraps the whole command, so the registry it builds is traced and the last batch is flushed
 * when the command ends, however it ends.
 */
import { OtlpExport } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export const withOtlp =
  (url: Option.Option<string>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Option.match(url, {
      onNone: () => effect,
      onSome: (collector) => Effect.provide(effect, OtlpExport.layer({ url: collector }))
    })
