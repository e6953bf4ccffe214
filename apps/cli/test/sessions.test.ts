/**
 * The MCP sessions of `serve --http`, black-box: the bundled CLI on a real port. Sessions are
 * capped with a clear 503, and a session no client uses expires while one with an open stream
 * stays. (Thousands of abandoned sessions and the gateway's memory: sessions-rss.soak.test.ts.)
 */
import * as NodeNet from "node:net"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { until } from "./helpers.ts"
import { abandon, close, initialize, openSessions, ping, post, serve, stopGateways } from "./serve-http.ts"

afterEach(stopGateways)

describe("serve --http sessions", () => {
  it("past --max-sessions an initialize is refused with a clear 503; a DELETE frees a place", async () => {
    const { port } = await serve(["--max-sessions", "2"])
    const first = await abandon(port)
    await abandon(port)
    const refused = await post(port, initialize)
    assert.strictEqual(refused.status, 503)
    assert.include(refused.text, "2 MCP sessions are open, the most --max-sessions allows")
    assert.isUndefined(refused.session)
    // The sessions already open are untouched.
    assert.strictEqual((await ping(port, first)).status, 200)

    assert.strictEqual(await close(port, first), 200)
    assert.strictEqual((await post(port, initialize)).status, 200)
  })

  it("--session-idle expires a session nobody uses, while one with an open stream stays", async () => {
    const { base, port } = await serve(["--session-idle", "1s"])
    const abandoned = await abandon(port)
    const listening = await abandon(port)
    // The client's GET stream for server notifications, held open.
    const stream = new AbortController()
    const opened = await fetch(`${base}/mcp`, {
      headers: { accept: "text/event-stream", "mcp-session-id": listening, "mcp-protocol-version": "2025-06-18" },
      signal: stream.signal
    })
    assert.strictEqual(opened.status, 200)
    try {
      assert.strictEqual(await openSessions(base), 2)
      await until(async () => (await openSessions(base)) === 1, 20_000)
      // The abandoned one was idle a full second; the listening one too, but with its stream open.
      assert.strictEqual((await ping(port, abandoned)).status, 404)
      assert.strictEqual((await ping(port, listening)).status, 200)
    } finally {
      stream.abort()
    }
    await until(async () => (await openSessions(base)) === 0, 20_000)
    assert.strictEqual((await ping(port, listening)).status, 404)
  })

  it("a POST whose body never comes holds no place; refusals of a body are clean and close what they did not read", async () => {
    const { port } = await serve(["--max-sessions", "2"])
    /** A raw connection that sends `head` (and `body`, when given), and what came back before it closed. */
    const raw = (head: string, body?: string) => {
      const socket = NodeNet.connect(port, "127.0.0.1")
      let received = ""
      socket.on("data", (chunk) => (received += chunk.toString("utf8")))
      const closed = new Promise<string>((resolve) => socket.once("close", () => resolve(received)))
      socket.on("error", () => undefined)
      socket.write(head)
      if (body !== undefined) socket.write(body)
      return { socket, closed, received: () => received }
    }
    const headers = (length: number, path = "/mcp") =>
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${length}\r\n\r\n`
    // Headers that promise a body, and no body: each held a place until Node timed the request out (300 s).
    const stalled = [raw(headers(500)), raw(headers(500))]
    try {
      const opened = await post(port, initialize)
      assert.strictEqual(opened.status, 200, opened.text)
      assert.isString(opened.session)
    } finally {
      for (const { socket } of stalled) socket.destroy()
    }
    // Past 4 MiB: 413, and the connection closes rather than read the rest as the next request.
    const big = raw(headers(5 * 1024 * 1024), "x".repeat(64 * 1024))
    const answer = await big.closed
    assert.match(answer, /^HTTP\/1\.1 413 /)
    assert.match(answer, /connection: close/i)
    const empty = await post(port, [])
    assert.strictEqual(empty.status, 400)
    assert.include(empty.text, "Invalid Request: an empty batch")
    const notARequest = await post(port, "{")
    assert.strictEqual(notARequest.status, 400)
    const stranger = raw(`GET http://[ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`)
    assert.match(await stranger.closed, /^HTTP\/1\.1 400 /)
  })

  it("a request its client cancels is answered as cancelled, which ends its POST's stream", async () => {
    const { base, port } = await serve([])
    const session = await abandon(port)
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
      "mcp-session-id": session
    }
    const call = await fetch(`${base}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "fx_sleep", arguments: { ms: 120_000 } }
      })
    })
    assert.strictEqual(call.status, 200)
    const cancelled = await post(
      port,
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5, reason: "the user gave up" } },
      { "mcp-session-id": session }
    )
    assert.strictEqual(cancelled.status, 202)
    // The stream waited for an answer that never comes (the sleep runs 2 minutes, and a cancelled
    // request is not answered): the socket stayed open and the session never went idle.
    const rest = await call.text()
    assert.include(rest, '"id":5')
    assert.include(rest, "the request was cancelled")
  })

  it("a client that asks and never reads loses its session once what it left unread passes the bound", async () => {
    const { base, port } = await serve([])
    const session = await abandon(port)
    // Answers of 10 MiB, more than the kernel takes for a socket nobody reads.
    const body = (id: number) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "fx_big", arguments: { bytes: 10 * 1024 * 1024 } }
      })
    // Each call on a connection of its own that is never read: each answer waited in the gateway
    // for ever, in the responses' buffers and the web streams behind them (+250 MB for 30).
    const unread: Array<NodeNet.Socket> = []
    try {
      let dropped = false
      for (let id = 10; id < 30 && !dropped; id++) {
        const socket = NodeNet.connect(port, "127.0.0.1")
        socket.on("error", () => undefined)
        unread.push(socket)
        const sent = body(id)
        socket.write(
          `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
            `accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n` +
            `mcp-session-id: ${session}\r\ncontent-length: ${Buffer.byteLength(sent)}\r\n\r\n${sent}`
        )
        // A ping in flight when the session is dropped is cut off with it.
        dropped = (await ping(port, session).catch(() => undefined))?.status === 404
      }
      await until(async () => (await ping(port, session).catch(() => undefined))?.status === 404, 30_000)
      assert.strictEqual(await openSessions(base), 0)
      // The gateway goes on: a new session is served.
      const next = await abandon(port)
      assert.strictEqual((await ping(port, next)).status, 200)
    } finally {
      for (const socket of unread) socket.destroy()
    }
  }, 120_000)

  it("initialize answers with the toolsets' instructions, read when the session opens", async () => {
    const { base, port } = await serve([])
    const ready = async () => {
      const board = (await (await fetch(`${base}/status`)).json()) as ReadonlyArray<{ readonly state: string }>
      return board[0]?.state === "Ready"
    }
    await until(ready)
    const opened = await post(port, initialize)
    assert.strictEqual(opened.status, 200)
    const data = /^data: (.*)$/m.exec(opened.text)?.[1] ?? opened.text
    // The SDK fixes a server's instructions when it is made, before any toolset is up: there were none.
    assert.strictEqual(JSON.parse(data).result.instructions, "## fx\nFixture tools for tests.")
  })
})
