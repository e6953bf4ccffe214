/**
 * `toolvisor serve` serving all of MCP, as hosts meet it: the installed CLI in front of
 * server-everything (`ev`, over stdio), real SDK clients over streamable HTTP, the legacy SSE
 * transport and stdio. Prompts, resources, templates and completions pass through whole, only
 * prompt and tool names prefixed; lists come in pages with opaque cursors; unknown names are
 * invalid params; progress and log messages reach their own session only; a subscription
 * outlives a SIGKILL of the backend; a client that lost its stream resumes it with Last-Event-ID.
 */
import * as NodeFs from "node:fs"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import * as Procfs from "@toolvisor/core/internal/procfs"
import {
  allReady,
  closeAll,
  errorCode,
  everything,
  everythingEntry,
  freePort,
  mcpEntry,
  root,
  Session,
  until,
  writeConfig,
  yaml
} from "./helpers.ts"

const config = () => writeConfig(yaml([everythingEntry()]))

const gateways: Array<Session> = []
const clients: Array<Client> = []

afterEach(() => closeAll(clients, gateways))

/** `serve --http` on a free port, once its toolset is Ready. */
const serveHttp = async (args: ReadonlyArray<string> = [], env: NodeJS.ProcessEnv = {}, configFile = config()) => {
  const port = await freePort()
  const gateway = new Session(["serve", configFile, "--http", String(port), ...args], env)
  gateways.push(gateway)
  const base = `http://127.0.0.1:${port}`
  const headers: Record<string, string> =
    env.TOOLVISOR_HTTP_TOKEN === undefined ? {} : { authorization: `Bearer ${env.TOOLVISOR_HTTP_TOKEN}` }
  await until(allReady(base, 1, headers), 60_000)
  return { base, port, pid: gateway.child.pid ?? 0 }
}

/** A connected SDK client that keeps the log messages and resource updates it hears. */
const connect = async (transport: Transport) => {
  const client = new Client({ name: "surfaces-test", version: "1.0.0" })
  const heard = { logs: [] as Array<{ level: string; logger?: string | undefined }>, updated: [] as Array<string> }
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    heard.logs.push({ level: n.params.level, logger: n.params.logger })
  })
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    heard.updated.push(n.params.uri)
  })
  await client.connect(transport)
  clients.push(client)
  return { client, heard }
}

const http = (base: string) => connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))

/** server-everything itself, as the reference for what must pass through whole. */
const direct = () =>
  connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"], cwd: root }))

/** Every page of a list, following the cursors. */
const all = async <P extends { readonly nextCursor?: string | undefined }, A>(
  list: (cursor: string | undefined) => Promise<P>,
  itemsOf: (page: P) => ReadonlyArray<A>
) => {
  const items: Array<A> = []
  let cursor: string | undefined
  let pages = 0
  do {
    const page = await list(cursor)
    items.push(...itemsOf(page))
    cursor = page.nextCursor
    pages += 1
  } while (cursor !== undefined)
  return { items, pages }
}

const invalidParams = -32602

