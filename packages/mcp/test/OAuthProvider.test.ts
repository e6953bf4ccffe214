/** The provider's pure parts and the token store, without a server. */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { LifecycleError, Redaction } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as McpSpec from "../src/McpSpec.ts"
import * as OAuthProvider from "../src/OAuthProvider.ts"
import * as TokenStore from "../src/TokenStore.ts"

const tempStore = Effect.acquireRelease(
  Effect.sync(() => TokenStore.make(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-store-")))),
  (store) => Effect.sync(() => NodeFs.rmSync(store.dir, { recursive: true, force: true }))
)

describe("OAuthProvider", () => {
  it("a 401 the SDK gave up on is AuthRequired; other failures are classified as usual", () => {
    assert.strictEqual(OAuthProvider.classify("r", new UnauthorizedError())._tag, "AuthRequired")
    assert.strictEqual(
      OAuthProvider.classify("r", new StreamableHTTPError(401, "Server returned 401 after successful authentication"))
        ._tag,
      "AuthRequired"
    )
    assert.strictEqual(OAuthProvider.classify("r", new StreamableHTTPError(500, "boom"))._tag, "TransportError")
  })

  it("a secret without a callback means client credentials; a callback port means a browser login", () => {
    assert.isTrue(OAuthProvider.usesClientCredentials(new McpSpec.OAuth({ clientId: "m", clientSecret: "s" })))
    assert.isFalse(
      OAuthProvider.usesClientCredentials(new McpSpec.OAuth({ clientId: "m", clientSecret: "s", callbackPort: 9 }))
    )
    assert.isFalse(OAuthProvider.usesClientCredentials(undefined))
  })

  it("the redirect URI is loopback, or the configured one with its port filled in", () => {
    assert.strictEqual(OAuthProvider.redirectUrlFor(undefined, 4321), "http://127.0.0.1:4321/callback")
    assert.strictEqual(
      OAuthProvider.redirectUrlFor(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: docker-agent's placeholder
        new McpSpec.OAuth({ callbackRedirectURL: "http://localhost:${callbackPort}/oauth" }),
        4321
      ),
      "http://localhost:4321/oauth"
    )
  })

  it.effect("a background provider with no stored login fails at the first step, before any discovery", () =>
    Effect.gen(function* () {
      const store = yield* tempStore
      const provider = OAuthProvider.make({ name: "r", serverUrl: "http://127.0.0.1:9/mcp", store })
      const error = yield* Effect.flip(Effect.tryPromise(async () => provider.discoveryState?.()))
      assert.include(String(error.cause), "authentication required")
      const refused = yield* Effect.flip(
        Effect.tryPromise({
          try: async () => provider.redirectToAuthorization(new URL("http://127.0.0.1:9/authorize")),
          catch: (cause) => cause
        })
      )
      assert.instanceOf(refused, LifecycleError.AuthRequired)
    })
  )

  it.effect("stored tokens granted for fewer scopes than the config asks for are not used", () =>
    Effect.gen(function* () {
      const store = yield* tempStore
      const serverUrl = "http://127.0.0.1:9/mcp"
      const tokens = { access_token: "tok-read", token_type: "Bearer", scope: "read" }
      yield* Effect.promise(() => store.save({ serverUrl, tokens }))
      const tokensFor = (scopes: ReadonlyArray<string>) =>
        Effect.promise(async () =>
          OAuthProvider.make({ name: "r", serverUrl, store, oauth: new McpSpec.OAuth({ scopes }) }).tokens()
        )
      assert.strictEqual((yield* tokensFor(["read"]))?.access_token, "tok-read")
      assert.isUndefined(yield* tokensFor(["read", "write"]))
    })
  )

  it.effect("every token it reads or saves becomes a secret of the toolset's redactor", () =>
    Effect.gen(function* () {
      const store = yield* tempStore
      const serverUrl = "http://127.0.0.1:9/mcp"
      yield* Effect.promise(() =>
        store.save({
          serverUrl,
          tokens: { access_token: "stored-access-1", token_type: "Bearer", refresh_token: "stored-refresh-2" }
        })
      )
      const redactor = Redaction.make()
      const provider = OAuthProvider.make({ name: "r", serverUrl, store, redactor })
      yield* Effect.promise(async () => provider.tokens())
      assert.strictEqual(redactor.values("stored-access-1 stored-refresh-2"), "*** ***")
      yield* Effect.promise(async () => provider.saveTokens({ access_token: "saved-access-3", token_type: "Bearer" }))
      assert.strictEqual(redactor.values("got saved-access-3"), "got ***")
    })
  )
})

describe("TokenStore", () => {
  it.effect("files are 0600 and keyed by server and client: a token is never read for another server", () =>
    Effect.gen(function* () {
      const store = yield* tempStore
      const a = { serverUrl: "https://a.example/mcp" }
      yield* Effect.promise(() => store.save({ ...a, tokens: { access_token: "tok-a", token_type: "Bearer" } }))
      assert.strictEqual(NodeFs.statSync(store.pathOf(a)).mode & 0o777, 0o600)
      assert.strictEqual((yield* Effect.promise(() => store.load(a)))?.tokens?.access_token, "tok-a")
      assert.isUndefined(yield* Effect.promise(() => store.load({ serverUrl: "https://b.example/mcp" })))
      assert.isUndefined(yield* Effect.promise(() => store.load({ ...a, clientId: "other" })))
      // A file copied under another server's name is not trusted either.
      NodeFs.copyFileSync(store.pathOf(a), store.pathOf({ serverUrl: "https://b.example/mcp" }))
      assert.isUndefined(yield* Effect.promise(() => store.load({ serverUrl: "https://b.example/mcp" })))
      assert.isTrue(yield* TokenStore.logout(store, a))
      assert.isFalse(yield* TokenStore.logout(store, a))
    })
  )
})
