/**
 * `toolvisor serve` with deferred tools and tool groups, as hosts meet it: the installed CLI
 * serving the fixture server (`fx`, its `echo` deferred) and server-everything (`ev`, every tool
 * deferred), real SDK clients over streamable HTTP and stdio. A session lists the eager tools and
 * `search_tools`; its search loads tools into its own list and tells it alone; a deferred tool is
 * callable by name without a search; a session on `/mcp/<group>` (or `--group` on stdio) sees,
 * searches and calls only its group's tools.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Predicate from "effect/Predicate"
import {
  cliArgs,
  everything,
  fixtureServer,
  freePort,
  mcpEntry,
  root,
  runCli,
  Session,
  until,
  writeConfig,
  yaml
} from "./helpers.ts"

const config = () =>
  writeConfig(
    [
      "groups:",
      "  fixture: [fx_*]",
      "  everything: [ev_*]",
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: fx",
      `        command: "${process.execPath}"`,
      `        args: ["${fixtureServer}"]`,
      "        defer: [echo]",
      "      - type: mcp",
      "        name: ev",
      `        command: "${process.execPath}"`,
      `        args: ["${everything}", "stdio"]`,
      "        defer: true"
    ].join("\n")
  )

const gateways: Array<Session> = []
const clients: Array<Client> = []

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  for (const gateway of gateways.splice(0)) {
    gateway.child.kill("SIGTERM")
    await gateway.exited()
  }
})

/** `serve --http` on a free port, once both toolsets are Ready (so no catalog change follows). */
const serveHttp = async (env: NodeJS.ProcessEnv = {}, headers: Readonly<Record<string, string>> = {}) => {
  const port = await freePort()
  const gateway = new Session(["serve", config(), "--http", String(port)], env)
  gateways.push(gateway)
  const base = `http://127.0.0.1:${port}`
  const ready = async () => {
    const response = await fetch(`${base}/status`, { headers }).catch(() => undefined)
    if (response?.ok !== true) return false
    const rows: unknown = await response.json()
    return (
      Array.isArray(rows) &&
      rows.length === 2 &&
      rows.every((row) => Predicate.hasProperty(row, "state") && row.state === "Ready")
    )
  }
  await until(ready, 60_000)
  return { base, port }
}

/** A connected SDK client counting the `tools/list_changed` it hears. */
const connect = async (transport: Transport) => {
  const client = new Client({ name: "groups-test", version: "1.0.0" })
  const heard = { listChanged: 0 }
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    heard.listChanged += 1
  })
  await client.connect(transport)
  clients.push(client)
  return { client, heard, transport }
}

/**
 * A client over streamable HTTP whose standalone SSE stream (the GET that carries notifications
 * not tied to a request) is open: a `list_changed` sent to every session would reach it.
 */
const httpClient = async (url: string) => {
  let listening: () => void = () => {}
  const open = new Promise<void>((resolve) => (listening = resolve))
  const watched: FetchLike = async (input, init) => {
    const response = await fetch(input, init)
    if (init?.method === "GET" && response.ok) listening()
    return response
  }
  const connected = await connect(new StreamableHTTPClientTransport(new URL(url), { fetch: watched }))
  await open
  return connected
}

const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).sort()

const text = (result: unknown): string => JSON.stringify(result)

const search = (client: Client, query: string) => client.callTool({ name: "search_tools", arguments: { query } })

/** The JSON-RPC error code a call fails with; undefined when it answered. */
const errorCode = async (call: Promise<unknown>) => {
  try {
    await call
    return undefined
  } catch (error) {
    return error instanceof McpError ? error.code : Number.NaN
  }
}

