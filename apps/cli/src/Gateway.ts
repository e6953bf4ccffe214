/**
 * `toolvisor serve`: one MCP server in front of a registry, exposing every tool of an agent's
 * catalog and routing each call to the supervised toolset that owns it. Tool schemas pass
 * through as JSON Schema (hence the SDK's low-level `Server`), typed call failures come back as
 * `isError` results the agent can read, and clients hear `tools/list_changed` whenever the
 * catalog they were given is no longer the one on offer.
 *
 * A gateway outlives its toolsets' restart budgets: a toolset that failed to start is not gone for
 * good here. A call to one of its tools first runs the runtime's reprobe (the same mechanism the
 * agent adapters run in a turn), bounded to one per call and one per cooldown, so a server that
 * can start now is used. A server that crashed until its budget was spent is left alone: a call
 * must not buy it a new crash loop. `toolvisor_status` (`StatusTool`) lets a host see why tools
 * are missing.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type ServerNotification,
  type ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import type { State, Toolset } from "@toolvisor/core"
import { type Catalog, HttpGate, Reprobe, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as HttpListen from "./HttpListen.ts"
import * as McpHttp from "./McpHttp.ts"
import type * as McpSessions from "./McpSessions.ts"
import * as StatusTool from "./StatusTool.ts"

export interface Options {
  /** The agent whose catalog is served; the registry's default agent when omitted. */
  readonly agent?: string
  /**
   * Completes once the eager toolsets have settled (Ready, failed or timed out): `tools/list`
   * and calls wait for it, since many clients list tools once, at connect. Answers at once when
   * omitted.
   */
  readonly ready?: Deferred.Deferred<void>
  /** Serve streamable HTTP on this address instead of stdio; `routes` answers every path but `/mcp`. */
  readonly http?: Address
  /** Offer `toolvisor_status` besides the catalog's tools (default true). */
  readonly statusTool?: boolean
}

export interface Address extends HttpListen.Address {
  /** Answers every path but `/mcp`: the status routes. */
  readonly routes?: HttpListen.Handler
  /** The gate `/mcp` shares with the status routes; Host and Origin checks only when omitted. */
  readonly gate?: HttpGate.Gate
  /** How long an MCP session may go unused, and how many may be open at once. */
  readonly sessions: McpSessions.Options
}

