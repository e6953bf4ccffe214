/**
 * `toolvisor run --http PORT` and `serve --http PORT` as a dashboard or an orchestrator reaches
 * them: real HTTP against the bundled CLI supervising the fixture MCP server — the snapshot, the
 * event stream through a SIGKILL, resuming with Last-Event-ID, control routes behind the token,
 * Host/Origin checks, health probes and Prometheus metrics.
 */
import * as NodeHttp from "node:http"
import * as NodeNet from "node:net"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { freePort, isAlive, mcpEntry, runCli, Session, until, writeConfig, yaml } from "./helpers.ts"

interface StatusRow {
  readonly toolset: string
  readonly state: string
  readonly pid: number | null
  readonly restarts: number
  readonly tools: number | null
}

interface SseEvent {
  readonly id: number
  readonly event: string
  readonly data: { readonly [key: string]: unknown }
}

/** An SSE client over fetch: the frames it has parsed so far, and a way to wait for one. */
export class EventClient {
  readonly events: Array<SseEvent> = []
  readonly comments: Array<string> = []
  private readonly abort = new AbortController()
  readonly done: Promise<void>

  constructor(url: string, headers: { readonly [key: string]: string } = {}) {
    this.done = fetch(url, { headers, signal: this.abort.signal })
      .then(async (response) => {
        if (response.body === null) throw new Error(`no body: ${response.status}`)
        const decoder = new TextDecoder()
        let buffer = ""
        for await (const chunk of response.body) {
          buffer += decoder.decode(chunk, { stream: true })
          let end = buffer.indexOf("\n\n")
          while (end >= 0) {
            this.parse(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
            end = buffer.indexOf("\n\n")
          }
        }
      })
      .catch(() => undefined)
  }

  private parse(frame: string) {
    const fields = new Map<string, string>()
    for (const line of frame.split("\n")) {
      if (line.startsWith(":")) this.comments.push(line)
      const at = line.indexOf(": ")
      if (at > 0) fields.set(line.slice(0, at), line.slice(at + 2))
    }
    const data = fields.get("data")
    if (data !== undefined) {
      this.events.push({
        id: Number(fields.get("id")),
        event: fields.get("event") ?? "message",
        data: JSON.parse(data)
      })
    }
  }

  async waitFor(p: (event: SseEvent) => boolean, from = 0, within = 30_000): Promise<SseEvent> {
    const deadline = Date.now() + within
    for (;;) {
      const found = this.events.slice(from).find(p)
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`no matching event; got ${JSON.stringify(this.events)}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  close() {
    this.abort.abort()
  }
}

const sessions: Array<Session> = []
const clients: Array<EventClient> = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.close()
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGTERM")
    await session.exited()
  }
})

/** Starts `run --json --http PORT` on the fixture server and waits until it answers HTTP. */
const start = async (env: NodeJS.ProcessEnv = {}, entry: ReadonlyArray<string> = []) => {
  const port = await freePort()
  const config = writeConfig(yaml([mcpEntry("fx", entry)]))
  const session = new Session(["run", config, "--json", "--http", String(port)], env)
  sessions.push(session)
  const base = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
  return { session, base }
}

/** fetch cannot set `Host`; a DNS-rebinding page's request carries its own domain there. */
const statusCodeWithHost = (url: string, host: string, headers: Readonly<Record<string, string>> = {}) =>
  new Promise<number | undefined>((resolve, reject) => {
    const request = NodeHttp.get(url, { headers: { ...headers, host } }, (response) => {
      response.resume()
      resolve(response.statusCode)
    })
    request.once("error", reject)
  })

const status = async (
  base: string,
  headers: Readonly<Record<string, string>> = {}
): Promise<ReadonlyArray<StatusRow>> => JSON.parse(await (await fetch(`${base}/status`, { headers })).text())

const readyRow = async (base: string, headers: Readonly<Record<string, string>> = {}) => {
  let row: StatusRow | undefined
  await until(async () => {
    row = (await status(base, headers)).find((r) => r.toolset === "fx" && r.state === "Ready")
    return row !== undefined
  })
  if (row === undefined) throw new Error("unreachable")
  return row
}

describe("toolvisor run --http", () => {
  it("serves the status DTO, probes and metrics; /events shows a SIGKILLed server Restarting then Ready", async () => {
    const { base } = await start()
    const readyz = await fetch(`${base}/readyz`)
    const before = await readyRow(base)
    assert.strictEqual((await fetch(`${base}/readyz`)).status, 200)
    assert.isTrue(readyz.status === 200 || readyz.status === 503)
    assert.isNumber(before.pid)
    assert.isAbove(before.tools ?? 0, 0)

    const events = new EventClient(`${base}/events`)
    clients.push(events)
    const snapshot = await events.waitFor((e) => e.event === "snapshot")
    assert.deepInclude(JSON.stringify(snapshot.data), '"toolset":"fx"')

    process.kill(before.pid ?? 0, "SIGKILL")
    const restarting = await events.waitFor((e) => e.event === "transition" && e.data.state === "Restarting")
    const ready = await events.waitFor(
      (e) => e.event === "transition" && e.data.state === "Ready" && e.data.pid !== before.pid
    )
    assert.isAbove(ready.id, restarting.id)
    assert.strictEqual(ready.data.from, "Restarting")
    const ids = events.events.filter((e) => e.event !== "snapshot").map((e) => e.id)
    assert.deepStrictEqual(
      ids,
      ids.map((_, i) => (ids[0] ?? 0) + i),
      "ids grow by one"
    )

    // A client that lost the stream after `restarting` gets exactly what it missed, no snapshot.
    const resumed = new EventClient(`${base}/events`, { "last-event-id": String(restarting.id) })
    clients.push(resumed)
    const first = await resumed.waitFor(() => true)
    assert.notStrictEqual(first.event, "snapshot")
    assert.strictEqual(first.id, restarting.id + 1)
    await resumed.waitFor((e) => e.id === ready.id)
    // One from another life of the process (an id it never issued) gets a fresh snapshot.
    const stale = new EventClient(`${base}/events`, { "last-event-id": "987654" })
    clients.push(stale)
    assert.strictEqual((await stale.waitFor(() => true)).event, "snapshot")

    const metrics = await (await fetch(`${base}/metrics`)).text()
    assert.match(metrics, /toolvisor_toolset_state\{[^}]*toolset="fx"[^}]*\} 2/)
    assert.match(metrics, /toolvisor_toolset_restarts_total\{[^}]*toolset="fx"[^}]*\} [1-9]/)
    assert.strictEqual((await fetch(`${base}/healthz`)).status, 200)
  })

  it("100 subscribers and one that never reads all follow a SIGKILL and recovery", async () => {
    const { base } = await start()
    const before = await readyRow(base)
    const followers = Array.from({ length: 100 }, () => new EventClient(`${base}/events`))
    clients.push(...followers)
    // A client that sends its request and never reads a byte of the answer.
    const stalled = NodeNet.connect(Number(new URL(base).port), "127.0.0.1")
    stalled.write(`GET /events HTTP/1.1\r\nHost: ${new URL(base).host}\r\n\r\n`)
    stalled.pause()
    try {
      await Promise.all(followers.map((f) => f.waitFor((e) => e.event === "snapshot")))
      process.kill(before.pid ?? 0, "SIGKILL")
      await Promise.all(
        followers.map((f) =>
          f.waitFor((e) => e.event === "transition" && e.data.state === "Ready" && e.data.pid !== before.pid)
        )
      )
      for (const f of followers) assert.isTrue(f.events.some((e) => e.data.state === "Restarting"))
    } finally {
      stalled.destroy()
    }
  })

  it("every route but the probes needs the token when one is set, on loopback too; Host and Origin from elsewhere are refused", async () => {
    const { base } = await start({ TOOLVISOR_HTTP_TOKEN: "s3cret-token" }, ["        lifecycle: { required: true }"])
    const bearer = { authorization: "Bearer s3cret-token" }
    const before = await readyRow(base, bearer)
    const restart = (headers: { readonly [key: string]: string }) =>
      fetch(`${base}/toolsets/fx/restart`, { method: "POST", headers })
    assert.strictEqual((await restart({})).status, 401)
    assert.strictEqual((await restart({ authorization: "Bearer wrong-token!" })).status, 401)
    assert.strictEqual((await restart({ ...bearer, origin: "http://evil.example" })).status, 403)
    for (const path of ["/status", "/events", "/metrics"]) {
      const refused = await fetch(`${base}${path}`)
      assert.strictEqual(refused.status, 401, path)
      assert.match(refused.headers.get("www-authenticate") ?? "", /^Bearer resource_metadata="/, path)
    }
    assert.strictEqual(await statusCodeWithHost(`${base}/status`, "evil.example", bearer), 403)
    assert.strictEqual(await statusCodeWithHost(`${base}/status`, "localhost", bearer), 200)
    assert.strictEqual(await statusCodeWithHost(`${base}/healthz`, "localhost"), 200)
    const unknown = await fetch(`${base}/toolsets/nope/restart`, { method: "POST", headers: bearer })
    assert.strictEqual(unknown.status, 404)
    const ok = await restart({ ...bearer, origin: base })
    assert.strictEqual(ok.status, 200)
    const after = await readyRow(base, bearer)
    assert.notStrictEqual(after.pid, before.pid)
    assert.isFalse(isAlive(before.pid ?? 0))
    assert.notInclude(await (await fetch(`${base}/status`, { headers: bearer })).text(), "s3cret-token")

    const stop = await fetch(`${base}/toolsets/fx/stop`, { method: "POST", headers: bearer })
    assert.strictEqual(stop.status, 200)
    await until(async () => (await status(base, bearer)).some((r) => r.toolset === "fx" && r.state === "Stopped"))
    assert.strictEqual((await fetch(`${base}/readyz`)).status, 503)
  })

  it("a control action that fails answers 502 with the toolset's masked status, not the raw error", async () => {
    const port = await freePort()
    const config = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: mcp",
        "        name: gone",
        "        command: /nonexistent/toolvisor-no-such-server",
        "        lifecycle: { profile: best-effort }"
      ].join("\n")
    )
    sessions.push(new Session(["run", config, "--json", "--http", String(port)]))
    const base = `http://127.0.0.1:${port}`
    await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
    const response = await fetch(`${base}/toolsets/gone/start`, { method: "POST" })
    assert.strictEqual(response.status, 502)
    const body = JSON.parse(await response.text())
    assert.strictEqual(body.ok, false)
    assert.isString(body.error)
    assert.strictEqual(body.status.toolset, "gone")
  })

  it("refuses a non-loopback bind without a token, starting nothing", async () => {
    const config = writeConfig(yaml([mcpEntry("fx")]))
    const result = await runCli(["run", config, "--json", "--http", "0", "--host", "0.0.0.0"])
    assert.strictEqual(result.code, 2)
    assert.include(result.stderr, "TOOLVISOR_HTTP_TOKEN")
  })
})

describe("toolvisor serve --http", () => {
  it("answers the status routes on the MCP endpoint's port, and /mcp still speaks MCP", async () => {
    const port = await freePort()
    const session = new Session(["serve", writeConfig(yaml([mcpEntry("fx")])), "--http", String(port)])
    sessions.push(session)
    const base = `http://127.0.0.1:${port}`
    await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
    await readyRow(base)
    const mcp = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } }
      })
    })
    assert.strictEqual(mcp.status, 200)
    assert.include(await mcp.text(), "toolvisor")
    assert.strictEqual((await fetch(`${base}/nowhere`)).status, 404)
  })
})
