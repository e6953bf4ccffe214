/**
 * The registry's status over HTTP, as `effect/http` routes an Effect app mounts on its own router
 * (and the CLI mounts beside its MCP endpoint): the snapshot, a Server-Sent Events stream that
 * resumes from `Last-Event-ID`, one toolset's details, control of single toolsets, each toolset's
 * calls over the last hour, Prometheus metrics, the health probes an orchestrator expects, and a
 * dashboard page. Every route passes the app's `HttpGate` (Host,
 * Origin, and a credential for all but the probes and the dashboard's static page).
 */
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import * as Stream from "effect/Stream"
import * as HttpGate from "./HttpGate.ts"
import * as Inspection from "./Inspection.ts"
import * as Dashboard from "./internal/dashboard.ts"
import * as StatusFeed from "./internal/statusFeed.ts"
import * as ToolsetStats from "./internal/toolsetStats.ts"
import * as StatusJson from "./StatusJson.ts"
import * as ToolsetRegistry from "./ToolsetRegistry.ts"

/** The event feed's settings, and which toolsets the readiness probe waits for. */
export interface Options extends StatusFeed.Options {
  /** Whether a toolset must be Ready for `/readyz`; every toolset when omitted. */
  readonly required?: (toolset: string) => boolean
}

const problem = (status: number, message: string) => HttpServerResponse.jsonUnsafe({ error: message }, { status })

const noStore = { "cache-control": "no-store" }

const encoder = new TextEncoder()
/** Tells an EventSource to reconnect after a second. */
const retry = encoder.encode("retry: 1000\n\n")

/** `Last-Event-ID` from the header an EventSource sends, or from `?lastEventId=` for fetch clients. */
const lastEventId = (request: HttpServerRequest.HttpServerRequest): number | undefined => {
  const raw =
    request.headers["last-event-id"] ?? new URL(request.url, "http://status").searchParams.get("lastEventId") ?? ""
  return /^\d+$/.test(raw) ? Number(raw) : undefined
}

const actions = ["start", "stop", "restart"] as const
type Action = (typeof actions)[number]
const isAction = (value: string | undefined): value is Action => actions.some((a) => a === value)

const control = (registry: ToolsetRegistry.Registry, name: string, action: Action) => {
  const effect =
    action === "start"
      ? registry.startToolset(name)
      : action === "stop"
        ? registry.stopToolset(name)
        : registry.restartToolset(name)
  return effect.pipe(
    Effect.as(HttpServerResponse.jsonUnsafe({ toolset: name, action, ok: true })),
    Effect.catchTag("UnknownToolset", (error) => Effect.succeed(problem(404, error.message))),
    // The error's own message may quote a server's output; the snapshot's is masked by the registry.
    Effect.catch((error) =>
      Effect.map(registry.snapshot, (board) => {
        const row = board.find((s) => s.name === name)
        return HttpServerResponse.jsonUnsafe(
          {
            toolset: name,
            action,
            ok: false,
            error: error._tag,
            status: row === undefined ? null : StatusJson.make(row)
          },
          { status: 502 }
        )
      })
    )
  )
}

/**
 * What a request no route takes is told, in JSON like every refusal, with the routes there are:
 * a client that asked the wrong way learns which, where the router's own 404 said nothing.
 * Returned for the app to put where its router's `RouteNotFound` ends up (as the CLI does).
 */
