/**
 * The registry's status over HTTP, as `effect/http` routes an Effect app mounts on its own router
 * (and the CLI mounts beside its MCP endpoint): the snapshot, a Server-Sent Events stream that
 * resumes from `Last-Event-ID`, control of single toolsets, Prometheus metrics, the health probes
 * an orchestrator expects, and a dashboard page. Every route checks Host and Origin against DNS
 * rebinding; control routes (and every route on a non-loopback bind) need the bearer token.
 */
import * as NodeCrypto from "node:crypto"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import * as Stream from "effect/Stream"
import * as Dashboard from "./Dashboard.ts"
import * as StatusFeed from "./StatusFeed.ts"
import * as StatusJson from "./StatusJson.ts"
import * as ToolsetRegistry from "./ToolsetRegistry.ts"

export interface Options extends StatusFeed.Options {
  /** The address the server is bound to: a loopback bind accepts only a loopback `Host`. */
  readonly host: string
  /** The bearer token control routes require; every route but the probes does off loopback. */
  readonly token?: string
  /** Whether a toolset must be Ready for `/readyz`; every toolset when omitted. */
  readonly required?: (toolset: string) => boolean
}

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])

/** Whether an address or host name is this machine only. */
export const isLoopback = (host: string): boolean => loopbackNames.has(host)

/**
 * On a loopback address only a loopback `Host` is accepted, so a web page that rebinds its own
 * domain to 127.0.0.1 cannot reach the server from the user's browser (DNS rebinding).
 */
export const hostAllowed = (bound: string, header: string | undefined): boolean => {
  if (!isLoopback(bound)) return true
  const url = header !== undefined && URL.canParse(`http://${header}`) ? new URL(`http://${header}`) : undefined
  return url !== undefined && isLoopback(url.hostname)
}

/** A browser's request from another origin: its page may not drive or read this server. */
const crossOrigin = (origin: string | undefined, host: string | undefined): boolean =>
  origin !== undefined && (!URL.canParse(origin) || new URL(origin).host !== host)

/** Compares in constant time, so the token cannot be guessed byte by byte from response times. */
const tokenMatches = (token: string, header: string | undefined): boolean => {
  const expected = Buffer.from(`Bearer ${token}`)
  const given = Buffer.from(header ?? "")
  return given.length === expected.length && NodeCrypto.timingSafeEqual(given, expected)
}

/** Who may use a route: anyone (probes), readers, or controllers. */
type Access = "probe" | "read" | "control"

const problem = (status: number, message: string) => HttpServerResponse.jsonUnsafe({ error: message }, { status })

/** Refuses a request that fails the Host, Origin or token check; undefined when it may proceed. */
const refusal = (
  options: Options,
  request: HttpServerRequest.HttpServerRequest,
  access: Access
): HttpServerResponse.HttpServerResponse | undefined => {
  const { headers } = request
  if (!hostAllowed(options.host, headers.host)) return problem(403, "Forbidden: invalid Host header")
  if (crossOrigin(headers.origin, headers.host)) return problem(403, "Forbidden: cross-origin request")
  const needsToken = access === "control" || (access === "read" && !isLoopback(options.host))
  if (needsToken && options.token !== undefined && !tokenMatches(options.token, headers.authorization)) {
    return HttpServerResponse.jsonUnsafe(
      { error: "Unauthorized: send Authorization: Bearer <token>" },
      { status: 401, headers: { "www-authenticate": 'Bearer realm="toolvisor"' } }
    )
  }
  return undefined
}

const guarded =
  <E, R>(
    options: Options,
    access: Access,
    handler: (
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
  (request: HttpServerRequest.HttpServerRequest) =>
    Effect.suspend(() => {
      const refused = refusal(options, request, access)
      return refused === undefined ? handler(request) : Effect.succeed(refused)
    })

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
 * The routes, registered on the app's `HttpRouter`. The event feed lives as long as the layer, so
 * a client that reconnects finds the history it needs.
 */
export const layer = (
  options: Options
): Layer.Layer<never, never, HttpRouter.HttpRouter | ToolsetRegistry.ToolsetRegistry> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const router = yield* HttpRouter.HttpRouter
      const registry = yield* ToolsetRegistry.ToolsetRegistry
      const feed = yield* StatusFeed.make(registry, options)
      const required = options.required ?? (() => true)

      yield* router.add(
        "GET",
        "/",
        guarded(options, "probe", () =>
          Effect.succeed(
            HttpServerResponse.text(Dashboard.page, { contentType: "text/html; charset=utf-8", headers: noStore })
          )
        )
      )
      yield* router.add(
        "GET",
        "/status",
        guarded(options, "read", () =>
          Effect.map(StatusFeed.snapshotData(registry), ({ toolsets }) =>
            HttpServerResponse.jsonUnsafe(toolsets, { headers: noStore })
          )
        )
      )
      yield* router.add(
        "GET",
        "/events",
        guarded(options, "read", (request) =>
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
        guarded(options, "control", () =>
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
        guarded(options, "read", () =>
          Effect.map(PrometheusMetrics.format(), (body) =>
            HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
          )
        )
      )
      yield* router.add(
        "GET",
        "/healthz",
        guarded(options, "probe", () =>
          Effect.succeed(HttpServerResponse.jsonUnsafe({ ok: true }, { headers: noStore }))
        )
      )
      yield* router.add(
        "GET",
        "/readyz",
        guarded(options, "probe", () =>
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
