/**
 * OAuth against a real authorization server (oidc-provider) guarding an MCP server built with the
 * SDK's bearer-auth middleware. The browser is played over plain HTTP; every test has its own
 * servers and its own token directory.
 */
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import * as OAuthServer from "../../../test/support/OAuthServer.ts"
import * as TokenStore from "../src/internal/tokenStore.ts"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import * as OAuth from "../src/OAuth.ts"
import { fastPolicy, freePort, inState, textOf } from "./helpers.ts"

/** A token directory of the test's own, removed with its scope. */
const tempStore = Effect.acquireRelease(
  Effect.sync(() =>
    TokenStore.make(NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-oauth-")), "oauth"))
  ),
  (store) => Effect.sync(() => NodeFs.rmSync(NodePath.dirname(store.dir), { recursive: true, force: true }))
)

const setup = (options: { readonly accessTokenTTL?: number } = {}) =>
  Effect.gen(function* () {
    const callbackPort = yield* freePort
    const server = yield* OAuthServer.make({ callbackPort, ...options })
    const store = yield* tempStore
    const spec = (oauth?: ConstructorParameters<typeof McpSpec.OAuth>[0]) =>
      McpSpec.Http.make({ url: server.mcpUrl, ...(oauth === undefined ? {} : { oauth: new McpSpec.OAuth(oauth) }) })
    const withStore = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.provideService(effect, TokenStore.Current, store)
    const login = (target: McpSpec.Http | McpSpec.Sse) =>
      withStore(
        OAuth.login({ name: "remote", spec: target, open: (url) => Effect.promise(() => OAuthServer.approve(url)) })
      )
    /** A toolset in a scope of its own, so a test can close it and start another on the same store. */
    const open = (target: McpSpec.Http | McpSpec.Sse) =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const toolset = yield* withStore(McpToolset.make({ name: "remote", spec: target, policy: fastPolicy() })).pipe(
          Scope.provide(scope)
        )
        yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
        return { toolset, close: Scope.close(scope, Exit.void) }
      })
    const stored = (target: McpSpec.Http) =>
      Effect.promise(() => store.load({ serverUrl: target.url, clientId: target.oauth?.clientId }))
    return { server, store, spec, login, open, stored, callbackPort }
  })

const whoami = (toolset: McpToolset.McpToolset) => Effect.map(toolset.callTool("whoami", {}), textOf)

/**
 * A protected MCP server on loopback whose resource metadata names `authorizationServer` (itself
 * when undefined), and whose other documents (the authorization server's metadata) `drip`: one
 * space a second, never ending.
 */
const hostileServer = (authorizationServer?: string) =>
  Effect.acquireRelease(
    Effect.callback<NodeHttp.Server & { readonly base: string }>((resume) => {
      const drips = new Set<NodeJS.Timeout>()
      const server = NodeHttp.createServer((req, res) => {
        const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
        const path = new URL(req.url ?? "/", base).pathname
        if (path === "/mcp") {
          return res
            .writeHead(401, {
              "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`
            })
            .end()
        }
        if (path.startsWith("/.well-known/oauth-protected-resource")) {
          const body = { resource: `${base}/mcp`, authorization_servers: [authorizationServer ?? base] }
          return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body))
        }
        res.writeHead(200, { "content-type": "application/json" }).write("{")
        const drip = setInterval(() => res.write(" "), 1000)
        drips.add(drip)
        res.on("close", () => clearInterval(drip))
      })
      server.listen(0, "127.0.0.1", () =>
        resume(
          Effect.succeed(
            Object.assign(server, { base: `http://127.0.0.1:${(server.address() as { port: number }).port}` })
          )
        )
      )
      server.on("close", () => {
        for (const drip of drips) clearInterval(drip)
      })
    }),
    (server) =>
      Effect.sync(() => {
        server.close(() => undefined)
        server.closeAllConnections()
      })
  )

