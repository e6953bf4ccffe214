/**
 * `toolvisor serve --http` for clients whose stream breaks and for older hosts, black-box: the
 * installed CLI in front of the fixture server (`fx`) and server-everything (`ev`). A client whose
 * POST stream was cut while its call ran comes back with `Last-Event-ID` and gets the rest of the
 * call (progress and answer) from the session's event store. The legacy SSE transport (`GET /sse`
 * then `POST /messages?sessionId=…`) lists and calls tools, behind the same gate, groups and
 * session cap as `/mcp`, its sessions apart from `/mcp`'s; a body that is not one JSON-RPC message
 * (one nested 100 000 deep) is refused as `/mcp` refuses it; a client that stops reading its stream
 * loses its session instead of growing the gateway's memory.
 */
import * as NodeHttp from "node:http"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Predicate from "effect/Predicate"
import {
  allReady,
  closeAll,
  everythingEntry,
  freePort,
  mcpEntry,
  Session,
  until,
  writeConfig,
  yaml
} from "./helpers.ts"
import { openSessions } from "./serve-http.ts"

const config = () => writeConfig(["groups:", "  fixture: [fx_*]", yaml([mcpEntry("fx"), everythingEntry()])].join("\n"))

const gateways: Array<Session> = []
const clients: Array<Client> = []

afterEach(() => closeAll(clients, gateways))

/** `serve --http` on a free port, once both toolsets are Ready. */
const serveHttp = async (args: ReadonlyArray<string> = [], token?: string) => {
  const port = await freePort()
  const env = token === undefined ? {} : { TOOLVISOR_HTTP_TOKEN: token }
  gateways.push(new Session(["serve", config(), "--http", String(port), ...args], env))
  const base = `http://127.0.0.1:${port}`
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
  await until(allReady(base, 2, headers), 60_000)
  return { base, port, headers }
}

/**
 * An SDK client over the legacy SSE transport, sending `headers` on its stream and its posts;
 * `session` is the id its posts carry (the transport does not expose it).
 */
const sseClient = async (url: string, headers: Readonly<Record<string, string>> = {}) => {
  const client = new Client({ name: "sse-test", version: "1.0.0" })
  let session = ""
  const transport = new SSEClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: (input, init) => {
      session = new URL(String(input)).searchParams.get("sessionId") ?? session
      return fetch(input, init)
    }
  })
  await client.connect(transport)
  clients.push(client)
  return { client, session: () => session }
}

interface Event {
  readonly id: string | undefined
  readonly data: string
}

/** The events of an SSE body, as they arrive. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<Event> {
  const decoder = new TextDecoder()
  let buffered = ""
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true })
    for (let end = buffered.indexOf("\n\n"); end !== -1; end = buffered.indexOf("\n\n")) {
      const lines = buffered.slice(0, end).split("\n")
      buffered = buffered.slice(end + 2)
      const field = (name: string) =>
        lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trimStart())
      yield { id: field("id")[0], data: field("data").join("\n") }
    }
  }
}

/** The JSON-RPC message of an event; undefined for a priming event (no data). */
const messageOf = (event: Event): { readonly [key: string]: unknown } | undefined =>
  event.data === "" ? undefined : JSON.parse(event.data)

const progressOf = (message: { readonly [key: string]: unknown } | undefined) =>
  message?.method === "notifications/progress" && Predicate.hasProperty(message.params, "progress")
    ? message.params.progress
    : undefined

const streamable = (session?: string) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
  ...(session === undefined ? {} : { "mcp-session-id": session })
})

