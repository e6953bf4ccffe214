/**
 * A `serve --http` gateway under test and the raw MCP requests the session tests make: kept-alive
 * POSTs and DELETEs that a real client sends, and the open-session count as /metrics reports it.
 */
import * as NodeHttp from "node:http"
import { freePort, mcpEntry, Session, until, writeConfig, yaml } from "./helpers.ts"

const gateways: Array<Session> = []

/** Stops every gateway `serve` started; each test file calls it after each test. */
export const stopGateways = async () => {
  for (const gateway of gateways.splice(0)) {
    gateway.child.kill("SIGTERM")
    await gateway.exited()
  }
}

/** `serve --http` over the fixture server on a free port, once its /healthz answers. */
export const serve = async (args: ReadonlyArray<string>) => {
  const port = await freePort()
  const session = new Session(["serve", writeConfig(yaml([mcpEntry("fx")])), "--http", String(port), ...args])
  gateways.push(session)
  const base = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true)
  return { base, port, pid: session.child.pid ?? 0 }
}

const agent = new NodeHttp.Agent({ keepAlive: true, maxSockets: 16 })

/** One JSON-RPC POST to /mcp over a kept-alive socket; the status, the session id and the body. */
export const post = (port: number, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
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

export const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "abandoner", version: "1" } }
}

/** Opens a session and walks away from it: no DELETE, no stream. */
export const abandon = async (port: number) => {
  const opened = await post(port, initialize)
  if (opened.status !== 200 || opened.session === undefined)
    throw new Error(`initialize: ${opened.status} ${opened.text}`)
  return opened.session
}

/** Ends a session as a client that says goodbye does. */
export const close = (port: number, session: string) =>
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

export const ping = (port: number, session: string) =>
  post(port, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": session })

/** Sessions open, as /metrics reports them: read without touching (and so refreshing) any session. */
export const openSessions = async (base: string) => {
  const metrics = await (await fetch(`${base}/metrics`)).text()
  return Number(/^toolvisor_mcp_sessions(?:\{[^}]*\})? (\d+)/m.exec(metrics)?.[1] ?? Number.NaN)
}
