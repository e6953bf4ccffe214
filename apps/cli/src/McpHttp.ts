/**
 * The gateway's streamable HTTP endpoint, `/mcp`: every request passes the same `HttpGate` as the
 * status routes beside it (Host, Origin, credential), then reaches its session's transport. Each
 * client session gets its own MCP server and transport, as the SDK's stateful examples do, kept
 * in a bounded table (`McpSessions`). What a session serves is the caller's: this module only
 * carries requests to it.
 */
import * as NodeCrypto from "node:crypto"
import type * as NodeHttp from "node:http"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { HttpGate } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import * as HttpListen from "./HttpListen.ts"
import * as McpSessions from "./McpSessions.ts"

/** The path of the streamable HTTP endpoint, as in the SDK's examples. */
export const endpoint = "/mcp" as const

export interface Options extends HttpListen.Address {
  readonly gate: HttpGate.Gate
  readonly sessions: McpSessions.Options
  /** Answers every path but `/mcp` (the status routes); 404 when omitted. */
  readonly routes?: HttpListen.Handler
}

export interface Endpoint {
  readonly port: number
  readonly url: string
  /** The servers of the sessions open now, to notify them all. */
  readonly servers: () => ReadonlyArray<Server>
}

interface Session extends McpSessions.Session {
  readonly server: Server
  readonly transport: StreamableHTTPServerTransport
}

/** Answers an HTTP request no transport saw, with a JSON-RPC error body as the SDK does. */
const reject = (
  res: NodeHttp.ServerResponse,
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {}
) =>
  Effect.sync(() => {
    if (!res.headersSent) res.writeHead(status, { ...headers, "content-type": "application/json" })
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }))
  })

export const closeServer = (server: Server): Effect.Effect<void> =>
  Effect.tryPromise(() => server.close()).pipe(
    Effect.catch((error) => Effect.logDebug("closing an MCP session failed", error))
  )

/**
 * Listens on the address and serves `/mcp`, each new session from `newServer()`. Closing the
 * scope stops accepting, closes every session, then every connection.
 */
export const listen = (
  newServer: () => Server,
  options: Options
): Effect.Effect<Endpoint, HttpListen.ListenError, Scope.Scope> =>
  Effect.gen(function* () {
    const { gate, sessions: limits } = options
    const table = yield* McpSessions.make<Session>(limits)
    const fibers = yield* FiberSet.make<unknown>()
    const fork = yield* FiberSet.runtime(fibers)<never>()
    let closing = false

    /** Marks the session in use until the response is over (a stream stays open for long). */
    const use = (id: string, res: NodeHttp.ServerResponse) => {
      const session = table.enter(id)
      if (session !== undefined) res.once("close", () => table.leave(id))
      return session
    }

    /** A session exists only once its initialize succeeded; any other first request leaves nothing behind. */
    const open = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse, opening: McpSessions.Opening<Session>) =>
      Effect.gen(function* () {
        const server = newServer()
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => NodeCrypto.randomUUID(),
          onsessioninitialized: (id) => {
            opening.add(id, { server, transport, close: closeServer(server) })
            use(id, res)
          }
        })
        server.onclose = () => {
          if (transport.sessionId !== undefined) table.remove(transport.sessionId)
        }
        yield* Effect.tryPromise(() => server.connect(transport))
        yield* Effect.tryPromise(() => transport.handleRequest(req, res))
        if (transport.sessionId === undefined) yield* closeServer(server)
      }).pipe(Effect.ensuring(Effect.sync(opening.done)))

    const mcp = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) =>
      Effect.gen(function* () {
        const refusal = yield* gate.check(req.headers, "protected")
        if (refusal !== undefined) return yield* reject(res, refusal.status, refusal.message, refusal.headers)
        const sessionId = req.headers["mcp-session-id"]
        if (sessionId !== undefined) {
          const session = typeof sessionId === "string" ? use(sessionId, res) : undefined
          if (session === undefined) return yield* reject(res, 404, "Session not found: initialize a new session")
          return yield* Effect.tryPromise(() => session.transport.handleRequest(req, res))
        }
        if (req.method !== "POST") return yield* reject(res, 400, "Bad Request: no session; POST initialize first")
        const opening = table.open()
        if (opening === undefined) {
          return yield* reject(
            res,
            503,
            `Service Unavailable: ${limits.max} MCP sessions are open, the most --max-sessions allows; close one or try later`
          )
        }
        yield* open(req, res, opening)
      })

    const handle = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (closing) return yield* reject(res, 503, "Service Unavailable: the gateway is shutting down")
        if (new URL(req.url ?? "/", "http://gateway").pathname === endpoint) return yield* mcp(req, res)
        if (options.routes !== undefined) return options.routes(req, res)
        return yield* reject(res, 404, `Not found: the MCP endpoint is ${endpoint}`)
      }).pipe(
        Effect.catchCause((cause) =>
          Effect.andThen(Effect.logWarning("an MCP HTTP request failed", cause), reject(res, 500, "Internal error"))
        )
      )

    const closeSessions = Effect.suspend(() => {
      // Refuse new requests first, so no session opens while the open ones close.
      closing = true
      return Effect.forEach(table.sessions(), (session) => session.close, { discard: true })
    })
    const bound = yield* HttpListen.listen(
      options,
      (req, res) => {
        fork(handle(req, res))
      },
      closeSessions
    )
    return {
      port: bound.port,
      url: `http://${HttpListen.hostPort(bound.host, bound.port)}${endpoint}`,
      servers: () => table.sessions().map((s) => s.server)
    }
  })
