/**
 * Exports the runtime's traces, metrics and logs over OTLP/HTTP (JSON) with `effect/observability`:
 * the spans of every start and call (toolset, tool and outcome as attributes), the metrics of
 * `Telemetry`, and the logs. Provide the layer around the program that builds the registry; its
 * scope's end flushes what is still buffered.
 */
import * as Duration from "effect/Duration"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Otlp from "effect/observability/Otlp"
import type * as OtlpExporter from "effect/observability/OtlpExporter"

/** Where the collector is, and how the runtime names itself there. */
export interface Options {
  /** The collector's base URL, e.g. `http://127.0.0.1:4318`; `/v1/traces`, `/v1/metrics` and `/v1/logs` are appended. */
  readonly url: string
  readonly serviceName?: string
  /** How often buffered telemetry is sent; it is also sent when the layer's scope closes. */
  readonly interval?: Duration.Input
}

/** Traces, metrics and logs to the collector, over OTLP/HTTP JSON, sent every `interval` (default 5 s). */
export const layer = (options: Options): Layer.Layer<OtlpExporter.Flusher> => {
  const interval = options.interval ?? Duration.seconds(5)
  return Otlp.layerJson({
    baseUrl: options.url,
    resource: { serviceName: options.serviceName ?? "toolvisor" },
    tracerExportInterval: interval,
    metricsExportInterval: interval,
    loggerExportInterval: interval,
    loggerMergeWithExisting: true,
    shutdownTimeout: Duration.seconds(3)
  }).pipe(Layer.provide(FetchHttpClient.layer))
}
