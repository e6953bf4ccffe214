/**
 * The one gate in front of every route Toolvisor serves on an HTTP port — the status routes, the
 * dashboard and the MCP endpoint alike. Host and Origin are checked on every request (a web page
 * that rebinds its own domain to 127.0.0.1 must not reach the toolsets: DNS rebinding), and the
 * bearer credential on every route but the public ones (health probes, the dashboard's static
 * page, this metadata). A refusal says how to authenticate: a `WWW-Authenticate` challenge that
 * points at the protected-resource metadata (RFC 9728), which names the authorization server
 * when tokens come from one.
 */
import type { OAuthProtectedResourceMetadata } from "@modelcontextprotocol/sdk/shared/auth.js"
import * as HttpUrl from "@toolvisor/core/internal/httpUrl"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as BearerAuth from "./internal/bearerAuth.ts"

/** Where the port is bound, and the credentials its protected routes take (a static token, or JWTs). */
export interface Options extends BearerAuth.Options {
  /** The address the server is bound to: a loopback bind accepts only a loopback `Host`. */
  readonly host: string
  /**
   * The path of the protected resource on this port (`/mcp` for the gateway, `/` by default). The
   * metadata describes the URL a client reached it at, or the JWT audience when that is a URL.
   */
  readonly resourcePath?: `/${string}`
}

/** Who may use a route: anyone who passes Host and Origin, or only holders of a credential. */
export type Access = "public" | "protected"

/** Request headers as Node and `effect/http` both give them, names in lower case. */
export type Headers = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** Why a request was turned away: the status, a line for the client, and the headers it needs. */
export interface Refusal {
  readonly status: 401 | 403 | 503
  readonly message: string
  readonly headers: Readonly<Record<string, string>>
}

/** A request the gate let through, with who its credential speaks for (see `BearerAuth.Identified`). */
export interface Admitted {
  readonly principal: string | undefined
}

/** What a route asks before it answers, and what tells a client how to authenticate when refused. */
export interface Gate {
  /** Refuses a request that fails the Host, Origin or credential check; undefined when it may proceed. */
  readonly check: (headers: Headers, access: Access) => Effect.Effect<Refusal | undefined>
  /** `check`, saying who an admitted request's credential speaks for: what it opens is that principal's. */
  readonly admit: (headers: Headers, access: Access) => Effect.Effect<Refusal | Admitted>
  /** The protected-resource metadata document (RFC 9728), as a client that reached us by `Host` sees it. */
  readonly metadata: (headers: Headers) => OAuthProtectedResourceMetadata
  /** Where that document is served: the root form and the one with the resource's path (RFC 9728 §3.1). */
  readonly metadataPaths: ReadonlyArray<HttpRouter.PathInput>
}

/** The gate every route of an HTTP app shares; the status routes and the gateway both ask it. */
export class HttpGate extends Context.Service<HttpGate, Gate>()("@toolvisor/runtime/HttpGate") {}

/**
 * Sent on every response: no page may frame ours (clickjacking the dashboard's buttons), no
 * browser may guess a type other than the one declared, and no address leaks in a Referer.
 * The dashboard page replaces the policy with one that allows its own inline script and style.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])

/** Whether an address or host name is this machine only. */
export const isLoopback = (host: string): boolean => loopbackNames.has(host)

const metadataRoot = "/.well-known/oauth-protected-resource" as const

/**
 * One header's value. Node keeps the first of a repeated `Authorization`, `Host` or `Origin` (so
 * a valid first credential is what is checked); a header it gives as a list counts as malformed,
 * so a check fails closed on it.
 */
const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name]
  return value === undefined || typeof value === "string" ? value : ""
}

/** The `Host` header as a URL host (`name[:port]`), undefined when it is not one. */
const hostOf = (headers: Headers): string | undefined => {
  const host = header(headers, "host")
  return host !== undefined && URL.canParse(`http://${host}`) ? new URL(`http://${host}`).host : undefined
}

/** Whether `Host` names this server: any host off loopback, and on a loopback bind only a loopback name. */
const hostAllowed = (bound: string, host: string | undefined): host is string =>
  host !== undefined && (!isLoopback(bound) || isLoopback(new URL(`http://${host}`).hostname))

/** A browser's request from another origin (or an opaque one, `null`): its page may not drive or read us. */
const crossOrigin = (origin: string | undefined, host: string | undefined): boolean =>
  origin !== undefined && (!URL.canParse(origin) || new URL(origin).host !== host)

