/**
 * The gateway's streamable HTTP endpoint, `/mcp`, and one `/mcp/<group>` per tool group: every
 * request passes the same `HttpGate` as the status routes beside it (Host, Origin, credential),
 * then reaches its session's transport. Each client session gets its own MCP server and
 * transport, as the SDK's stateful examples do, kept in a bounded table (`McpSessions`); a
 * session belongs to the path it was opened on. A streamable session keeps what it sent in a
 * bounded event store (`McpEvents`), so a client that lost a stream resumes it with
 * `Last-Event-ID`. Older hosts get the legacy SSE transport, `GET /sse` (or `/sse/<group>`) then
 * `POST /messages?sessionId=…`, behind the same gate and in the same table, so `--max-sessions`
 * and `--session-idle` count both. A client of either that stops reading what it is sent loses
 * its session once `McpBacklog.bound` bytes wait for it. What a session serves is the caller's:
 * this module only carries requests to it.
 */
import * as NodeCrypto from "node:crypto"
import type * as NodeHttp from "node:http"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js"
import type { HttpGate } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import * as HttpListen from "./HttpListen.ts"
import * as McpBacklog from "./McpBacklog.ts"
import * as McpEvents from "./McpEvents.ts"
import * as McpSessions from "./McpSessions.ts"
import * as RequestBody from "./RequestBody.ts"

/** The path of the streamable HTTP endpoint, as in the SDK's examples. */
export const endpoint = "/mcp" as const

/** The legacy SSE transport's paths: its stream (`/sse`, `/sse/<group>`) and where its client posts. */
export const sse = { stream: "/sse", messages: "/messages" } as const

/** A session whose client left too much unread: its responses destroyed, its end told once, the send failed. */
const overflowed = (backlog: McpBacklog.Backlog, dropped: () => void) => {
  // Destroyed, not ended: an end would wait behind what the client does not read.
  if (backlog.drop()) dropped()
  return Promise.reject(new Error("the client does not read what it is sent"))
}

/** The SDK's SSE transport, its session dropped once its client leaves `McpBacklog.bound` unread. */
class BoundedSSEServerTransport extends SSEServerTransport {
  readonly stream: NodeHttp.ServerResponse
  readonly backlog: McpBacklog.Backlog
  readonly dropped: () => void
  constructor(stream: NodeHttp.ServerResponse, backlog: McpBacklog.Backlog, dropped: () => void) {
    super(sse.messages, stream)
    this.stream = stream
    this.backlog = backlog
    this.dropped = dropped
  }
  override send(message: JSONRPCMessage): Promise<void> {
    if (this.stream.destroyed) return Promise.reject(new Error("the SSE stream is closed"))
    return this.backlog.admit(message) ? super.send(message) : overflowed(this.backlog, this.dropped)
  }
}

/** The SDK's streamable transport, its session dropped once its client leaves `McpBacklog.bound` unread. */
class BoundedStreamableHTTPServerTransport extends StreamableHTTPServerTransport {
  readonly backlog: McpBacklog.Backlog
  readonly dropped: () => void
  constructor(
    options: ConstructorParameters<typeof StreamableHTTPServerTransport>[0],
    backlog: McpBacklog.Backlog,
    dropped: () => void
  ) {
    super(options)
    this.backlog = backlog
    this.dropped = dropped
  }
  override send(message: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    return this.backlog.admit(message) ? super.send(message, options) : overflowed(this.backlog, this.dropped)
  }
}

export interface Options extends HttpListen.Address {
  readonly gate: HttpGate.Gate
  readonly sessions: McpSessions.Options
  /** Answers every path but `/mcp` (the status routes); 404 when omitted. */
  readonly routes?: HttpListen.Handler
  /** The tool groups served at `/mcp/<group>`, besides every tool at `/mcp`. */
  readonly groups?: ReadonlyArray<string>
  /** What a request for a group not in `groups` is told (after the gate). */
  readonly unknownGroup?: (group: string) => string
}