/** The gateway could not start serving: the port is taken, the agent is unknown, a transport failed. */
export class GatewayError extends Schema.TaggedError<GatewayError>()("GatewayError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const serverInfo = { name: "toolvisor", version: "0.1.0" }

/** Runs an Effect from an SDK callback; owned by the serving scope, so closing it interrupts calls. */
type RunPromise = <A>(effect: Effect.Effect<A>, options?: { readonly signal?: AbortSignal }) => Promise<A>

/** How often at most a call to a down toolset's tool restarts it: a host calling in a loop costs one start per cooldown. */
export const reviveCooldown = Duration.seconds(10)

/** What every client session of one gateway shares. */
interface Shared {
  readonly registry: ToolsetRegistry.Registry
  readonly options: Options
  readonly run: RunPromise
  readonly reprobe: Reprobe.Reprobe
}

const makeShared = (registry: ToolsetRegistry.Registry, options: Options) =>
  Effect.gen(function* () {
    const run = yield* FiberSet.makeRuntimePromise<never>()
    const reprobe = yield* Reprobe.make(registry, { cooldown: reviveCooldown, only: Reprobe.failedToStart })
    return { registry, options, run, reprobe } satisfies Shared
  })

/** A catalog entry as MCP lists it: the exposed name, the toolset's schema untouched. */
const toMcpTool = (entry: Catalog.Entry) => {
  const { tool } = entry
  return {
    name: entry.name,
    inputSchema: tool.inputSchema,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
    ...(tool._meta === undefined ? {} : { _meta: tool._meta })
  }
}

/**
 * The tools an agent sees right now. An agent that a reload removed has no tools rather than a
 * protocol error, so a client keeps its session and hears list_changed when it comes back.
 */
const listing = (registry: ToolsetRegistry.Registry, agent: string | undefined) =>
  registry.catalog(agent).pipe(
    Effect.map((catalog) => catalog.tools),
    Effect.catchTag("UnknownAgent", (error) => Effect.as(Effect.logWarning(`serving no tools: ${error.message}`), []))
  )

/** True when the gateway answers `toolvisor_status` itself: offered, and no toolset's tool has the name. */
const offersStatus = (options: Options, tools: ReadonlyArray<Catalog.Entry>) =>
  options.statusTool !== false && !tools.some((t) => t.name === StatusTool.name)

/** The board and the agent's catalog, as `toolvisor_status` answers them. */
const statusResult = (registry: ToolsetRegistry.Registry, agent: string | undefined) =>
  Effect.gen(function* () {
    const catalog = yield* Effect.option(registry.catalog(agent))
    return StatusTool.result(
      yield* registry.snapshot,
      catalog._tag === "Some" ? catalog.value : undefined,
      reviveCooldown
    )
  })

/**
 * Before a call that could not be sent at once: when the tool is not on offer (its toolset
 * stopped or failed, or never started) while some toolset is missing, the shared reprobe restarts
 * the toolsets that failed to start — one reprobe per call at most, none within `reviveCooldown`
 * of the last, waited for a few seconds. The probe comes before the call, so no call is sent twice.
 */
const revive = (shared: Shared, tool: string) =>
  shared.registry.catalog(shared.options.agent).pipe(
    Effect.flatMap((catalog) =>
      catalog.complete || catalog.tools.some((t) => t.name === tool) ? Effect.void : shared.reprobe.reprobe
    ),
    Effect.ignore
  )

/** A failure the agent reads as the tool's answer, so a call never surfaces as a JSON-RPC crash. */
const errorResult = (tag: string, message: string): Toolset.ToolResult => ({
  content: [{ type: "text", text: `${tag}: ${message}` }],
  isError: true
})

/** A failed call as the agent reads it: typed errors by tag, a cancelled call, and defects logged. */
const failure =
  (tool: string) =>
  (cause: Cause.Cause<ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent>): Effect.Effect<Toolset.ToolResult> => {
    const error = Cause.findErrorOption(cause)
    if (error._tag === "Some") {
      const { _tag, message } = error.value
      return Effect.as(Effect.logDebug(`${tool}: ${_tag}: ${message}`), errorResult(_tag, message))
    }
    return Cause.hasInterruptsOnly(cause)
      ? Effect.succeed(errorResult("Interrupted", `the call to ${tool} was cancelled`))
      : Effect.as(Effect.logError(`${tool} failed unexpectedly`, cause), errorResult("Defect", Cause.pretty(cause)))
  }

/** The toolsets still starting, as a client waiting for tools/list is told. */
const waitingFor = (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.filter((s) => s.state === "Starting").map((s) => s.name)

/** Once settled (every request but the first few), a request costs no subscription and no race. */
const isSettled = (ready: Deferred.Deferred<void> | undefined) => ready === undefined || Deferred.isDoneUnsafe(ready)

/**
 * Waits for `ready`, telling the client what it waits for: a progress notification when the
 * request asked for progress, and a log message (MCP logging) either way.
 */
const settled = (
  server: Server,
  registry: ToolsetRegistry.Registry,
  ready: Deferred.Deferred<void> | undefined,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>
) => {
  if (ready === undefined || isSettled(ready)) return Effect.void
  const token = extra._meta?.progressToken
  const tell = (board: ReadonlyArray<State.StatusSnapshot>) => {
    const pending = waitingFor(board)
    if (pending.length === 0) return Effect.void
    const message = `waiting for toolsets to start: ${pending.join(", ")}`
    const progress =
      token === undefined
        ? Effect.void
        : Effect.tryPromise(() =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress: board.length - pending.length, total: board.length, message }
            })
          )
    const log = Effect.tryPromise(() =>
      server.sendLoggingMessage({ level: "info", logger: "toolvisor", data: message })
    )
    return Effect.ignore(Effect.andThen(progress, log))
  }
  return Effect.raceFirst(
    Deferred.await(ready),
    Effect.andThen(registry.status.pipe(Stream.runForEach(tell)), Effect.never)
  )
}

/** One MCP server (one client session) answering from the registry. */
const makeServer = (shared: Shared): Server => {
  const { registry, options, run } = shared
  const { agent } = options
  const { ready } = options
  const server = new Server(serverInfo, { capabilities: { tools: { listChanged: true }, logging: {} } })
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) =>
    run(
      Effect.andThen(
        settled(server, registry, ready, extra),
        Effect.map(listing(registry, agent), (tools) => ({
          tools: [...tools.map(toMcpTool), ...(offersStatus(options, tools) ? [StatusTool.tool] : [])]
        }))
      ),
      { signal: extra.signal }
    )
  )
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const { name } = request.params
    const args = request.params.arguments ?? {}
    const options = { signal: extra.signal }
    if (isSettled(ready)) {
      // Most calls: sent at once, the runtime entered only if the call fails.
      const now = registry.callToolNow(name, args, agent, extra.signal)
      if (now !== undefined) {
        return now.then((exit) => (Exit.isSuccess(exit) ? exit.value : run(failure(name)(exit.cause), options)))
      }
    }
    const call = Effect.catchCause(
      Effect.andThen(revive(shared, name), registry.callTool(name, args, agent)),
      failure(name)
    )
    const answer = isSettled(ready) ? call : Effect.andThen(settled(server, registry, ready, extra), call)
    // The status answers at once, start-up or not: that is when a host wants to know.
    return run(
      name === StatusTool.name
        ? Effect.flatMap(listing(registry, agent), (tools) =>
            offersStatus(shared.options, tools) ? statusResult(registry, agent) : answer
          )
        : answer,
      options
    )
  })
  return server
}

