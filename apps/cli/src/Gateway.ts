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
 *
 * Each session is offered what `SessionOffer` says: its tool group's tools only (`/mcp/<group>`,
 * `serve --group`), deferred ones once its own `search_tools` found them.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerCapabilities,
  type ServerNotification,
  type ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import { ToolGroups } from "@toolvisor/config"
import type { Toolset } from "@toolvisor/core"
import { type Catalog, Deferral, HttpGate, Reprobe, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as GatewayNotices from "./GatewayNotices.ts"
import * as GatewayPages from "./GatewayPages.ts"
import * as GatewayReady from "./GatewayReady.ts"
import * as GatewaySurfaces from "./GatewaySurfaces.ts"
import type * as HttpListen from "./HttpListen.ts"
import * as McpHttp from "./McpHttp.ts"
import type * as McpSessions from "./McpSessions.ts"
import * as SessionOffer from "./SessionOffer.ts"
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
  /** The config's tool groups, by name: over HTTP, `/mcp/<group>` serves one. */
  readonly groups?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  /** Over stdio: serve only this group of `groups` (checked by the caller). */
  readonly group?: string | undefined
  /** Items per page of `tools/list`, `prompts/list` and `resources/list` (`GatewayPages.defaultSize` when omitted). */
  readonly pageSize?: number | undefined
  /** The agent's toolsets: whose servers' log messages its clients hear (every toolset's when omitted). */
  readonly toolsets?: ReadonlyArray<string> | undefined
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

/** How often at most a call to a down toolset's tool restarts it: a host calling in a loop costs one start per cooldown. */
export const reviveCooldown = Duration.seconds(10)

/** What every client session of one gateway shares. */
interface Shared extends GatewaySurfaces.Serving {
  readonly options: Options
  readonly reprobe: Reprobe.Reprobe
  readonly capabilities: ServerCapabilities
}

/**
 * Prompts, resources and completions are declared when some toolset of the agent can offer them
 * (an MCP toolset run here); an agent of LSP toolsets only is offered tools alone.
 */
const capabilitiesOf = (registry: ToolsetRegistry.Registry, options: Options) =>
  Effect.gen(function* () {
    const tools: ServerCapabilities = { tools: { listChanged: true }, logging: {} }
    const prompts = yield* Effect.option(registry.prompts(options.agent))
    const names = options.toolsets ?? (yield* registry.snapshot).map((s) => s.name)
    const unsupported = prompts._tag === "Some" ? new Set(prompts.value.unsupported) : undefined
    if (unsupported === undefined || names.every((name) => unsupported.has(name))) return tools
    return {
      ...tools,
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {}
    } satisfies ServerCapabilities
  })

const makeShared = (registry: ToolsetRegistry.Registry, options: Options) =>
  Effect.gen(function* () {
    const run = yield* FiberSet.makeRuntimePromise<never>()
    const reprobe = yield* Reprobe.make(registry, { cooldown: reviveCooldown, only: Reprobe.failedToStart })
    return {
      registry,
      options,
      run,
      reprobe,
      agent: options.agent,
      ready: options.ready,
      pageSize: options.pageSize ?? GatewayPages.defaultSize,
      capabilities: yield* capabilitiesOf(registry, options)
    } satisfies Shared
  })

/**
 * A catalog entry as MCP lists it: the toolset's definition whole (icons, title, execution,
 * annotations, `_meta`, schemas, and what later revisions add), under its exposed name.
 */
const toMcpTool = (entry: Catalog.Entry) => ({ ...entry.tool, name: entry.name })

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

/**
 * A failed call as the agent reads it: typed errors by tag, a cancelled call, and defects logged.
 * A tool no toolset offers is not an answer but invalid params (-32602), as the spec has it.
 */
const failure =
  (tool: string) =>
  (
    cause: Cause.Cause<ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent>
  ): Effect.Effect<Toolset.ToolResult, McpError> => {
    const error = Cause.findErrorOption(cause)
    if (error._tag === "Some") {
      const { _tag, message } = error.value
      if (_tag === "UnknownTool" || _tag === "ToolNotFound") {
        return Effect.fail(new McpError(ErrorCode.InvalidParams, message, { tool: tool.slice(0, 200) }))
      }
      return Effect.as(Effect.logDebug(`${tool}: ${_tag}: ${message}`), errorResult(_tag, message))
    }
    return Cause.hasInterruptsOnly(cause)
      ? Effect.succeed(errorResult("Interrupted", `the call to ${tool} was cancelled`))
      : Effect.as(Effect.logError(`${tool} failed unexpectedly`, cause), errorResult("Defect", Cause.pretty(cause)))
  }

/** The group named `name` of the config's; undefined for every tool (no name) or a group it lacks. */
const groupOf = (options: Options, name: string | undefined): SessionOffer.Group | undefined => {
  const patterns = name === undefined ? undefined : ToolGroups.find(options, name)
  return name === undefined || patterns === undefined ? undefined : SessionOffer.group(name, patterns)
}

/**
 * What a client's call carries to the backend: its `_meta`, and, when it asked for progress, a
 * listener that relays the backend's progress to this request (so to this session alone, in the
 * order the backend sent it). The backend sees the toolset's own progress token, never the
 * client's. Undefined for a plain call, which then takes the fast path.
 */
const callOptions = (
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>
): Toolset.CallOptions | undefined => {
  if (extra._meta === undefined) return undefined
  const { progressToken, ...meta } = extra._meta
  return {
    ...(Object.keys(meta).length === 0 ? {} : { _meta: meta }),
    ...(progressToken === undefined
      ? {}
      : {
          onProgress: (progress: Toolset.Progress) => {
            extra
              .sendNotification({ method: "notifications/progress", params: { ...progress, progressToken } })
              .catch(() => undefined)
          }
        })
  }
}

/** True for the names the gateway may answer itself rather than route. */
const isOwn = (name: string) => name === StatusTool.name || name === Deferral.name

/** One MCP server (one client session) answering from the registry. */
const makeServer = (shared: Shared, group: SessionOffer.Group | undefined): Server => {
  const { registry, options, run } = shared
  const { agent } = options
  const { ready } = options
  const session = SessionOffer.make(group)
  const server = new Server(serverInfo, { capabilities: shared.capabilities })
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
    run(
      Effect.andThen(
        GatewayReady.settled(server, registry, ready, extra),
        listing(registry, agent).pipe(
          Effect.flatMap((tools) =>
            GatewayPages.page(
              "tools",
              [
                ...session.listed(tools).map(toMcpTool),
                ...(session.searches(tools) ? [SessionOffer.searchTool] : []),
                ...(offersStatus(options, tools) ? [StatusTool.tool] : [])
              ],
              request.params?.cursor,
              shared.pageSize
            )
          ),
          Effect.map(({ items, nextCursor }) => ({
            tools: [...items],
            ...(nextCursor === undefined ? {} : { nextCursor })
          }))
        )
      ),
      { signal: extra.signal }
    )
  )
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const { name } = request.params
    const args = request.params.arguments ?? {}
    const options = { signal: extra.signal }
    const own = isOwn(name)
    if (!own && !session.may(name)) return Promise.reject(SessionOffer.outside(session, name))
    const carried = callOptions(extra)
    if (!own && carried === undefined && GatewayReady.isSettled(ready)) {
      // Most calls: sent at once, the runtime entered only if the call fails.
      const now = registry.callToolNow(name, args, agent, extra.signal)
      if (now !== undefined) {
        return now.then((exit) => (Exit.isSuccess(exit) ? exit.value : run(failure(name)(exit.cause), options)))
      }
    }
    const call = Effect.catchCause(
      Effect.andThen(revive(shared, name), registry.callTool(name, args, agent, carried)),
      failure(name)
    )
    const answer = GatewayReady.isSettled(ready)
      ? call
      : Effect.andThen(GatewayReady.settled(server, registry, ready, extra), call)
    if (!own) return run(answer, options)
    // The status and the search answer at once, start-up or not: that is when a host wants to know.
    // A toolset's own tool of the same name is routed, within the session's group only.
    const ownAnswer = Effect.flatMap(listing(registry, agent), (tools) => {
      if (name === StatusTool.name && offersStatus(shared.options, tools)) return statusResult(registry, agent)
      if (name === Deferral.name && session.searches(tools)) {
        return SessionOffer.search(registry, agent, session, args, extra)
      }
      return session.may(name) ? answer : Effect.fail(SessionOffer.outside(session, name))
    })
    return run(ownAnswer, options)
  })
  if (shared.capabilities.prompts !== undefined) {
    const subscriptions = GatewaySurfaces.register(server, shared)
    // The transport closing (DELETE, expiry, stdin closed) ends what the session subscribed to.
    server.onclose = () => {
      Effect.runFork(subscriptions.close)
    }
  }
  return server
}

