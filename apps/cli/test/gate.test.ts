/**
 * The one gate of `serve --http`, black-box: the bundled CLI on a real port, raw HTTP and the
 * SDK's own client against it. `/mcp` answers to the same token, Host and Origin rules as the
 * status routes; a refusal says how to authenticate (RFC 9728); every route forbids framing.
 */
import * as NodeHttp from "node:http"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { freePort, mcpEntry, Session, until, writeConfig, yaml } from "./helpers.ts"

const sessions: Array<Session> = []
const clients: Array<Client> = []

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGTERM")
    await session.exited()
  }
})

/** Starts `serve --http` on the fixture server with `args` and `env`, and waits until it answers. */
const serve = async (args: ReadonlyArray<string> = [], env: NodeJS.ProcessEnv = {}) => {
  const port = await freePort()
  const config = writeConfig(yaml([mcpEntry("fx")]))
  const session = new Session(["serve", config, "--http", String(port), ...args], env)
  sessions.push(session)
  const base = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
  return { base, port }
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
}

/** A JSON-RPC POST to `/mcp` as a client without the SDK sends it. */
const post = (base: string, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  fetch(`${base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body)
  })

/** fetch cannot set `Host`; a DNS-rebinding page's request carries its own domain there. */
const postWithHost = (base: string, host: string, headers: Readonly<Record<string, string>> = {}) =>
  new Promise<number | undefined>((resolve, reject) => {
    const request = NodeHttp.request(
      `${base}/mcp`,
      {
        method: "POST",
        headers: {
          host,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers
        }
      },
      (response) => {
        response.resume()
        resolve(response.statusCode)
      }
    )
    request.once("error", reject)
    request.end(JSON.stringify(initialize))
  })

const sdkClient = async (base: string, headers: Readonly<Record<string, string>>) => {
  const client = new Client({ name: "gate-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }))
  clients.push(client)
  return client
}

/** Calls fx_echo until the toolset is Ready (before that the call answers isError). */
const echoThrough = async (client: Client, message: string) => {
  let text = ""
  await until(async () => {
    const result = await client.callTool({ name: "fx_echo", arguments: { message } })
    text = JSON.stringify(result.content)
    return result.isError !== true
  })
  return text
}

const token = "gate-token-5b1e9f0c"
const bearer = { authorization: `Bearer ${token}` }

describe("serve --http: one gate for /mcp and the status routes", () => {
  it("with a token on loopback, /mcp refuses initialize without it or with a wrong one (401), and serves its holder", async () => {
    const { base } = await serve([], { TOOLVISOR_HTTP_TOKEN: token })
    const bare = await post(base, initialize)
    assert.strictEqual(bare.status, 401)
    const challenge = bare.headers.get("www-authenticate") ?? ""
    assert.match(challenge, /^Bearer /)
    assert.include(challenge, `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`)
    assert.notInclude(await bare.text(), "toolvisor")

    const wrong = await post(base, initialize, { authorization: "Bearer not-the-token" })
    assert.strictEqual(wrong.status, 401)
    assert.include(wrong.headers.get("www-authenticate") ?? "", 'error="invalid_token"')
    assert.strictEqual((await post(base, initialize, { authorization: token })).status, 401)

    // The status routes answer to the same token.
    assert.strictEqual((await fetch(`${base}/status`)).status, 401)
    assert.strictEqual((await fetch(`${base}/status`, { headers: bearer })).status, 200)
    assert.strictEqual((await fetch(`${base}/healthz`)).status, 200)

    const client = await sdkClient(base, bearer)
    assert.include(await echoThrough(client, "through the gate"), "through the gate")
  })

  it("off loopback the token is mandatory, and guards initialize and tools/call on /mcp", async () => {
    const { base } = await serve(["--host", "0.0.0.0"], { TOOLVISOR_HTTP_TOKEN: token })
    assert.strictEqual((await post(base, initialize)).status, 401)
    assert.strictEqual((await fetch(`${base}/status`)).status, 401)

    const opened = await post(base, initialize, bearer)
    assert.strictEqual(opened.status, 200)
    const session = opened.headers.get("mcp-session-id") ?? ""
    assert.isNotEmpty(session)
    await opened.text()
    const call = {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "fx_echo", arguments: { message: "x" } }
    }
    const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" }
    assert.strictEqual((await post(base, call, headers)).status, 401)
    const called = await post(base, call, { ...headers, ...bearer })
    assert.strictEqual(called.status, 200)
    await called.text()
  })

  it("a foreign Origin or Host is refused on /mcp as on /status (403), token or not", async () => {
    const open = await serve()
    assert.strictEqual((await post(open.base, initialize, { origin: "http://evil.example" })).status, 403)
    assert.strictEqual((await post(open.base, initialize, { origin: "null" })).status, 403)
    assert.strictEqual(await postWithHost(open.base, "evil.example"), 403)
    assert.strictEqual(await postWithHost(open.base, "evil.example:80"), 403)
    // Its own origin, and a client that sends none (not a browser), pass.
    assert.strictEqual((await post(open.base, initialize, { origin: open.base })).status, 200)
    assert.strictEqual(await postWithHost(open.base, `localhost:${open.port}`), 200)

    const guarded = await serve([], { TOOLVISOR_HTTP_TOKEN: token })
    assert.strictEqual((await post(guarded.base, initialize, { ...bearer, origin: "http://evil.example" })).status, 403)
    assert.strictEqual(await postWithHost(guarded.base, "evil.example", bearer), 403)
  })

  it("the 401 points at protected-resource metadata (RFC 9728) describing the gateway", async () => {
    const { base } = await serve([], { TOOLVISOR_HTTP_TOKEN: token })
    const challenge = (await post(base, initialize)).headers.get("www-authenticate") ?? ""
    const url = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
    assert.isDefined(url)
    for (const at of [url ?? "", `${base}/.well-known/oauth-protected-resource`]) {
      const response = await fetch(at)
      assert.strictEqual(response.status, 200, at)
      assert.include(response.headers.get("content-type") ?? "", "application/json")
      const metadata = JSON.parse(await response.text())
      assert.strictEqual(metadata.resource, `${base}/mcp`)
      assert.deepStrictEqual(metadata.bearer_methods_supported, ["header"])
      // A static token: no authorization server to send the client to.
      assert.notProperty(metadata, "authorization_servers")
    }
  })

  it("a path no route takes, or a method its route does not, is a JSON 404 that names the routes", async () => {
    const { base } = await serve([], { TOOLVISOR_HTTP_TOKEN: token })
    for (const [method, path] of [
      ["GET", "/nowhere"],
      ["POST", "/status"],
      ["DELETE", "/toolsets/fx"]
    ] as const) {
      const response = await fetch(`${base}${path}`, { method, headers: bearer })
      assert.strictEqual(response.status, 404, `${method} ${path}`)
      assert.strictEqual(response.headers.get("content-type"), "application/json")
      const { error } = (await response.json()) as { readonly error: string }
      assert.include(error, `Not found: ${method} ${path}; the status routes are GET /status`)
    }
    // HEAD still finds its GET route.
    assert.strictEqual((await fetch(`${base}/status`, { method: "HEAD", headers: bearer })).status, 200)
  })

  it("every route forbids framing and sniffing: the dashboard, JSON, /mcp, refusals and 404s", async () => {
    const { base } = await serve([], { TOOLVISOR_HTTP_TOKEN: token })
    const responses = [
      await fetch(`${base}/`),
      await fetch(`${base}/status`, { headers: bearer }),
      await fetch(`${base}/status`),
      await fetch(`${base}/healthz`),
      await fetch(`${base}/nowhere`),
      await fetch(`${base}/.well-known/oauth-protected-resource`),
      await post(base, initialize),
      await post(base, initialize, bearer),
      await post(base, initialize, { ...bearer, origin: "http://evil.example" })
    ]
    for (const response of responses) {
      const where = `${response.url} ${response.status}`
      assert.strictEqual(response.headers.get("x-frame-options"), "DENY", where)
      assert.include(response.headers.get("content-security-policy") ?? "", "frame-ancestors 'none'", where)
      assert.strictEqual(response.headers.get("x-content-type-options"), "nosniff", where)
      assert.strictEqual(response.headers.get("referrer-policy"), "no-referrer", where)
      await response.body?.cancel()
    }
  })
})