describe("serve: deferred tools and tool groups", () => {
  it("HTTP: each session lists eager tools and search_tools; a search loads tools for that session alone", async () => {
    const { base } = await serveHttp()
    const a = await httpClient(`${base}/mcp`)
    const b = await httpClient(`${base}/mcp`)
    const before = await names(a.client)
    assert.include(before, "search_tools")
    assert.include(before, "fx_pid")
    assert.include(before, "toolvisor_status")
    assert.notInclude(before, "fx_echo", "a deferred tool is not listed before a search")
    assert.isFalse(
      before.some((name) => name.startsWith("ev_")),
      "every ev tool is deferred"
    )
    assert.deepStrictEqual(await names(b.client), before)

    const found = await search(a.client, "add two numbers and return the sum")
    assert.include(text(found), "ev_get-sum")
    await until(() => a.heard.listChanged === 1)
    const after = await names(a.client)
    assert.include(after, "ev_get-sum")
    assert.includeMembers(after, before)

    // The other session's list is as it was, and it was told nothing.
    assert.deepStrictEqual(await names(b.client), before)
    assert.strictEqual(b.heard.listChanged, 0)

    // A deferred tool is callable by name without a search (a host that cached its name).
    const echoed = await b.client.callTool({ name: "fx_echo", arguments: { message: "cached name" } })
    assert.include(text(echoed), "cached name")
    const sum = await b.client.callTool({ name: "ev_get-sum", arguments: { a: 2, b: 3 } })
    assert.include(text(sum), "5")
    assert.deepStrictEqual(await names(b.client), before, "calling does not load")
  }, 120_000)

  it("HTTP: sessions on two groups each list, search and call only their group's tools", async () => {
    const { base } = await serveHttp()
    const fixture = await httpClient(`${base}/mcp/fixture`)
    const ev = await httpClient(`${base}/mcp/everything`)

    const fixtureTools = await names(fixture.client)
    assert.isTrue(
      fixtureTools.every((name) => name.startsWith("fx_") || ["search_tools", "toolvisor_status"].includes(name))
    )
    assert.include(fixtureTools, "fx_pid")
    assert.include(fixtureTools, "search_tools", "fx_echo is deferred")
    assert.deepStrictEqual(await names(ev.client), ["search_tools", "toolvisor_status"])

    // Both servers have an echo: each session's search finds its group's only.
    const fromFixture = text(await search(fixture.client, "echo"))
    assert.include(fromFixture, "fx_echo")
    assert.notInclude(fromFixture, "ev_")
    const fromEv = text(await search(ev.client, "echo"))
    assert.include(fromEv, "ev_echo")
    assert.notInclude(fromEv, "fx_")
    assert.include(text(await search(ev.client, "select:fx_echo")), 'No tool named \\"fx_echo\\"')
    await until(() => fixture.heard.listChanged === 1 && ev.heard.listChanged === 1)
    assert.include(await names(fixture.client), "fx_echo")
    assert.deepStrictEqual(await names(ev.client), ["ev_echo", "search_tools", "toolvisor_status"])

    // A call outside the group is invalid params, never routed; inside, deferred or not, it works.
    assert.strictEqual(
      await errorCode(ev.client.callTool({ name: "fx_echo", arguments: { message: "leak" } })),
      ErrorCode.InvalidParams
    )
    assert.strictEqual(
      await errorCode(fixture.client.callTool({ name: "ev_get-sum", arguments: { a: 1, b: 1 } })),
      ErrorCode.InvalidParams
    )
    assert.include(text(await ev.client.callTool({ name: "ev_get-sum", arguments: { a: 2, b: 2 } })), "4")
    assert.include(text(await fixture.client.callTool({ name: "fx_echo", arguments: { message: "in" } })), "in")

    // A session answers on its own path only: its id is no key to another group.
    const id = fixture.transport instanceof StreamableHTTPClientTransport ? fixture.transport.sessionId : undefined
    assert.isString(id)
    const elsewhere = await fetch(`${base}/mcp/everything`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": id ?? "",
        "mcp-protocol-version": "2025-06-18"
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" })
    })
    assert.strictEqual(elsewhere.status, 404)
    assert.include(await elsewhere.text(), "Session not found")

    const unknown = await fetch(`${base}/mcp/nope`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })
    })
    assert.strictEqual(unknown.status, 404)
    const body = await unknown.text()
    assert.include(body, '"jsonrpc":"2.0"')
    assert.include(body, 'no tool group \\"nope\\"; the config names everything, fixture')
  }, 120_000)

  it("HTTP: /mcp/<group> is behind the same token as /mcp, and an unknown group is not told before it", async () => {
    const token = "groups-test-token"
    const bearer = { authorization: `Bearer ${token}` }
    const { base } = await serveHttp({ TOOLVISOR_HTTP_TOKEN: token }, bearer)
    const post = (path: string, headers: Readonly<Record<string, string>> = {}) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
        })
      })
    for (const path of ["/mcp", "/mcp/fixture", "/mcp/nope"]) {
      const refused = await post(path)
      assert.strictEqual(refused.status, 401, path)
      assert.notInclude(await refused.text(), "fixture")
    }
    assert.strictEqual((await post("/mcp/fixture", bearer)).status, 200)
    assert.strictEqual((await post("/mcp/nope", bearer)).status, 404)
  }, 120_000)

  it("stdio: --group serves one group, deferral included; a call outside it is invalid params", async () => {
    const { client, heard } = await connect(
      new StdioClientTransport({
        command: process.execPath,
        args: cliArgs(["serve", config(), "--group", "everything"]),
        cwd: root,
        stderr: "pipe"
      })
    )
    assert.deepStrictEqual(await names(client), ["search_tools", "toolvisor_status"])
    assert.strictEqual(await errorCode(client.callTool({ name: "fx_pid", arguments: {} })), ErrorCode.InvalidParams)
    // Callable by name before any search.
    assert.include(text(await client.callTool({ name: "ev_echo", arguments: { message: "by name" } })), "by name")
    const found = text(await search(client, "sum of two numbers"))
    assert.include(found, "ev_get-sum")
    assert.notInclude(found, "fx_")
    await until(() => heard.listChanged >= 1)
    assert.include(await names(client), "ev_get-sum")
  }, 120_000)

  it("stdio: deferral without a group lists eager tools and search_tools, and a search adds what it found", async () => {
    const { client, heard } = await connect(
      new StdioClientTransport({
        command: process.execPath,
        args: cliArgs(["serve", config()]),
        cwd: root,
        stderr: "pipe"
      })
    )
    const before = await names(client)
    assert.includeMembers(before, ["fx_pid", "search_tools", "toolvisor_status"])
    assert.notInclude(before, "fx_echo")
    assert.include(text(await client.callTool({ name: "fx_echo", arguments: { message: "no search" } })), "no search")
    const listed = heard.listChanged
    assert.include(text(await search(client, "select:fx_echo")), "fx_echo")
    await until(() => heard.listChanged > listed)
    assert.include(await names(client), "fx_echo")
  }, 120_000)

  it("stdio: the gateway's search_tools and toolvisor_status keep their names over a toolset's tools of those names", async () => {
    const shadowing = writeConfig(
      yaml([
        mcpEntry("search", ["        env: { FIXTURE_EXTRA_TOOLS: tools }", "        defer: [echo]"]),
        mcpEntry("toolvisor", ["        env: { FIXTURE_EXTRA_TOOLS: status }"])
      ])
    )
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", shadowing]),
      cwd: root,
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const { client } = await connect(transport)
    const listed = await names(client)
    assert.strictEqual(listed.filter((name) => name === "search_tools").length, 1, listed.join(" "))
    assert.strictEqual(listed.filter((name) => name === "toolvisor_status").length, 1, listed.join(" "))
    const found = text(await search(client, "select:search_echo"))
    assert.include(found, "search_echo")
    assert.notInclude(found, "answered by the fixture")
    const status = text(await client.callTool({ name: "toolvisor_status", arguments: {} }))
    assert.notInclude(status, "answered by the fixture")
    assert.include(status, "search")
    // The user is told why those tools are missing, once each.
    for (const name of ["search_tools", "toolvisor_status"]) {
      await until(() => stderr.includes(`its tool ${name} is hidden by the gateway's own ${name}`))
      assert.strictEqual(stderr.split(`its tool ${name} is hidden`).length, 2, stderr)
    }
  }, 120_000)

  it("stdio: an unknown --group is a usage error naming the groups; --group with --http is one too", async () => {
    const finished = await runCli(["serve", config(), "--group", "fixtrue"])
    assert.strictEqual(finished.code, 2)
    assert.include(
      finished.stderr,
      '--group: no tool group "fixtrue" (did you mean "fixture"?); the config names everything, fixture'
    )
    const http = await runCli(["serve", config(), "--http", "0", "--group", "fixture"])
    assert.strictEqual(http.code, 2)
    assert.include(http.stderr, "/mcp/<group>")
  }, 60_000)
})
