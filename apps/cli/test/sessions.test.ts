/**
 * The MCP sessions of `serve --http`, black-box: the bundled CLI on a real port. Sessions are
 * capped with a clear 503, a session no client uses expires while one with an open stream stays,
 * and thousands of clients that vanish without DELETE leave the gateway's memory where it began.
 */
import * as NodeHttp from "node:http"
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Procs from "../../../test/chaos/procs.ts"
import { freePort, mcpEntry, Session, until, writeConfig, yaml } from "./helpers.ts"

const sessions: Array<Session> = []

afterEach(async () => {
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGTERM")
    await session.exited()
  }
})

const serve = async (args: ReadonlyArray<string>) => {
  const port = await freePort()
  const session = new Session(["serve", writeConfig(yaml([mcpEntry("fx")])), "--http", String(port), ...args])
  sessions.push(session)
  const base = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
  return { base, port, pid: session.child.pid ?? 0 }
}

const agent = new NodeHttp.Agent({ keepAlive: true, maxSockets: 16 })

/** One JSON-RPC POST to /mcp over a kept-alive socket; the status, the session id and the body. */
const post = (port: number, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  new Promise<{ readonly status: number; readonly session: string | undefined; readonly text: string }>(
    (resolve, reject) => {
      const request = NodeHttp.request(
        {
          host: "127.0.0.1",
          port,
          path: "/mcp",
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
            ...headers
          }
        },
        (response) => {
          let text = ""
          response.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
          response.on("end", () => {
            const id = response.headers["mcp-session-id"]
            resolve({ status: response.statusCode ?? 0, session: typeof id === "string" ? id : undefined, text })
          })
        }
      )
      request.once("error", reject)
      request.end(JSON.stringify(body))
    }
  )

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "abandoner", version: "1" } }
}

/** Opens a session and walks away from it: no DELETE, no stream. */
const abandon = async (port: number) => {
  const opened = await post(port, initialize)
  if (opened.status !== 200 || opened.session === undefined)
    throw new Error(`initialize: ${opened.status} ${opened.text}`)
  return opened.session
}

/** Ends a session as a client that says goodbye does. */
const close = (port: number, session: string) =>
  new Promise<number | undefined>((resolve, reject) => {
    const request = NodeHttp.request(
      { host: "127.0.0.1", port, path: "/mcp", method: "DELETE", agent, headers: { "mcp-session-id": session } },
      (response) => {
        response.resume()
        resolve(response.statusCode)
      }
    )
    request.once("error", reject)
    request.end()
  })

const ping = (port: number, session: string) =>
  post(port, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": session })

/** Sessions open, as /metrics reports them: read without touching (and so refreshing) any session. */
const openSessions = async (base: string) => {
  const metrics = await (await fetch(`${base}/metrics`)).text()
  return Number(/^toolvisor_mcp_sessions(?:\{[^}]*\})? (\d+)/m.exec(metrics)?.[1] ?? Number.NaN)
}

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

  it("3,000 clients that vanish without DELETE leave RSS near where it began once their sessions expire", {
    timeout: 300_000
  }, async () => {
    const { base, port, pid } = await serve(["--session-idle", "30s", "--max-sessions", "10000"])
    const rss = () => Procs.usage(pid)?.rssMiB ?? Number.NaN
    const openMany = async (n: number) => {
      const ids: Array<string> = []
      for (let i = 0; i < n; i += 50) {
        ids.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => abandon(port)))))
      }
      return ids
    }
    // Warm up: the code paths compiled and the heap grown once, as after any first clients, who say goodbye.
    await Promise.all((await openMany(300)).map((id) => close(port, id)))
    await until(async () => (await openSessions(base)) === 0)
    const baseline = rss()
    const began = Date.now()
    const ids = await openMany(3000)
    const opened = Date.now() - began
    const peakSessions = await openSessions(base)
    const peak = rss()
    // Sessions are 30 s idle by now only if opening them all took that long; on a loaded machine it may.
    assert.isAbove(peakSessions, 2500, `${opened} ms to open 3,000`)
    await until(async () => (await openSessions(base)) === 0, 60_000)
    assert.strictEqual((await ping(port, ids[0] ?? "")).status, 404)
    // The collector returns freed pages to the system in its own time, once the process goes quiet.
    const expired = Date.now()
    let settled = rss()
    await until(() => {
      settled = rss()
      return settled < baseline + 16
    }, 150_000).catch(() => undefined)
    console.log(
      `RSS of serve --http: ${baseline.toFixed(1)} MiB after warm-up; ${peak.toFixed(1)} MiB with ${peakSessions} abandoned sessions open (3,000 opened in ${opened} ms); ${settled.toFixed(1)} MiB ${((Date.now() - expired) / 1000).toFixed(0)} s after they expired`
    )
    assert.isAbove(peak, baseline + 30)
    assert.isBelow(settled, baseline + 16)
  })
})