describe("OAuth against hostile servers", () => {
  const login = (url: string) =>
    Effect.gen(function* () {
      const store = yield* tempStore
      const started = Date.now()
      const error = yield* Effect.flip(
        OAuth.login({
          name: "remote",
          spec: McpSpec.Http.make({ url }),
          open: () => Effect.void,
          timeout: "1 second"
        }).pipe(Effect.provideService(TokenStore.Current, store))
      )
      return { error, millis: Date.now() - started }
    })

  it.live("an authorization server that drips its metadata fails the login within its requests' deadlines", () =>
    Effect.gen(function* () {
      const server = yield* hostileServer()
      const { error, millis } = yield* login(`${server.base}/mcp`)
      assert.isBelow(millis, 20_000)
      assert.strictEqual(error._tag, "TransportError")
      assert.match(error.message, /^remote: transport failure: http:\/\/127\.0\.0\.1:\d+ did not answer within 5 s/)
    })
  )

  it.live("a login through a plain-HTTP authorization server on another host is refused before anything is sent", () =>
    Effect.gen(function* () {
      const server = yield* hostileServer("http://192.0.2.2:39366")
      const { error, millis } = yield* login(`${server.base}/mcp`)
      assert.isBelow(millis, 5_000)
      assert.strictEqual(error._tag, "AuthRequired")
      assert.include(
        error.message,
        "refused to log in through http://192.0.2.2:39366: it is plain HTTP on another host"
      )
    })
  )
})

