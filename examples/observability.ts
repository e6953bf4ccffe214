import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { OtlpSerialization, OtlpTracer, PrometheusMetrics } from "effect/observability"

// Spans to an OTLP collector over HTTP (JSON); the URL comes from the environment.
const Traced = OtlpTracer.layer({
  url: process.env.OTLP_TRACES_URL ?? "http://127.0.0.1:4318/v1/traces",
  resource: { serviceName: "my-agent" }
}).pipe(Layer.provide([OtlpSerialization.layerJson, NodeHttpClient.layerUndici]))

const program = Effect.gen(function* () {
  const registry = yield* ToolsetRegistry.ToolsetRegistry
  yield* registry.callTool("everything_echo", { message: "traced" }) // a toolvisor.callTool span
  // The metrics in Prometheus' text format (PrometheusMetrics.layerHttp serves them for a scrape).
  console.log(yield* PrometheusMetrics.format())
})

NodeRuntime.runMain(
  program.pipe(Effect.provide(ToolsetRegistry.layerFile(process.argv[2] ?? "agent.yaml")), Effect.provide(Traced))
)
