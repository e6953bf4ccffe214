/**
 * `serve --http` behind an OAuth authorization server, black-box: the bundled CLI with
 * `--jwt-issuer` and `--jwt-audience`, a real oidc-provider (the one the OAuth tests run) issuing
 * the tokens, and the SDK's own client with client credentials, which finds the issuer the way
 * the MCP authorization spec says — from the 401's resource metadata — and calls a tool.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Effect from "effect/Effect"
import * as OAuthServer from "../../../test/support/OAuthServer.ts"
import * as OAuthTokens from "../../../test/support/OAuthTokens.ts"
import { freePort, mcpEntry, runCli, Session, until, writeConfig, yaml } from "./helpers.ts"

/** The CLI in the test's scope: killed, and waited for, when the test ends. */
const serve = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => new Session(["serve", writeConfig(yaml([mcpEntry("fx")])), ...args])),
    (session) =>
      Effect.promise(async () => {
        session.child.kill("SIGTERM")
        await session.exited()
      })
  )

/** `serve --http` with `--jwt-issuer` a real authorization server whose tokens name it as audience, once it answers. */
const behindIssuer = Effect.gen(function* () {
  const port = yield* Effect.promise(freePort)
  const base = `http://127.0.0.1:${port}`
  const url = `${base}/mcp`
  const server = yield* OAuthServer.make({ callbackPort: 1, resources: [url] })
  const session = yield* serve(["--http", String(port), "--jwt-issuer", server.issuer, "--jwt-audience", url])
  yield* Effect.promise(() =>
    until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
  ).pipe(Effect.catch(() => Effect.die(new Error(`serve did not start:\n${session.stderr}`))))
  return { base, url, server }
})

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

const post = (url: string, headers: Readonly<Record<string, string>> = {}) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: initialize
    })
  )

describe("serve --http --jwt-issuer", () => {
  it.live("an SDK client finds the issuer through the 401, gets a token for the gateway and calls a tool", () =>
    Effect.gen(function* () {
      const { base, url, server } = yield* behindIssuer

      // The metadata names the issuer, so a client knows where to get a token.
      const metadata = JSON.parse(
        yield* Effect.promise(async () => (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).text())
      )
      assert.strictEqual(metadata.resource, url)
      assert.deepStrictEqual(metadata.authorization_servers, [server.issuer])

      const client = new Client({ name: "jwks-test", version: "1.0.0" })
      const authProvider = new ClientCredentialsProvider({
        clientId: server.machine.clientId,
        clientSecret: server.machine.clientSecret,
        scope: "mcp:tools",
        expectedIssuer: server.issuer
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }))),
        () => Effect.promise(() => client.close())
      )
      assert.strictEqual(server.grants("client_credentials"), 1)
      let answer = ""
      yield* Effect.promise(() =>
        until(async () => {
          const result = await client.callTool({ name: "fx_echo", arguments: { message: "signed in" } })
          answer = JSON.stringify(result.content)
          return result.isError !== true
        })
      )
      assert.include(answer, "signed in")

      // The same token opens the status routes; one for another resource opens nothing.
      const token = yield* OAuthTokens.forResource(server, url)
      const status = yield* Effect.promise(() =>
        fetch(`${base}/status`, { headers: { authorization: `Bearer ${token}` } })
      )
      assert.strictEqual(status.status, 200)
      const elsewhere = yield* OAuthTokens.forResource(server, server.mcpUrl)
      const refused = yield* post(url, { authorization: `Bearer ${elsewhere}` })
      assert.strictEqual(refused.status, 401)
      assert.include(refused.headers.get("www-authenticate") ?? "", 'error="invalid_token"')
      const bare = yield* post(url)
      assert.strictEqual(bare.status, 401)
      assert.include(
        bare.headers.get("www-authenticate") ?? "",
        `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`
      )
      assert.strictEqual((yield* post(url, { authorization: `Bearer ${token}` })).status, 200)
    })
  )

  it.live(
    "a session is its opener's: another user's valid token with its id finds no session, to call, read or end",
    () =>
      Effect.gen(function* () {
        const { url, server } = yield* behindIssuer
        const alice = { authorization: `Bearer ${yield* OAuthTokens.forResource(server, url)}` }
        const bob = { authorization: `Bearer ${yield* OAuthTokens.forResource(server, url, server.otherMachine)}` }
        const opened = yield* post(url, alice)
        assert.strictEqual(opened.status, 200)
        const id = opened.headers.get("mcp-session-id") ?? ""
        yield* Effect.promise(() => opened.text())
        const request = (who: Readonly<Record<string, string>>, method: string, body?: unknown) =>
          Effect.promise(async () => {
            const response = await fetch(url, {
              method,
              headers: {
                ...who,
                "mcp-session-id": id,
                "mcp-protocol-version": "2025-06-18",
                "content-type": "application/json",
                accept: "application/json, text/event-stream",
                ...(method === "GET" ? { "last-event-id": "1" } : {})
              },
              ...(body === undefined ? {} : { body: JSON.stringify(body) })
            })
            return { status: response.status, text: method === "GET" && response.ok ? "" : await response.text() }
          })
        const call = {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "fx_echo", arguments: { message: "mine" } }
        }
        for (const method of ["POST", "GET", "DELETE"]) {
          const tried = yield* request(bob, method, method === "POST" ? call : undefined)
          assert.strictEqual(tried.status, 404, `${method}: ${tried.text}`)
          assert.include(tried.text, "Session not found")
        }
        const mine = yield* request(alice, "POST", call)
        assert.strictEqual(mine.status, 200)
        assert.include(mine.text, "mine")
      })
  )

  it.live("an issuer whose keys cannot be found is one line at start, and --jwt-issuer needs an audience", () =>
    Effect.gen(function* () {
      const server = yield* OAuthServer.make({ callbackPort: 1 })
      const config = writeConfig(yaml([mcpEntry("fx")]))
      const noMetadata = yield* Effect.promise(() =>
        runCli(["serve", config, "--http", "0", "--jwt-issuer", server.mcpUrl, "--jwt-audience", "http://x/mcp"])
      )
      assert.strictEqual(noMetadata.code, 1, noMetadata.stderr)
      assert.match(noMetadata.stderr.trim(), /^\S+ ERROR --jwt-issuer: .*publishes no OAuth or OpenID metadata/)
      assert.lengthOf(noMetadata.stderr.trim().split("\n"), 1)
      const noAudience = yield* Effect.promise(() =>
        runCli(["serve", config, "--http", "0", "--jwt-issuer", server.issuer])
      )
      assert.strictEqual(noAudience.code, 2)
      assert.include(noAudience.stderr, "--jwt-issuer needs --jwt-audience")
    })
  )
})