describe("OAuth against oidc-provider", () => {
  it.live("first login registers a client dynamically, stores the tokens 0600, and a call goes through", () =>
    Effect.gen(function* () {
      const { server, store, spec, login, open, stored } = yield* setup()
      const target = spec()
      assert.strictEqual(yield* login(target), "browser")
      const entry = yield* stored(target)
      const clientId = entry?.clientInformation?.client_id
      assert.isString(clientId)
      assert.notStrictEqual(clientId, server.preRegistered.clientId)
      assert.strictEqual(server.grants("authorization_code"), 1)

      const file = store.pathOf({ serverUrl: target.url })
      assert.strictEqual(NodeFs.statSync(file).mode & 0o777, 0o600)
      assert.strictEqual(NodeFs.statSync(store.dir).mode & 0o777, 0o700)

      const { toolset } = yield* open(target)
      yield* toolset.start
      assert.strictEqual(yield* whoami(toolset), `client ${clientId}`)
    })
  )

  it.live(
    "a callback with a wrong state or none gets an error page and is ignored; the login waits for the real one",
    () =>
      Effect.gen(function* () {
        const { server, store, spec, stored } = yield* setup()
        const target = spec()
        const forged: Array<{ readonly status: number; readonly body: string }> = []
        const open = (url: URL) =>
          Effect.promise(async () => {
            const callback = new URL(url.searchParams.get("redirect_uri") ?? "")
            for (const query of ["code=forged&state=forged", "code=forged", "error=access_denied&state=forged"]) {
              const answer = await fetch(`${callback.href}?${query}`)
              forged.push({ status: answer.status, body: await answer.text() })
            }
            await OAuthServer.approve(url)
          })
        const outcome = yield* OAuth.login({ name: "remote", spec: target, open }).pipe(
          Effect.provideService(TokenStore.Current, store)
        )
        assert.strictEqual(outcome, "browser")
        assert.strictEqual(forged.length, 3)
        for (const answer of forged) {
          assert.strictEqual(answer.status, 400)
          assert.include(answer.body, "does not belong to the login in progress")
          assert.notInclude(answer.body, "logged in")
        }
        assert.strictEqual(server.grants("authorization_code"), 1)
        assert.isString((yield* stored(target))?.tokens?.access_token)
      })
  )

  it.live("with only a forged callback the login waits until its timeout, then fails saying so", () =>
    Effect.gen(function* () {
      const { store, spec } = yield* setup()
      const open = (url: URL) =>
        Effect.promise(async () => {
          const callback = new URL(url.searchParams.get("redirect_uri") ?? "")
          await (await fetch(`${callback.href}?code=forged&state=forged`)).text()
        })
      const error = yield* Effect.flip(
        OAuth.login({ name: "remote", spec: spec(), open, timeout: "1 second" }).pipe(
          Effect.provideService(TokenStore.Current, store)
        )
      )
      assert.strictEqual(error._tag, "AuthRequired")
      assert.strictEqual(error.message, "remote: login failed: no answer from the browser in time")
    })
  )

  it.live(
    "a token file replaced by a link is refused at connect (AuthRequired, naming it); a new login replaces the link",
    () =>
      Effect.gen(function* () {
        const { spec, login, open, store } = yield* setup()
        const target = spec()
        yield* login(target)
        const file = store.pathOf({ serverUrl: target.url })
        const elsewhere = NodePath.join(NodePath.dirname(store.dir), "elsewhere.json")
        NodeFs.renameSync(file, elsewhere)
        NodeFs.symlinkSync(elsewhere, file)
        const before = NodeFs.readFileSync(elsewhere, "utf8")

        const { toolset } = yield* open(target)
        const error = yield* Effect.flip(toolset.start)
        assert.strictEqual(error._tag, "AuthRequired")
        assert.include(error.message, `refusing the OAuth token store's ${file}: it is a symbolic link`)

        yield* login(target)
        assert.isFalse(NodeFs.lstatSync(file).isSymbolicLink())
        assert.strictEqual(NodeFs.statSync(file).mode & 0o777, 0o600)
        assert.strictEqual(NodeFs.readFileSync(elsewhere, "utf8"), before, "the link's target is untouched")
        yield* toolset.restart
        assert.strictEqual((yield* toolset.state).state, "Ready")
      })
  )

  it.live("a pre-registered client logs in with its configured id and callback port, without registering", () =>
    Effect.gen(function* () {
      const { server, spec, login, open, stored, callbackPort } = yield* setup()
      const target = spec({ clientId: server.preRegistered.clientId, callbackPort })
      assert.strictEqual(yield* login(target), "browser")
      const entry = yield* stored(target)
      assert.strictEqual(entry?.clientInformation?.client_id, server.preRegistered.clientId)
      assert.notProperty(entry?.clientInformation ?? {}, "registration_access_token")
      const { toolset } = yield* open(target)
      yield* toolset.start
      assert.strictEqual(yield* whoami(toolset), `client ${server.preRegistered.clientId}`)
    })
  )

  it.live("a reconnect with no stored login ends in AuthRequired within 1 s, with no discovery or registration", () =>
    Effect.gen(function* () {
      const { server, spec, open, stored } = yield* setup()
      const target = spec()
      const { toolset } = yield* open(target)
      const started = Date.now()
      const error = yield* Effect.flip(toolset.start)
      const elapsed = Date.now() - started
      assert.strictEqual(error._tag, "AuthRequired")
      assert.isBelow(elapsed, 1_000)
      // The initialize POST and nothing else reached the server: no metadata, no registration.
      assert.strictEqual(server.mcpRequests(), 1)
      assert.isUndefined(yield* stored(target))
    })
  )

  it.live("a restart with a valid stored token reconnects without any interaction", () =>
    Effect.gen(function* () {
      const { server, spec, login, open } = yield* setup()
      const target = spec()
      yield* login(target)
      const first = yield* open(target)
      yield* first.toolset.start
      yield* first.close
      // A new process: a fresh provider that only has the token file.
      const { toolset } = yield* open(target)
      yield* toolset.start
      yield* toolset.restart
      assert.strictEqual((yield* toolset.state).state, "Ready")
      assert.include(yield* whoami(toolset), "client ")
      assert.strictEqual(server.grants("authorization_code"), 1)
    })
  )

  it.live("a token about to expire is refreshed before it is sent, while calls flow", () =>
    Effect.gen(function* () {
      // JWT expiry has whole seconds: a 4 s token is due for refresh after 2 s and expires after 3 to 4.
      const { server, spec, login, open } = yield* setup({ accessTokenTTL: 4 })
      const target = spec()
      yield* login(target)
      const { toolset } = yield* open(target)
      yield* toolset.start
      const refusedAtLogin = server.refusals()
      const deadline = Date.now() + 4_500
      let calls = 0
      while (Date.now() < deadline) {
        yield* Effect.all([whoami(toolset), whoami(toolset), whoami(toolset)], { concurrency: "unbounded" })
        calls += 3
        yield* Effect.sleep("100 millis")
      }
      assert.isAtLeast(server.grants("refresh_token"), 1)
      // Each refresh was shared by the calls in flight, and no request was sent with a stale token.
      assert.isBelow(server.grants("refresh_token"), calls / 3)
      assert.strictEqual(server.refusals(), refusedAtLogin)
    })
  )

  it.live("an invalid_token storm produces one refresh, not one per call, and every call succeeds", () =>
    Effect.gen(function* () {
      const { server, spec, login, open } = yield* setup()
      const target = spec()
      yield* login(target)
      const { toolset } = yield* open(target)
      yield* toolset.start
      server.refuseSeenTokens()
      const results = yield* Effect.all(
        Array.from({ length: 12 }, () => whoami(toolset)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.length, 12)
      assert.strictEqual(server.grants("refresh_token"), 1)
      assert.strictEqual((yield* toolset.state).state, "Ready")
    })
  )

  it.live(
    "two processes on one token file: the second takes the first's rotated tokens instead of a spent refresh token",
    () =>
      Effect.gen(function* () {
        const { server, spec, login, open } = yield* setup()
        const target = spec()
        yield* login(target)
        const first = yield* open(target)
        const second = yield* open(target)
        yield* first.toolset.start
        yield* second.toolset.start
        server.refuseSeenTokens()
        yield* whoami(first.toolset)
        yield* whoami(second.toolset)
        assert.strictEqual(server.grants("refresh_token"), 1)
        assert.strictEqual((yield* second.toolset.state).state, "Ready")
      })
  )

  it.live("a revoked refresh token moves the toolset to AuthRequired; a new login recovers it; no secret leaks", () => {
    const lines: Array<string> = []
    const capture = Logger.make(({ message, cause }) => {
      lines.push(JSON.stringify(message), String(cause))
    })
    return Effect.gen(function* () {
      const { server, spec, login, open, stored } = yield* setup()
      const target = spec()
      yield* login(target)
      const before = yield* stored(target)
      const { toolset } = yield* open(target)
      yield* toolset.start
      yield* Effect.promise(() => server.revoke(before!.tokens!.refresh_token!, before!.clientInformation!.client_id))
      server.refuseSeenTokens()

      const error = yield* Effect.flip(whoami(toolset))
      assert.strictEqual(error._tag, "AuthRequired")
      const failed = yield* inState(toolset, "Failed")
      assert.strictEqual(failed.lastError?.tag, "AuthRequired")
      assert.isUndefined((yield* stored(target))?.tokens)
      assert.strictEqual(server.grants("refresh_token"), 0)

      yield* login(target)
      yield* toolset.restart
      assert.include(yield* whoami(toolset), "client ")

      const after = yield* stored(target)
      const secrets = [
        before!.tokens!.access_token,
        before!.tokens!.refresh_token!,
        after!.tokens!.access_token,
        after!.tokens!.refresh_token!
      ]
      const shown = [
        JSON.stringify(failed),
        String(error),
        error.message,
        JSON.stringify(yield* toolset.state),
        ...lines
      ]
      for (const secret of secrets) {
        for (const text of shown) assert.notInclude(text, secret)
      }
      assert.isNotEmpty(lines)
    }).pipe(Effect.provide(Logger.layer([capture], { mergeWithExisting: true })))
  })

  it.live("the legacy SSE transport: no login is AuthRequired at once; after a login it connects and calls", () =>
    Effect.gen(function* () {
      const { spec, login, open } = yield* setup()
      const target = McpSpec.Sse.make({ url: `${spec().url}/sse` })
      const before = yield* open(target)
      assert.strictEqual((yield* Effect.flip(before.toolset.start))._tag, "AuthRequired")
      assert.strictEqual(yield* login(target), "browser")
      const { toolset } = yield* open(target)
      yield* toolset.start
      assert.include(yield* whoami(toolset), "client ")
    })
  )

  it.live("client credentials: no person, no browser, and the secret shows nowhere", () =>
    Effect.gen(function* () {
      const { server, spec, open, store } = yield* setup()
      const target = spec({
        clientId: server.machine.clientId,
        clientSecret: server.machine.clientSecret,
        scopes: ["mcp:tools"]
      })
      const { toolset } = yield* open(target)
      yield* toolset.start
      assert.strictEqual(yield* whoami(toolset), `client ${server.machine.clientId}`)
      assert.strictEqual(server.grants("client_credentials"), 1)
      assert.notInclude(JSON.stringify(yield* toolset.state), server.machine.clientSecret)
      assert.notInclude(McpSpec.describe(target), server.machine.clientSecret)
      // The token file keeps what the server handed out, not the configured secret.
      const file = NodeFs.readFileSync(
        store.pathOf({ serverUrl: target.url, clientId: server.machine.clientId }),
        "utf8"
      )
      assert.include(file, "access_token")
      assert.notInclude(file, server.machine.clientSecret)
    })
  )
})
