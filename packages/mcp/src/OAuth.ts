/**
 * The interactive login for a remote MCP server: the one place a browser is opened. It asks the
 * server for its challenge (the `WWW-Authenticate` of a 401 names the protected-resource
 * metadata, RFC 9728), lets the SDK's `auth()` discover the authorization server (RFC 8414, then
 * OpenID discovery), register a client where none is configured (RFC 7591) and build the PKCE
 * (S256) authorization URL with the resource indicator (RFC 8707); then it waits for the code on
 * a loopback redirect, checks the state, and has the SDK exchange it. The tokens land in the
 * `TokenStore`, where every later (background) connection finds them.
 */
import * as NodeHttp from "node:http"
import { extractWWWAuthenticateParams, auth as sdkAuth } from "@modelcontextprotocol/sdk/client/auth.js"
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js"
import { LifecycleError, Redaction } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as OAuthProvider from "./internal/oauthProvider.ts"
import * as TokenStore from "./internal/tokenStore.ts"
import type * as McpSpec from "./McpSpec.ts"

/** What `login` needs: the toolset, its remote spec, and how to show the user the authorization URL. */
export interface LoginOptions {
  readonly name: string
  readonly spec: McpSpec.Http | McpSpec.Sse
  /** Shows the authorization URL to the user: opens a browser, or prints it. */
  readonly open: (authorizationUrl: URL) => Effect.Effect<void>
  /** How long to wait for the browser to come back (default 5 minutes). */
  readonly timeout?: Duration.Input
}

/** How a login ended: tokens stored through the browser, or without one (client credentials). */
export type Outcome = "browser" | "client-credentials"

interface Callback {
  readonly code: string
}

const failure = (name: string, message: string, cause?: unknown) =>
  new LifecycleError.AuthRequired({
    toolset: name,
    message: `${name}: login failed: ${Redaction.redact(message)}`,
    ...(cause === undefined ? {} : { cause })
  })

const page = (text: string) => `<!doctype html><meta charset="utf-8"><title>Toolvisor</title><p>Toolvisor: ${text}</p>`

/**
 * A loopback HTTP server for the redirect, closed with the scope; resolves with the first callback
 * that carries the state of the login in progress. Any page on this machine can send the browser
 * to the loopback port, so a callback with another state (or none) is a forgery or a stale tab: it
 * gets an error page and is ignored, and the login goes on waiting for the real one.
 */