export interface Endpoint {
  readonly port: number
  readonly url: string
  /** The servers of the sessions open now, to notify them all. */
  readonly servers: () => ReadonlyArray<Server>
}

interface Session extends McpSessions.Session {
  readonly server: Server
  readonly transport: StreamableHTTPServerTransport | SSEServerTransport
  /** What its client has not read, over every response of the session. */
  readonly backlog: McpBacklog.Backlog
  /** What a streamable session sent, for a client that resumes a stream (`Last-Event-ID`). */
  readonly events?: McpEvents.Store
  /**
   * Who opened it, as the gate knows them (a JWT's issuer and subject): a request with another
   * principal's credential finds no such session. Undefined with the static token or none.
   */
  readonly principal: string | undefined
  /** The group of the path it was opened on; `undefined` for `/mcp` and `/sse`. */
  readonly group: string | undefined
}

/** `base` is every tool (`undefined`), `base/<group>` a group (`string`); any other path is not this one (`null`). */
const groupOf = (pathname: string, base: string): string | undefined | null => {
  if (pathname === base) return undefined
  return pathname.startsWith(`${base}/`) ? pathname.slice(base.length + 1) : null
}

/**
 * Answers a request its client cancelled, so that its POST stream ends. MCP says the receiver
 * SHOULD NOT answer one (the sender ignores an answer), but unanswered its stream waited for ever:
 * the socket stayed open, the session never went idle, and a client that resumed the stream
 * (`Last-Event-ID`) got one that never ended either. The answer is kept for a resume like any other.
 * A request already answered is left alone.
 */
const closeCancelled = (transport: StreamableHTTPServerTransport) => {
  const receive = transport.onmessage
  transport.onmessage = (message, extra) => {
    receive?.(message, extra)
    if (!("method" in message) || message.method !== "notifications/cancelled" || "id" in message) return
    const id: unknown = message.params?.requestId
    if (typeof id !== "string" && typeof id !== "number") return
    const answer = {
      jsonrpc: "2.0" as const,
      id,
      error: { code: requestCancelled, message: "the request was cancelled" }
    }
    transport.send(answer).catch(() => undefined)
  }
}

/** The code LSP gives a cancelled request's answer; JSON-RPC and MCP name none. */
const requestCancelled = -32800

/**
 * What the gateway answers itself of a GET that resumes a stream (`Last-Event-ID`): an id the
 * session's store does not hold (the SDK's answer, "Invalid event ID format", sent a client
 * looking for a parsing bug), or a stream that is over (see `McpEvents.finishedAfter`).
 */
const resumption = (req: NodeHttp.IncomingMessage, session: Session) => {
  const last = req.headers["last-event-id"]
  const { events } = session
  if (req.method !== "GET" || typeof last !== "string" || events === undefined) return undefined
  if (!events.has(last)) return { unknown: last.slice(0, 40) }
  const missed = events.finishedAfter(last)
  return missed === undefined ? undefined : { missed }
}

/** Sends a finished stream's missed events as the SDK writes them, and ends the stream. */
const replayed = (res: NodeHttp.ServerResponse, sessionId: string, missed: ReadonlyArray<McpEvents.Missed>) =>
  Effect.sync(() => {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "mcp-session-id": sessionId
    })
    for (const { id, message } of missed) res.write(`event: message\nid: ${id}\ndata: ${JSON.stringify(message)}\n\n`)
    res.end()
  })

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
 * Listens on the address and serves `/mcp` and `/mcp/<group>`, each new session from
 * `newServer(group)`. Closing the scope stops accepting, closes every session, then every connection.
 */