export const notFound = (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse => {
  const path = (URL.parse(request.url, "http://status")?.pathname ?? "").slice(0, 100)
  return HttpServerResponse.jsonUnsafe(
    {
      error:
        `Not found: ${request.method} ${path}; the status routes are GET /status, /events, /stats, /metrics, ` +
        "/healthz, /readyz, /toolsets/<name> and the dashboard at /, and POST /toolsets/<name>/<start|stop|restart>"
    },
    { status: 404, headers: HttpGate.securityHeaders }
  )
}

/**
 * The routes, registered on the app's `HttpRouter`. The event feed lives as long as the layer, so
 * a client that reconnects finds the history it needs.
 */
export const layer = (
  options: Options
): Layer.Layer<never, never, HttpRouter.HttpRouter | ToolsetRegistry.ToolsetRegistry | HttpGate.HttpGate> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const router = yield* HttpRouter.HttpRouter
      const registry = yield* ToolsetRegistry.ToolsetRegistry
      const gate = yield* HttpGate.HttpGate
      const feed = yield* StatusFeed.make(registry, options)
      const stats = yield* ToolsetStats.make()
      const required = options.required ?? (() => true)

      yield* router.add(
        "GET",
        "/",
        HttpGate.guarded(gate, "public", () =>
          Effect.succeed(
            HttpServerResponse.text(Dashboard.page, {
              contentType: "text/html; charset=utf-8",
              headers: { ...noStore, "content-security-policy": Dashboard.contentSecurityPolicy }
            })
          )
        )
      )
      yield* router.add(
        "GET",
        "/favicon.svg",
        HttpGate.guarded(gate, "public", () =>
          Effect.succeed(
            HttpServerResponse.text(Dashboard.favicon, {
              contentType: "image/svg+xml",
              headers: { "cache-control": "max-age=86400" }
            })
          )
        )
      )
      yield* router.add(
        "GET",
        "/stats",
        HttpGate.guarded(gate, "protected", () =>
          Effect.map(stats.series, (toolsets) =>
            HttpServerResponse.jsonUnsafe({ bucketMillis: stats.bucketMillis, toolsets }, { headers: noStore })
          )
        )
      )
      yield* router.add(
        "GET",
        "/toolsets/:name",
        HttpGate.guarded(gate, "protected", () =>
          Effect.flatMap(HttpRouter.params, ({ name }) =>
            registry.inspect(name ?? "").pipe(
              Effect.map((inspection) =>
                HttpServerResponse.jsonUnsafe(Inspection.json(inspection), { headers: noStore })
              ),
              Effect.catchTag("UnknownToolset", (error) => Effect.succeed(problem(404, error.message)))
            )
          )
        )
      )
      yield* router.add(
        "GET",
        "/status",
        HttpGate.guarded(gate, "protected", () =>
          Effect.map(StatusFeed.snapshotData(registry), ({ toolsets }) =>
            HttpServerResponse.jsonUnsafe(toolsets, { headers: noStore })
          )
        )
      )
      yield* router.add(
        "GET",
        "/events",
        HttpGate.guarded(gate, "protected", (request) =>
          Effect.succeed(
            HttpServerResponse.stream(
              Stream.concat(
                Stream.make(retry),
                Stream.map(feed.subscribe(lastEventId(request)), (e) => e.frame)
              ),
              {
                contentType: "text/event-stream",
                headers: { ...noStore, "x-accel-buffering": "no", connection: "keep-alive" }
              }
            )
          )
        )
      )
      yield* router.add(
        "POST",
        "/toolsets/:name/:action",
        HttpGate.guarded(gate, "protected", () =>
          Effect.gen(function* () {
            const { name, action } = yield* HttpRouter.params
            if (name === undefined || !isAction(action)) {
              return problem(404, `Not found: POST /toolsets/NAME/${actions.join("|")}`)
            }
            return yield* control(registry, name, action)
          })
        )
      )
      yield* router.add(
        "GET",
        "/metrics",
        HttpGate.guarded(gate, "protected", () =>
          Effect.map(PrometheusMetrics.format(), (body) =>
            HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
          )
        )
      )
      yield* router.add(
        "GET",
        "/healthz",
        HttpGate.guarded(gate, "public", () =>
          Effect.succeed(HttpServerResponse.jsonUnsafe({ ok: true }, { headers: noStore }))
        )
      )
      yield* router.add(
        "GET",
        "/readyz",
        HttpGate.guarded(gate, "public", () =>
          Effect.map(registry.snapshot, (board) => {
            const waiting = board
              .filter((s) => required(s.name) && s.state !== "Ready")
              .map((s) => ({ toolset: s.name, state: s.state }))
            return HttpServerResponse.jsonUnsafe(
              { ready: waiting.length === 0, waiting },
              { status: waiting.length === 0 ? 200 : 503, headers: noStore }
            )
          })
        )
      )
    })
  )