describe("serve: prompts, resources, completions, progress and logs", () => {
  it("HTTP: serves every surface whole, in pages, and unknown names are invalid params", async () => {
    const { base } = await serveHttp(["--page-size", "3"])
    const { client } = await http(base)
    const reference = await direct()
    assert.deepInclude(client.getServerCapabilities(), {
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
      logging: {}
    })

    const tools = await all(
      (cursor) => client.listTools(cursor === undefined ? {} : { cursor }),
      (page) => page.tools
    )
    assert.isAbove(tools.pages, 3)
    const theirs = (await reference.client.listTools()).tools
    const research = tools.items.find((t) => t.name === "ev_simulate-research-query")
    assert.deepInclude(research, { execution: { taskSupport: "required" } })
    for (const tool of theirs) {
      const ours = tools.items.find((t) => t.name === `ev_${tool.name}`)
      if (ours !== undefined) assert.deepStrictEqual(ours, { ...tool, name: `ev_${tool.name}` })
    }

    const prompts = await all(
      (cursor) => client.listPrompts(cursor === undefined ? {} : { cursor }),
      (page) => page.prompts
    )
    const theirPrompts = (await reference.client.listPrompts()).prompts
    assert.deepStrictEqual(
      prompts.items,
      theirPrompts.map((p) => ({ ...p, name: `ev_${p.name}` }))
    )
    const resources = await all(
      (cursor) => client.listResources(cursor === undefined ? {} : { cursor }),
      (page) => page.resources
    )
    assert.deepStrictEqual(resources.items, (await reference.client.listResources()).resources)
    const templates = await all(
      (cursor) => client.listResourceTemplates(cursor === undefined ? {} : { cursor }),
      (page) => page.resourceTemplates
    )
    assert.deepStrictEqual(templates.items, (await reference.client.listResourceTemplates()).resourceTemplates)

    assert.deepStrictEqual(
      await client.getPrompt({ name: "ev_args-prompt", arguments: { city: "Paris" } }),
      await reference.client.getPrompt({ name: "args-prompt", arguments: { city: "Paris" } })
    )
    const uri = (await reference.client.listResources()).resources[0]?.uri ?? ""
    assert.deepStrictEqual(await client.readResource({ uri }), await reference.client.readResource({ uri }))
    const completion = await client.complete({
      ref: { type: "ref/prompt", name: "ev_completable-prompt" },
      argument: { name: "department", value: "E" }
    })
    assert.deepStrictEqual(
      completion,
      await reference.client.complete({
        ref: { type: "ref/prompt", name: "completable-prompt" },
        argument: { name: "department", value: "E" }
      })
    )
    assert.isAbove(completion.completion.values.length, 0)

    const promptCursor = (await client.listPrompts()).nextCursor
    assert.isString(promptCursor)
    const forged = (text: string) => Buffer.from(text, "utf8").toString("base64url")
    // Cursors it never gave: not at a page boundary, not canonical, the first page's offset.
    for (const cursor of [
      "bogus",
      promptCursor ?? "",
      "eA",
      forged("tools:4"),
      forged("tools:0100"),
      forged("tools:0")
    ]) {
      assert.strictEqual(await errorCode(client.listTools({ cursor })), invalidParams, cursor)
    }
    assert.strictEqual(await errorCode(client.listResources({ cursor: "bogus" })), invalidParams)
    assert.strictEqual(await errorCode(client.callTool({ name: "ev_nope", arguments: {} })), invalidParams)
    assert.strictEqual(await errorCode(client.getPrompt({ name: "ev_nope" })), invalidParams)
    assert.strictEqual(await errorCode(client.readResource({ uri: "demo://nope" })), invalidParams)
    assert.strictEqual(await errorCode(client.subscribeResource({ uri: "demo://nope" })), invalidParams)
  }, 120_000)

  it("HTTP: progress and log messages reach their own session only, each at the level it set", async () => {
    const { base } = await serveHttp()
    const a = await http(base)
    const b = await http(base)
    const progressOf = (client: Client) => {
      const seen: Array<number> = []
      const done = client.callTool(
        { name: "ev_trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
        undefined,
        { onprogress: (p) => seen.push(p.progress) }
      )
      return { seen, done }
    }
    const [ofA, ofB] = [progressOf(a.client), progressOf(b.client)]
    await Promise.all([ofA.done, ofB.done])
    assert.deepStrictEqual(ofA.seen, [1, 2, 3, 4])
    assert.deepStrictEqual(ofB.seen, [1, 2, 3, 4])

    await a.client.setLoggingLevel("debug")
    await b.client.setLoggingLevel("emergency")
    const fromBackend = (heard: { logs: ReadonlyArray<{ level: string; logger?: string | undefined }> }) =>
      heard.logs.filter((l) => l.logger?.startsWith("ev") === true)
    await a.client.callTool({ name: "ev_toggle-simulated-logging", arguments: {} })
    try {
      await until(() => fromBackend(a.heard).length >= 3, 60_000)
    } finally {
      await a.client.callTool({ name: "ev_toggle-simulated-logging", arguments: {} })
    }
    assert.isTrue(
      fromBackend(b.heard).every((l) => l.level === "emergency"),
      JSON.stringify(b.heard.logs)
    )
    assert.isAbove(fromBackend(a.heard).filter((l) => l.level !== "emergency").length, fromBackend(b.heard).length - 3)
  }, 120_000)

  // A call with a progress token or `_meta` takes the registry's path, a plain one the fast path: both end at once.
  const carrying = [
    { what: "plain", _meta: undefined, onprogress: undefined },
    { what: "a progress token", _meta: undefined, onprogress: () => undefined },
    { what: "_meta", _meta: { "example.com/trace": "t-1" }, onprogress: undefined }
  ]
  for (const { what, _meta, onprogress } of carrying) {
    it(`HTTP: a client's cancellation ends the backend call at once (${what})`, async () => {
      const { base } = await serveHttp()
      const { client } = await http(base)
      const abort = new AbortController()
      const started = Date.now()
      const call = client.callTool(
        {
          name: "ev_trigger-long-running-operation",
          arguments: { duration: 30, steps: 30 },
          ...(_meta === undefined ? {} : { _meta })
        },
        undefined,
        { signal: abort.signal, ...(onprogress === undefined ? {} : { onprogress }) }
      )
      // Cancelled while in flight: the gateway's call into the toolset ends (Interrupted), not after 30 s.
      setTimeout(() => abort.abort(), 1_000)
      await call.catch(() => undefined)
      let metrics = ""
      const interrupted = async () => {
        metrics = await (await fetch(`${base}/metrics`)).text()
        return /toolvisor_tool_call_failures_total\{[^}]*Interrupted[^}]*\} 1/.test(metrics)
      }
      await until(interrupted, 10_000).catch(() => assert.fail(metrics))
      assert.isBelow(Date.now() - started, 20_000)
    }, 120_000)
  }

  it("HTTP: a subscription is this session's, and outlives a SIGKILL of the backend; lists, reads and prompts wait", async () => {
    const { base, pid } = await serveHttp()
    const a = await http(base)
    const b = await http(base)
    const uri = (await a.client.listResources()).resources[0]?.uri ?? ""
    await a.client.subscribeResource({ uri })
    await a.client.callTool({ name: "ev_toggle-subscriber-updates", arguments: {} })
    await until(() => a.heard.updated.includes(uri), 30_000)
    assert.deepStrictEqual(b.heard.updated, [])

    const backend = Procfs.pids().find(
      (child) =>
        Procfs.stat(child)?.ppid === pid &&
        NodeFs.readFileSync(`/proc/${child}/cmdline`, "utf8").includes("server-everything")
    )
    assert.isDefined(backend)
    const before = a.heard.updated.length
    process.kill(backend ?? 0, "SIGKILL")
    // At once, while the toolset restarts: the last-known listing, and a read that waits for it.
    assert.strictEqual((await b.client.listPrompts()).prompts.length, (await a.client.listPrompts()).prompts.length)
    assert.isAbove((await b.client.listPrompts()).prompts.length, 0)
    const [read, prompt] = await Promise.all([
      b.client.readResource({ uri }),
      b.client.getPrompt({ name: "ev_args-prompt", arguments: { city: "Paris" } })
    ])
    assert.strictEqual(read.contents[0]?.uri, uri)
    assert.include(JSON.stringify(prompt.messages), "Paris")
    // The subscription came back on the new server: the subscriber hears the resource may have changed.
    await until(() => a.heard.updated.length > before, 60_000)
    assert.deepStrictEqual(b.heard.updated, [])
  }, 120_000)

  it("a backend that changes only its prompts or resources: sessions hear list_changed, routes follow at once", async () => {
    // The fixture adds and removes prompts and resources on request, each with its list_changed.
    const { base } = await serveHttp([], { FIXTURE_SURFACES: "1" }, writeConfig(yaml([mcpEntry("fx")])))
    const { client } = await http(base)
    const heard = { prompts: 0, resources: 0 }
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
      heard.prompts += 1
    })
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      heard.resources += 1
    })
    const promptNames = async () => (await client.listPrompts()).prompts.map((p) => p.name)
    assert.include(await promptNames(), "fx_greet")

    await client.callTool({ name: "fx_add_prompt", arguments: { name: "fresh" } })
    await until(() => heard.prompts > 0, 30_000)
    assert.include(await promptNames(), "fx_fresh")
    assert.deepInclude((await client.getPrompt({ name: "fx_fresh" })).messages[0], {
      content: { type: "text", text: "Prompt fresh" }
    })
    await client.callTool({ name: "fx_remove", arguments: { name: "greet" } })
    await until(() => heard.prompts > 1, 30_000)
    assert.notInclude(await promptNames(), "fx_greet")
    assert.strictEqual(
      await errorCode(client.getPrompt({ name: "fx_greet", arguments: { who: "Ada" } })),
      invalidParams
    )

    await client.callTool({ name: "fx_add_resource", arguments: { uri: "fixture://added" } })
    await until(() => heard.resources > 0, 30_000)
    assert.include(
      (await client.listResources()).resources.map((r) => r.uri),
      "fixture://added"
    )
    await client.callTool({ name: "fx_remove", arguments: { name: "fixture://note" } })
    await until(() => heard.resources > 1, 30_000)
    assert.strictEqual(await errorCode(client.readResource({ uri: "fixture://note" })), invalidParams)
  }, 120_000)
})