/**
 * Sends `tools/list_changed` to every connected client each time the catalog's version moves:
 * only when the offered tools (names, descriptions, schemas) changed, not when a toolset passes
 * through a restart and comes back with the same tools.
 */
const announceChanges = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  initial: Catalog.Catalog,
  servers: () => Iterable<Server>
): Effect.Effect<void> => {
  let announced = initial.version
  return registry.catalogChanges(agent).pipe(
    Stream.runForEach((catalog) =>
      Effect.gen(function* () {
        if (catalog.version === announced) return
        announced = catalog.version
        yield* Effect.logDebug("the catalog changed: sending tools/list_changed")
        yield* Effect.forEach(
          Array.from(servers()),
          (server) =>
            Effect.tryPromise(() => server.sendToolListChanged()).pipe(
              Effect.catch((error) => Effect.logDebug("a client missed tools/list_changed", error))
            ),
          { discard: true }
        )
      })
    ),
    Effect.catchTag("UnknownAgent", (error) => Effect.logWarning(`no longer announcing changes: ${error.message}`))
  )
}

/** The catalog at start; fails when the agent is unknown, so a typo is reported before any client connects. */
const initialListing = (registry: ToolsetRegistry.Registry, agent: string | undefined) =>
  registry.catalog(agent).pipe(Effect.mapError((error) => new GatewayError({ message: error.message, cause: error })))

/**
 * Serves the registry to one client over `transport` (stdio, or an in-memory pair in tests).
 * Closing the scope closes the server and stops announcing catalog changes.
 */
export const connect = (
  registry: ToolsetRegistry.Registry,
  transport: Transport,
  options: Options = {}
): Effect.Effect<void, GatewayError, Scope.Scope> =>
  Effect.gen(function* () {
    const initial = yield* initialListing(registry, options.agent)
    const shared = yield* makeShared(registry, options)
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const server = makeServer(shared)
          await server.connect(transport)
          return server
        },
        catch: (cause) => new GatewayError({ message: `cannot start the MCP server: ${String(cause)}`, cause })
      }),
      McpHttp.closeServer
    )
    yield* Effect.forkScoped(announceChanges(registry, options.agent, initial, () => [server]))
  })

/**
 * For `--http`: starts listening and returns the bound address (port 0 binds a free port). Each
 * client session gets its own Server, in a table bounded in size and idle time; every request
 * passes the gate (Host and Origin only, when none is given). Closing the scope closes every
 * session and the listening socket.
 */
export const listen = (
  registry: ToolsetRegistry.Registry,
  options: Options & { readonly http: Address }
): Effect.Effect<{ readonly port: number; readonly url: string }, GatewayError, Scope.Scope> =>
  Effect.gen(function* () {
    const { http } = options
    const initial = yield* initialListing(registry, options.agent)
    const shared = yield* makeShared(registry, options)
    // Without JWTs there are no keys to find: making the gate cannot fail.
    const gate = http.gate ?? (yield* HttpGate.make({ host: http.host }).pipe(Effect.orDie))
    const endpoint = yield* McpHttp.listen(() => makeServer(shared), { ...http, gate }).pipe(
      Effect.mapError((error) => new GatewayError({ message: error.message, cause: error }))
    )
    yield* Effect.forkScoped(announceChanges(registry, options.agent, initial, endpoint.servers))
    return { port: endpoint.port, url: endpoint.url }
  })

/**
 * Starts the registry's toolsets and serves until interrupted (or, over stdio, until the client
 * closes our stdin): stdio by default, streamable HTTP with `options.http`. The address is bound
 * before any toolset starts, so a taken port fails at once. Closing the scope closes the server
 * (and, for http, the listening socket). Over stdio, stdout belongs to the protocol, so everything else must log to stderr.
 */
export const serve = (
  registry: ToolsetRegistry.Registry,
  options: Options
): Effect.Effect<void, GatewayError, Scope.Scope> =>
  Effect.gen(function* () {
    const { http } = options
    // Clients may connect at once; what they ask waits until the eager toolsets have settled.
    const started = yield* Deferred.make<void>()
    const start = Effect.forkScoped(
      Effect.ignore(registry.start).pipe(Effect.ensuring(Deferred.done(started, Exit.void)))
    )
    options = { ...options, ready: started }
    if (http !== undefined) {
      const { url } = yield* listen(registry, { ...options, http })
      yield* start
      yield* Effect.logInfo(`serving MCP at ${url}`)
      return yield* Effect.never
    }
    yield* connect(registry, new StdioServerTransport(), options)
    yield* start
    yield* Effect.logInfo("serving MCP on stdio")
    // A stdio client ends the session by closing our stdin: then stop every toolset and exit.
    yield* Effect.callback<void>((resume) => {
      const done = () => resume(Effect.void)
      process.stdin.once("end", done)
      process.stdin.once("close", done)
      return Effect.sync(() => {
        process.stdin.off("end", done)
        process.stdin.off("close", done)
      })
    })
    yield* Effect.logInfo("the MCP client closed stdin: stopping")
  })