describe("serve: resumability and the legacy SSE transport", () => {
  it("HTTP: a client whose stream was cut during a call gets the rest with Last-Event-ID", async () => {
    const { base } = await serveHttp()
    const post = (body: unknown, session?: string, signal?: AbortSignal) =>
      fetch(`${base}/mcp`, {
        method: "POST",
        headers: streamable(session),
        body: JSON.stringify(body),
        ...(signal === undefined ? {} : { signal })
      })
    const opened = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "resume-test", version: "1" } }
    })
    const session = opened.headers.get("mcp-session-id") ?? undefined
    await opened.text()
    assert.isDefined(session)
    assert.strictEqual((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session)).status, 202)

    const cut = new AbortController()
    const call = await post(
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: {
          name: "ev_trigger-long-running-operation",
          arguments: { duration: 3, steps: 6 },
          _meta: { progressToken: "p" }
        }
      },
      session,
      cut.signal
    )
    const before: Array<unknown> = []
    let last: string | undefined
    for await (const event of events(call.body ?? new ReadableStream())) {
      last = event.id ?? last
      const progress = progressOf(messageOf(event))
      if (progress !== undefined) before.push(progress)
      if (before.length === 2) break
    }
    cut.abort()
    assert.deepStrictEqual(before, [1, 2])
    assert.isDefined(last)
    // Away until the call is over: what follows comes from the store alone.
    const callsDone = async () =>
      /toolvisor_tool_call_duration_ms_count\{[^}]*toolset="ev"[^}]*\} 1/.test(
        await (await fetch(`${base}/metrics`)).text()
      )
    await until(callsDone, 30_000)

    // The call is over: the resumed stream brings what was missed, its answer last, and ends (it
    // was held open for events that never come, and kept the session from going idle).
    const resume = (from: string) =>
      fetch(`${base}/mcp`, {
        headers: { ...streamable(session), accept: "text/event-stream", "last-event-id": from },
        signal: AbortSignal.timeout(15_000)
      })
    const resumed = await resume(last ?? "")
    assert.strictEqual(resumed.status, 200)
    const after: Array<unknown> = []
    let answer: { readonly [key: string]: unknown } | undefined
    let answerId: string | undefined
    for await (const event of events(resumed.body ?? new ReadableStream())) {
      const message = messageOf(event)
      const progress = progressOf(message)
      if (progress !== undefined) after.push(progress)
      if (message?.id === 2) {
        answer = message
        answerId = event.id
      }
    }
    assert.deepStrictEqual(after, [3, 4, 5, 6])
    assert.include(JSON.stringify(answer?.result), "Long running operation completed")
    // From the answer itself: nothing is missed, and the stream ends at once.
    const fromAnswer = await resume(answerId ?? "")
    assert.strictEqual(fromAnswer.status, 200)
    assert.strictEqual(await fromAnswer.text(), "")

    // An id the store never had (or no longer has) is refused, and the client opens a new stream.
    const unknown = await fetch(`${base}/mcp`, {
      headers: { ...streamable(session), accept: "text/event-stream", "last-event-id": "999999" }
    })
    assert.strictEqual(unknown.status, 400)
    assert.include(await unknown.text(), "event 999999 is not in this session's history")
  }, 120_000)

  it("SSE: lists and calls tools; its group's path serves that group alone", async () => {
    const { base } = await serveHttp()
    const { client } = await sseClient(`${base}/sse`)
    const names = (await client.listTools()).tools.map((t) => t.name)
    assert.includeMembers(names, ["fx_echo", "ev_echo", "toolvisor_status"])
    const echoed = await client.callTool({ name: "fx_echo", arguments: { message: "over sse" } })
    assert.deepStrictEqual(echoed.content, [{ type: "text", text: "over sse" }])
    assert.isAbove((await client.listPrompts()).prompts.length, 0)

    const group = await sseClient(`${base}/sse/fixture`)
    const inGroup = (await group.client.listTools()).tools.map((t) => t.name)
    assert.include(inGroup, "fx_echo")
    assert.isFalse(
      inGroup.some((name) => name.startsWith("ev_")),
      inGroup.join(", ")
    )
    const outside = await group.client.callTool({ name: "ev_echo", arguments: { message: "no" } }).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.isDefined(outside)
    const unknown = await fetch(`${base}/sse/nope`)
    assert.strictEqual(unknown.status, 404)
    await unknown.text()
  }, 120_000)

  it("SSE: behind the gate's token; its sessions and /mcp's are apart; the session cap counts both", async () => {
    const token = "sse-test-token-0123456789abcdef"
    const { base, headers } = await serveHttp(["--max-sessions", "2"], token)
    const refused = await fetch(`${base}/sse`)
    assert.strictEqual(refused.status, 401)
    await refused.text()
    const unposted = await fetch(`${base}/messages?sessionId=x`, { method: "POST", body: "{}" })
    assert.strictEqual(unposted.status, 401)
    await unposted.text()

    const { client, session } = await sseClient(`${base}/sse`, headers)
    assert.include(
      (await client.listTools()).tools.map((t) => t.name),
      "fx_echo"
    )
    const sseId = session()
    assert.notStrictEqual(sseId, "")
    // An SSE session's id means nothing on /mcp.
    const onMcp = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { ...streamable(sseId), ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" })
    })
    assert.strictEqual(onMcp.status, 404)
    await onMcp.text()

    const http = new Client({ name: "sse-test-http", version: "1.0.0" })
    const httpTransport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } })
    await http.connect(httpTransport)
    clients.push(http)
    // …nor a streamable session's on /messages.
    const onMessages = await fetch(`${base}/messages?sessionId=${httpTransport.sessionId ?? ""}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" })
    })
    assert.strictEqual(onMessages.status, 404)
    await onMessages.text()

    // Two sessions are open, one of each kind: a third of either kind is refused.
    const metrics = await (await fetch(`${base}/metrics`, { headers })).text()
    assert.match(metrics, /^toolvisor_mcp_sessions 2$/m)
    const full = await fetch(`${base}/sse`, { headers })
    assert.strictEqual(full.status, 503)
    assert.include(await full.text(), "--max-sessions")
    // Closing the SSE client frees its place, once the gateway has seen its stream end.
    await client.close()
    await until(async () =>
      /^toolvisor_mcp_sessions 1$/m.test(await (await fetch(`${base}/metrics`, { headers })).text())
    )
    const reopened = await sseClient(`${base}/sse`, headers)
    assert.include(
      (await reopened.client.listTools()).tools.map((t) => t.name),
      "fx_echo"
    )
  }, 120_000)

  it("SSE: a message nested 100 000 deep is refused with /mcp's parse error, logs nothing, and the session goes on", async () => {
    const { base } = await serveHttp()
    const gateway = gateways[0]
    const opened = new AbortController()
    const stream = await fetch(`${base}/sse`, { signal: opened.signal })
    try {
      const received = events(stream.body ?? new ReadableStream())
      const endpoint = (await received.next()).value?.data ?? ""
      assert.match(endpoint, /^\/messages\?sessionId=/)
      const send = async (body: string) => {
        const response = await fetch(`${base}${endpoint}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body
        })
        return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
      }
      /** The answer to request `id`, from the session's stream. */
      const answerTo = async (id: number) => {
        for (;;) {
          const next = await received.next()
          if (next.done === true) throw new Error(`the stream ended before the answer to ${id}`)
          const message = messageOf(next.value)
          if (message?.id === id) return message
        }
      }
      const call = (id: number, message: string) =>
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"fx_echo","arguments":{"message":${message}}}}`
      const initialize = {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "deep", version: "1" } }
      }
      assert.strictEqual((await send(JSON.stringify(initialize))).status, 202)
      await answerTo(1)
      assert.strictEqual(
        (await send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).status,
        202
      )
      const logged = gateway?.stderr.length ?? 0

      const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`
      // Not one JSON-RPC message: refused before the session sees it, as /mcp refuses it.
      for (const body of [deep, `[{"jsonrpc":"2.0","id":2,"method":"ping"},${deep}]`]) {
        const refused = await send(body)
        assert.deepStrictEqual(JSON.parse(refused.text), {
          jsonrpc: "2.0",
          error: { code: -32700, message: "Parse error: Invalid JSON-RPC message" },
          id: null
        })
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.type, "application/json")
      }
      // A request whose arguments nest that deep is one: it is answered, as on /mcp, by a call that did not run.
      assert.strictEqual((await send(call(3, deep))).status, 202)
      assert.include(JSON.stringify((await answerTo(3)).result), "nested deeper than 64 levels")

      assert.strictEqual((await send(call(4, JSON.stringify("after the deep ones")))).status, 202)
      assert.deepStrictEqual((await answerTo(4)).result, {
        content: [{ type: "text", text: "after the deep ones" }]
      })
      const since = gateway?.stderr.slice(logged) ?? ""
      assert.notMatch(since, /\b(WARN|ERROR)\b/, since)
    } finally {
      opened.abort()
    }
  }, 120_000)

  it("SSE: a client that stops reading its stream loses its session once its unread backlog passes the bound", async () => {
    const { base, port } = await serveHttp()
    // The stream is opened, its first event (the endpoint) read, then nothing more.
    const { endpoint, response } = await new Promise<{
      readonly endpoint: string
      readonly response: NodeHttp.IncomingMessage
    }>((resolve, reject) => {
      const request = NodeHttp.get({ host: "127.0.0.1", port, path: "/sse" }, (response) => {
        response.once("data", (chunk: Buffer) => {
          response.pause()
          const found = /data: (\S+)/.exec(chunk.toString("utf8"))?.[1]
          if (found === undefined) reject(new Error(`no endpoint in ${chunk.toString("utf8")}`))
          else resolve({ endpoint: found, response })
        })
      })
      request.once("error", reject)
    })
    const send = (body: unknown) =>
      fetch(`${base}${endpoint}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then(async (r) => {
        await r.text()
        return r.status
      })
    assert.strictEqual(
      await send({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stalled", version: "1" } }
      }),
      202
    )
    assert.strictEqual(await send({ jsonrpc: "2.0", method: "notifications/initialized" }), 202)
    assert.strictEqual(await openSessions(base), 1)
    // Answers of 2 MiB each, never read: past what the kernel holds for the socket, the gateway
    // would hold them all; it drops the session past its backlog.
    // 80 MiB asked for, more than the bound and the kernel's buffers together; the answers come
    // as the server makes them, after the posts.
    for (let sent = 0; sent < 40; sent++) {
      const status = await send({
        jsonrpc: "2.0",
        id: 10 + sent,
        method: "tools/call",
        params: { name: "fx_big", arguments: { bytes: 2 * 1024 * 1024 } }
      })
      if (status === 404) break
      assert.strictEqual(status, 202)
    }
    await until(async () => (await openSessions(base)) === 0, 30_000)
    response.destroy()
  }, 120_000)
})