const callbackServer = (name: string, port: number, isExpected: (state: string | null) => boolean) =>
  Effect.gen(function* () {
    const received = yield* Deferred.make<Callback, LifecycleError.AuthRequired>()
    const server = NodeHttp.createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1")
      const code = url.searchParams.get("code")
      const error = url.searchParams.get("error")
      if (code === null && error === null) {
        response.writeHead(404).end()
        return
      }
      const html = { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }
      if (!isExpected(url.searchParams.get("state"))) {
        response
          .writeHead(400, html)
          .end(page("this callback does not belong to the login in progress, and was ignored."))
        return
      }
      response
        .writeHead(200, html)
        .end(
          page(
            code === null
              ? "the login was refused. You can close this window."
              : "authorized: Toolvisor finishes the login now, and its terminal says whether it did. You can close this window."
          )
        )
      Deferred.doneUnsafe(
        received,
        code === null
          ? Effect.fail(failure(name, `${error}: ${url.searchParams.get("error_description") ?? ""}`))
          : Effect.succeed({ code })
      )
    })
    const listening = yield* Effect.acquireRelease(
      Effect.callback<number, LifecycleError.AuthRequired>((resume) => {
        server.once("error", (cause) => resume(Effect.fail(failure(name, `callback port ${port}: ${cause.message}`))))
        server.listen(port, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    return { port: listening, received }
  })

/** The server's challenge: an unauthenticated `initialize` whose 401 names the resource metadata. */
const challenge = (spec: McpSpec.Http | McpSpec.Sse) =>
  Effect.promise(async () => {
    try {
      const response = await fetch(spec.url, {
        method: spec._tag === "http" ? "POST" : "GET",
        headers: {
          ...spec.headers,
          "content-type": "application/json",
          accept: spec._tag === "http" ? "application/json, text/event-stream" : "text/event-stream"
        },
        ...(spec._tag === "http"
          ? {
              body: JSON.stringify({
                jsonrpc: "2.0",
                id: 0,
                method: "initialize",
                params: {
                  protocolVersion: LATEST_PROTOCOL_VERSION,
                  capabilities: {},
                  clientInfo: { name: "toolvisor", version: "0.1.0" }
                }
              })
            }
          : {}),
        signal: AbortSignal.timeout(5_000)
      })
      await response.body?.cancel()
      return response.status === 401 || response.status === 403 ? extractWWWAuthenticateParams(response) : {}
    } catch {
      // No challenge to read: discovery falls back to the well-known locations.
      return {}
    }
  })

/**
 * Logs in to the toolset's server and stores the tokens. Any earlier tokens are dropped first, so
 * this is always a fresh login (that is what a user who runs `auth` asks for). The callback
 * server lives only as long as the login.
 */
export const login = (options: LoginOptions): Effect.Effect<Outcome, LifecycleError.LifecycleError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { name, spec } = options
      const store = yield* TokenStore.Current
      yield* replaceRefused(name, store, { serverUrl: spec.url, clientId: spec.oauth?.clientId })
      const clientCredentials = OAuthProvider.usesClientCredentials(spec.oauth)
      // The state of the authorization request this login opened: the only one its callback accepts.
      let sent: string | undefined
      const callback = clientCredentials
        ? undefined
        : yield* callbackServer(name, spec.oauth?.callbackPort ?? 0, (state) => sent !== undefined && state === sent)
      const context = yield* Effect.context<never>()
      const provider = OAuthProvider.make({
        name,
        serverUrl: spec.url,
        oauth: spec.oauth,
        store,
        ...(callback === undefined
          ? {}
          : {
              interactive: {
                redirectUrl: OAuthProvider.redirectUrlFor(spec.oauth, callback.port),
                open: (url: URL) => {
                  sent = url.searchParams.get("state") ?? undefined
                  return Effect.runPromiseWith(context)(options.open(url))
                }
              }
            })
      })
      const { resourceMetadataUrl, scope } = yield* challenge(spec)
      const attempt = (authorizationCode?: string) =>
        Effect.tryPromise({
          try: () =>
            sdkAuth(provider, {
              serverUrl: spec.url,
              fetchFn: OAuthProvider.securely(name, spec.url),
              ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl }),
              ...(scope === undefined ? {} : { scope }),
              ...(authorizationCode === undefined ? {} : { authorizationCode })
            }),
          catch: (cause) => OAuthProvider.classify(name, cause)
        })
      yield* Effect.tryPromise({
        try: async () => provider.invalidateCredentials?.("tokens"),
        catch: (cause) => OAuthProvider.classify(name, cause)
      })
      const first = yield* attempt()
      if (first === "AUTHORIZED") return "client-credentials" as const
      if (callback === undefined) return yield* failure(name, "the server asked for a browser login")
      const received = yield* Deferred.await(callback.received).pipe(
        Effect.timeoutOrElse({
          duration: options.timeout ?? Duration.minutes(5),
          orElse: () => Effect.fail(failure(name, "no answer from the browser in time"))
        })
      )
      const second = yield* attempt(received.code)
      if (second !== "AUTHORIZED") return yield* failure(name, "the authorization code was not accepted")
      return "browser" as const
    })
  )

/**
 * A login is always fresh, so a token file the store refuses (a link, another user's file) is
 * removed — the link itself, never what it points to — and replaced by the new login's. A refused
 * directory is not ours to clear: the login fails, saying why.
 */
const replaceRefused = (name: string, store: TokenStore.TokenStore, key: TokenStore.Key) =>
  Effect.tryPromise({ try: () => store.load(key), catch: (cause) => cause }).pipe(
    Effect.catch((cause) =>
      cause instanceof TokenStore.TokenFileRefused && cause.path === store.pathOf(key)
        ? Effect.tryPromise({ try: () => store.remove(key), catch: (error) => OAuthProvider.classify(name, error) })
        : Effect.fail(TokenStore.authRequired(name, cause) ?? OAuthProvider.classify(name, cause))
    ),
    Effect.asVoid
  )

/** Forgets the stored login for the toolset's server; false when there was none. */
export const logout = (spec: McpSpec.Http | McpSpec.Sse): Effect.Effect<boolean, Error> =>
  Effect.gen(function* () {
    const store = yield* TokenStore.Current
    return yield* TokenStore.logout(store, { serverUrl: spec.url, clientId: spec.oauth?.clientId })
  })
