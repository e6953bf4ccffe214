/**
 * `toolvisor serve`: one MCP server in front of a registry, serving an agent's catalog — tools
 * (`GatewayTools`: each call routed to the supervised toolset that owns it), prompts, resources
 * and completions (`GatewaySurfaces`) — per client session, over stdio or streamable HTTP (and
 * the legacy SSE transport, `McpHttp`). Definitions pass through whole (hence the SDK's low-level
 * `Server`), and clients hear `list_changed` and their log messages (`GatewayNotices`) whenever
 * what they were given is no longer what is on offer.
 *
 * A gateway outlives its toolsets' restart budgets: a toolset that failed to start is not gone for
 * good here (`GatewayTools` reprobes it before a call). `toolvisor_status` (`StatusTool`) lets a
 * host see why tools are missing.
 *
 * Each session is offered what `SessionOffer` says: its tool group's tools only (`/mcp/<group>`,
 * `serve --group`), deferred ones once its own `search_tools` found them. With `clients`, a
 * backend's sampling, elicitation and roots requests go to the session whose call caused them
 * (`GatewayClients`).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { ServerCapabilities } from "@modelcontextprotocol/sdk/types.js"
import { ToolGroups } from "@toolvisor/config"
import { StdioServer } from "@toolvisor/mcp"
import { type Catalog, Deferral, HttpGate, Reprobe, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as GatewayClients from "./GatewayClients.ts"
import * as GatewayInstructions from "./GatewayInstructions.ts"
import * as GatewayNotices from "./GatewayNotices.ts"
import * as GatewayPages from "./GatewayPages.ts"
import * as GatewaySurfaces from "./GatewaySurfaces.ts"
import * as GatewayTasks from "./GatewayTasks.ts"
import * as GatewayTools from "./GatewayTools.ts"
import type * as HttpListen from "./HttpListen.ts"
import * as McpHttp from "./McpHttp.ts"
import type * as McpSessions from "./McpSessions.ts"
import * as SessionOffer from "./SessionOffer.ts"

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
  /**
   * The sessions that answer the backends' requests, whose `layer` the registry was built with;
   * without it each call is unattributed and such requests are declined.
   */
  readonly clients?: GatewayClients.Clients | undefined
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

/** What every client session of one gateway shares. */
interface Shared extends GatewayTools.Serving {
  readonly options: Options
  readonly capabilities: ServerCapabilities
}

/**
 * Prompts, resources, completions and tasks are declared when some toolset of the agent can offer
 * them (an MCP toolset run here, whose tools may list `execution.taskSupport` once it started); an
 * agent of LSP toolsets only is offered tools alone.
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
      completions: {},
      tasks: GatewayTasks.capability
    } satisfies ServerCapabilities
  })

const makeShared = (registry: ToolsetRegistry.Registry, options: Options) =>
  Effect.gen(function* () {
    const run = yield* FiberSet.makeRuntimePromise<never>()
    const reprobe = yield* Reprobe.make(registry, {
      cooldown: GatewayTools.reviveCooldown,
      only: Reprobe.failedToStart
    })
    return {
      registry,
      options,
      run,
      reprobe,
      statusTool: options.statusTool !== false,
      agent: options.agent,
      ready: options.ready,
      pageSize: options.pageSize ?? GatewayPages.defaultSize,
      capabilities: yield* capabilitiesOf(registry, options)
    } satisfies Shared
  })

/** The group named `name` of the config's; undefined for every tool (no name) or a group it lacks. */
const groupOf = (options: Options, name: string | undefined): SessionOffer.Group | undefined => {
  const patterns = name === undefined ? undefined : ToolGroups.find(options, name)
  return name === undefined || patterns === undefined ? undefined : SessionOffer.group(name, patterns)
}

/** Waits until the eager toolsets have settled, for at most `wait`. */
const settledWithin = (ready: Deferred.Deferred<void> | undefined, wait: Duration.Duration) =>
  ready === undefined ? Effect.void : Effect.asVoid(Effect.timeoutOption(Deferred.await(ready), wait))

/** One MCP server (one client session) answering from the registry. */
const makeServer = (shared: Shared, group: SessionOffer.Group | undefined): Server => {
  // The session's own tasks: no other session can see them, and none outlives the session.
  const tasks = shared.capabilities.tasks === undefined ? undefined : GatewayTasks.make()
  const server = new Server(serverInfo, {
    capabilities: shared.capabilities,
    ...(tasks === undefined ? {} : { taskStore: tasks.store })
  })
  GatewayInstructions.attach(server, () =>
    Effect.runPromise(
      Effect.andThen(
        settledWithin(shared.ready, GatewayInstructions.settleWait),
        Effect.map(shared.registry.catalog(shared.agent), Deferral.instructions)
      )
    )
  )
  const client = shared.options.clients?.add(server)
  GatewayTools.register(server, shared, SessionOffer.make(group), client, tasks)
  const subscriptions = shared.capabilities.prompts === undefined ? undefined : GatewaySurfaces.register(server, shared)
  // The transport closing (DELETE, expiry, stdin closed) ends what the session subscribed to and waits for.
  server.onclose = () => {
    client?.close()
    tasks?.close()
    if (subscriptions !== undefined) Effect.runFork(subscriptions.close)
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
      GatewayTools.warnHidden(registry, agent, shared.statusTool),
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
    // Heard only once the client said it is initialized: until then it lists nothing, and a
    // notification before the answer to `initialize` is one a strict client refuses.
    let initialized = false
    server.oninitialized = () => {
      initialized = true
    }
    yield* Effect.forkScoped(notices(shared, initial, () => (initialized ? [server] : [])))
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
    const transport = yield* StdioServer.make()
    yield* connect(registry, transport, options)
    // Stopped (a signal) with requests in flight: each is answered before the server closes,
    // within a second (a client that reads nothing more would hold the exit for good).
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => transport.abandon(stopping)).pipe(Effect.timeoutOption(Duration.seconds(1)))
    )
    yield* start
    yield* Effect.logInfo(`serving MCP on stdio${options.group === undefined ? "" : `, tool group ${options.group}`}`)
    // A stdio client ends the session by closing our stdin: what it asked is answered, then every
    // toolset stops and we exit.
    yield* Effect.callback<void>((resume) => {
      const done = () => resume(Effect.void)
      process.stdin.once("end", done)
      process.stdin.once("close", done)
      return Effect.sync(() => {
        process.stdin.off("end", done)
        process.stdin.off("close", done)
      })
    })
    yield* Effect.logInfo("the MCP client closed stdin: answering what it asked, then stopping")
    yield* Effect.promise(() => transport.answered())
  })

/** What a request still open when `serve` stops is answered with. */
const stopping = "Toolvisor is stopping: the request was not finished (a tool call may have run)"