/** Escapes a value for a quoted-string in a header (RFC 9110 §5.6.4). */
const quoted = (value: string) => `"${value.replace(/["\\]/g, "\\$&")}"`

/** Builds the gate; with JWTs, it first finds the issuer's keys, so a wrong issuer fails at start. */
export const make = (options: Options): Effect.Effect<Gate, BearerAuth.JwksError> =>
  Effect.gen(function* () {
    const auth = yield* BearerAuth.make(options)
    const resourcePath = options.resourcePath ?? "/"
    const audience = options.jwt?.audience
    const resource = (host: string) =>
      audience !== undefined && HttpUrl.is(audience) ? audience : `http://${host}${resourcePath}`
    const metadataUrl = (host: string) => {
      const url = new URL(resource(host))
      return `${url.origin}${metadataRoot}${url.pathname === "/" ? "" : url.pathname}`
    }
    const unauthorized = (host: string, verdict: "missing" | "invalid"): Refusal => ({
      status: 401,
      message: "Unauthorized: send Authorization: Bearer <token>",
      headers: {
        "www-authenticate": `Bearer resource_metadata=${quoted(metadataUrl(host))}${verdict === "invalid" ? ', error="invalid_token"' : ""}`
      }
    })
    const refused = (status: 403 | 503, message: string): Refusal => ({ status, message, headers: {} })

    const admit = (headers: Headers, access: Access): Effect.Effect<Refusal | Admitted> => {
      const host = hostOf(headers)
      if (!hostAllowed(options.host, host)) return Effect.succeed(refused(403, "Forbidden: invalid Host header"))
      if (crossOrigin(header(headers, "origin"), host)) {
        return Effect.succeed(refused(403, "Forbidden: cross-origin request"))
      }
      if (access === "public" || !auth.required) return Effect.succeed({ principal: undefined })
      return Effect.map(auth.identify(header(headers, "authorization")), ({ verdict, principal }) => {
        switch (verdict) {
          case "accepted":
            return { principal }
          case "unverifiable":
            return refused(503, "Service Unavailable: the authorization server's keys are out of reach")
          default:
            return unauthorized(host, verdict)
        }
      })
    }
    const check = (headers: Headers, access: Access): Effect.Effect<Refusal | undefined> =>
      Effect.map(admit(headers, access), (found) => ("status" in found ? found : undefined))

    const metadata = (headers: Headers): OAuthProtectedResourceMetadata => ({
      // Served only past the gate, so `Host` is there; the bound address is the type's fallback.
      resource: resource(hostOf(headers) ?? options.host),
      ...(auth.issuer === undefined ? {} : { authorization_servers: [auth.issuer] }),
      bearer_methods_supported: ["header"],
      resource_name: "Toolvisor"
    })

    const metadataPaths =
      resourcePath === "/" ? [metadataRoot] : [metadataRoot, `${metadataRoot}${resourcePath}` as const]
    return { check, admit, metadata, metadataPaths }
  })

/** The gate as a Layer; fails when the JWT issuer's keys cannot be fetched, so a bad setup stops the app at start. */
export const layer = (options: Options): Layer.Layer<HttpGate, BearerAuth.JwksError> =>
  Layer.effect(HttpGate, make(options))

/** A refusal as an `effect/http` response, with a JSON body. */
const toResponse = (refusal: Refusal): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe({ error: refusal.message }, { status: refusal.status, headers: refusal.headers })

/** Adds the security headers a response does not set itself. */
const secured = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.setHeaders(
    response,
    Object.fromEntries(Object.entries(securityHeaders).filter(([name]) => response.headers[name] === undefined))
  )

/** An `effect/http` handler behind the gate: refused, or answered, with the security headers either way. */
export const guarded =
  <E, R>(
    gate: Gate,
    access: Access,
    handler: (
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
  (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
    Effect.flatMap(gate.check(request.headers, access), (refusal) =>
      refusal === undefined ? Effect.map(handler(request), secured) : Effect.succeed(secured(toResponse(refusal)))
    )

/** The protected-resource metadata routes: public, like the probes, once past Host and Origin. */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter | HttpGate> = Layer.effectDiscard(
  Effect.gen(function* () {
    const router = yield* HttpRouter.HttpRouter
    const gate = yield* HttpGate
    for (const path of gate.metadataPaths) {
      yield* router.add(
        "GET",
        path,
        guarded(gate, "public", (request) =>
          Effect.succeed(HttpServerResponse.jsonUnsafe(gate.metadata(request.headers)))
        )
      )
    }
  })
)