export const listen = (
  newServer: (group: string | undefined) => Server,
  options: Options
): Effect.Effect<Endpoint, HttpListen.ListenError, Scope.Scope> =>
  Effect.gen(function* () {
    const { gate, sessions: limits } = options
    const groups = new Set(options.groups)
    const table = yield* McpSessions.make<Session>(limits)
    const fibers = yield* FiberSet.make<unknown>()
    const fork = yield* FiberSet.runtime(fibers)<never>()
    let closing = false

    /**
     * The session `id` of `principal`, marked in use until the response is over (a stream stays
     * open for long), counting what the response is written but its client has not read. Another
     * principal's session is not found: knowing its id does not let a user into it.
     */
    const use = (id: string, res: NodeHttp.ServerResponse, principal: string | undefined) => {
      const session = table.enter(id, (found) => found.principal === principal)
      if (session !== undefined) {
        res.once("close", () => table.leave(id))
        session.backlog.watch(res)
      }
      return session
    }

    /** What is logged when a session is dropped because its client does not read. */
    const unread = (kind: string) =>
      fork(Effect.logWarning(`a ${kind} client left over ${McpBacklog.bound} bytes unread: its session is closed`))

    /** A session exists only once its initialize succeeded; any other first request leaves nothing behind. */
    const open = (
      req: NodeHttp.IncomingMessage,
      res: NodeHttp.ServerResponse,
      body: unknown,
      opening: McpSessions.Opening<Session>,
      group: string | undefined,
      principal: string | undefined
    ) =>
      Effect.gen(function* () {
        const server = newServer(group)
        const backlog = McpBacklog.make()
        const events = McpEvents.make()
        const transport: StreamableHTTPServerTransport = new BoundedStreamableHTTPServerTransport(
          {
            sessionIdGenerator: () => NodeCrypto.randomUUID(),
            eventStore: events,
            onsessioninitialized: (id) => {
              opening.add(id, { server, transport, backlog, events, principal, group, close: closeServer(server) })
              use(id, res, principal)
            }
          },
          backlog,
          () => {
            unread("streamable HTTP")
            fork(closeServer(server))
          }
        )
        // After the session's own close handler (`newServer` may set one: its subscriptions end with it).
        const closed = server.onclose
        server.onclose = () => {
          closed?.()
          if (transport.sessionId !== undefined) table.remove(transport.sessionId)
        }
        // A server no session took is closed, the request answered or failed, so nothing it enrolled stays.
        yield* Effect.tryPromise(() => server.connect(transport)).pipe(
          Effect.tap(() => Effect.sync(() => closeCancelled(transport))),
          Effect.andThen(Effect.tryPromise(() => transport.handleRequest(req, res, body))),
          Effect.ensuring(Effect.suspend(() => (transport.sessionId === undefined ? closeServer(server) : Effect.void)))
        )
      }).pipe(Effect.ensuring(Effect.sync(opening.done)))

    /** The gate, then the group: who may go on, or undefined when the request has been answered. */
    const admit = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse, group: string | undefined) =>
      Effect.gen(function* () {
        const admitted = yield* gate.admit(req.headers, "protected")
        if ("status" in admitted) {
          yield* reject(res, admitted.status, admitted.message, admitted.headers)
          return undefined
        }
        // Past the gate only: who may not connect learns no group's name.
        if (group !== undefined && !groups.has(group)) {
          // The path is the caller's: a long one is cut, not echoed whole.
          const asked = group.slice(0, 100)
          yield* reject(res, 404, `Not found: ${options.unknownGroup?.(asked) ?? `no tool group "${asked}"`}`)
          return undefined
        }
        return admitted
      })

    /** A place for a new session, or the 503 that says there is none. */
    const place = (res: NodeHttp.ServerResponse) => {
      const opening = table.open()
      if (opening !== undefined) return Effect.succeed(opening)
      return Effect.as(
        reject(
          res,
          503,
          `Service Unavailable: ${limits.max} MCP sessions are open, the most --max-sessions allows; close one or try later`
        ),
        undefined
      )
    }

    const mcp = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse, group: string | undefined) =>
      Effect.gen(function* () {
        const admitted = yield* admit(req, res, group)
        if (admitted === undefined) return
        // Read before a session is looked up or a place taken: a body that never comes holds nothing.
        const body = req.method === "POST" ? yield* RequestBody.read(req, res) : undefined
        if (req.method === "POST" && body === undefined) return
        const sessionId = req.headers["mcp-session-id"]
        if (sessionId !== undefined) {
          const session = typeof sessionId === "string" ? use(sessionId, res, admitted.principal) : undefined
          const { transport } = session ?? {}
          // A session answers on its own path only: its id on another group's path, or an SSE session's, finds nothing.
          if (
            session === undefined ||
            session.group !== group ||
            !(transport instanceof StreamableHTTPServerTransport)
          ) {
            return yield* reject(res, 404, "Session not found: initialize a new session")
          }
          const resumed = resumption(req, session)
          if (resumed !== undefined && "unknown" in resumed) {
            return yield* reject(
              res,
              400,
              `Bad Request: event ${resumed.unknown} is not in this session's history (it is too old, or never was); open a new stream without Last-Event-ID`
            )
          }
          if (resumed !== undefined) return yield* replayed(res, transport.sessionId ?? "", resumed.missed)
          return yield* Effect.tryPromise(() => transport.handleRequest(req, res, body))
        }
        if (req.method !== "POST" || !RequestBody.isInitialize(body)) {
          return yield* reject(res, 400, "Bad Request: no session; POST initialize first")
        }
        const opening = yield* place(res)
        if (opening !== undefined) yield* open(req, res, body, opening, group, admitted.principal)
      })

    /**
     * `GET /sse[/<group>]` opens a legacy SSE session: the stream is the session, in use while it
     * is open, closed (and its server with it) when the client goes.
     */
    const sseStream = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse, group: string | undefined) =>
      Effect.gen(function* () {
        const admitted = yield* admit(req, res, group)
        if (admitted === undefined) return
        if (req.method !== "GET")
          return yield* reject(res, 405, `Method not allowed: GET ${sse.stream} opens a session`)
        const opening = yield* place(res)
        if (opening === undefined) return
        const server = newServer(group)
        const backlog = McpBacklog.make()
        const transport = new BoundedSSEServerTransport(res, backlog, () => unread("legacy SSE"))
        const closed = server.onclose
        server.onclose = () => {
          closed?.()
          table.remove(transport.sessionId)
        }
        yield* Effect.tryPromise(() => server.connect(transport)).pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              const { principal } = admitted
              opening.add(transport.sessionId, {
                server,
                transport,
                backlog,
                principal,
                group,
                close: closeServer(server)
              })
              use(transport.sessionId, res, principal)
            })
          ),
          Effect.ensuring(Effect.sync(opening.done))
        )
      })

    /**
     * `POST /messages?sessionId=…`: a message of a legacy SSE session, to its transport once it
     * is known to be one (`RequestBody.readMessage`): what is not is refused as `/mcp` refuses it.
     */
    const sseMessage = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse, url: URL) =>
      Effect.gen(function* () {
        const admitted = yield* admit(req, res, undefined)
        if (admitted === undefined) return
        const id = url.searchParams.get("sessionId")
        const session = id === null ? undefined : use(id, res, admitted.principal)
        const { transport } = session ?? {}
        if (req.method !== "POST" || !(transport instanceof SSEServerTransport)) {
          return yield* reject(res, 404, `Session not found: open one with GET ${sse.stream}`)
        }
        const body = yield* RequestBody.readMessage(req, res)
        if (body !== undefined) yield* Effect.tryPromise(() => transport.handlePostMessage(req, res, body))
      })

    const handle = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (closing) return yield* reject(res, 503, "Service Unavailable: the gateway is shutting down")
        const url = URL.parse(req.url ?? "/", "http://gateway")
        if (url === null) return yield* reject(res, 400, "Bad Request: the request's URL cannot be read")
        const group = groupOf(url.pathname, endpoint)
        if (group !== null) return yield* mcp(req, res, group)
        const sseGroup = groupOf(url.pathname, sse.stream)
        if (sseGroup !== null) return yield* sseStream(req, res, sseGroup)
        if (url.pathname === sse.messages) return yield* sseMessage(req, res, url)
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