/** Everything every session hears, for as long as the scope is open (`GatewayNotices`). */
const notices = (shared: Shared, initial: Catalog.Catalog, sessions: () => Iterable<Server>) => {
  const { registry, agent, options } = shared
  return Effect.all(
    [
      GatewayNotices.toolChanges(registry, agent, initial, sessions),
      GatewayNotices.logs(registry, options.toolsets, sessions),
      ...(shared.capabilities.prompts === undefined ? [] : [GatewayNotices.surfaceChanges(registry, agent, sessions)])
    ],
    { concurrency: "unbounded", discard: true }
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
    const group = options.group === undefined ? undefined : groupOf(options, options.group)
    if (options.group !== undefined && group === undefined) {
      return yield* new GatewayError({ message: ToolGroups.unknownMessage(options, options.group) })
    }
    const shared = yield* makeShared(registry, options)
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const server = makeServer(shared, group)
          await server.connect(transport)
          return server
        },
        catch: (cause) => new GatewayError({ message: `cannot start the MCP server: ${String(cause)}`, cause })
      }),
      McpHttp.closeServer
    )
    yield* Effect.forkScoped(notices(shared, initial, () => [server]))
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
    const groups = ToolGroups.names(options)
    const endpoint = yield* McpHttp.listen((group) => makeServer(shared, groupOf(options, group)), {
      ...http,
      gate,
      groups,
      unknownGroup: (group) => ToolGroups.unknownMessage(options, group)
    }).pipe(Effect.mapError((error) => new GatewayError({ message: error.message, cause: error })))
    yield* Effect.forkScoped(notices(shared, initial, endpoint.servers))
    if (groups.length > 0) yield* Effect.logInfo(`tool groups at ${endpoint.url}/<group>: ${groups.join(", ")}`)
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
    yield* Effect.logInfo(`serving MCP on stdio${options.group === undefined ? "" : `, tool group ${options.group}`}`)
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
