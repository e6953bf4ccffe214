/**
 * The gateway's tools: `tools/list` (the session's offer, in pages, with `search_tools` and
 * `toolvisor_status` when they apply) and `tools/call`, routed to the supervised toolset that owns
 * the tool. Typed call failures come back as `isError` results the agent can read; a tool no
 * toolset offers is invalid params.
 *
 * A call to a tool of a toolset that failed to start first runs the runtime's reprobe (the same
 * mechanism the agent adapters run in a turn), bounded to one per call and one per cooldown, so a
 * server that can start now is used. A server that crashed until its budget was spent is left
 * alone: a call must not buy it a new crash loop.
 *
 * A plain call, once the toolsets have settled, takes the fast path (`callToolNow`, outside the
 * runtime); one carrying a progress token or `_meta` goes through `registry.callTool` with them.
 * Either way the client's cancellation interrupts the backend call, and the call carries the
 * session's origin (`GatewayClients`), so what the backend asks meanwhile reaches this session.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  type CallToolRequest,
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import { CallOrigin, type Toolset } from "@toolvisor/core"
import { type Catalog, Deferral, type Reprobe, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type * as GatewayClients from "./GatewayClients.ts"
import * as GatewayPages from "./GatewayPages.ts"
import * as GatewayReady from "./GatewayReady.ts"
import type * as GatewaySurfaces from "./GatewaySurfaces.ts"
import * as GatewayTasks from "./GatewayTasks.ts"
import * as SessionOffer from "./SessionOffer.ts"
import * as StatusTool from "./StatusTool.ts"

/** How often at most a call to a down toolset's tool restarts it: a host calling in a loop costs one start per cooldown. */
export const reviveCooldown = Duration.seconds(10)

/** What the tool handlers of every session share. */
export interface Serving extends GatewaySurfaces.Serving {
  readonly reprobe: Reprobe.Reprobe
  /** Offer `toolvisor_status` besides the catalog's tools. */
  readonly statusTool: boolean
}

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
/** Whether the gateway offers `toolvisor_status`: a toolset's tool of that name is then hidden. */
const offersStatus = (serving: Serving) => serving.statusTool

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
const revive = (serving: Serving, tool: string) =>
  serving.registry.catalog(serving.agent).pipe(
    Effect.flatMap((catalog) =>
      catalog.complete || catalog.tools.some((t) => t.name === tool) ? Effect.void : serving.reprobe.reprobe
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
 * A tool no toolset offers is not an answer but invalid params (-32602), as the spec has it — once
 * every toolset has listed its tools. While some are down the tool may be theirs: the agent reads
 * which toolsets are not ready, as a result it can act on, and may call again.
 */
const failure =
  (tool: string) =>
  (
    cause: Cause.Cause<ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent>
  ): Effect.Effect<Toolset.ToolResult, McpError> => {
    const error = Cause.findErrorOption(cause)
    if (error._tag === "Some") {
      const { _tag, message } = error.value
      const unknown = error.value._tag === "UnknownTool" ? !error.value.incomplete : _tag === "ToolNotFound"
      if (unknown) {
        return Effect.fail(new McpError(ErrorCode.InvalidParams, message, { tool: tool.slice(0, 200) }))
      }
      return Effect.as(Effect.logDebug(`${tool}: ${_tag}: ${message}`), errorResult(_tag, message))
    }
    return Cause.hasInterruptsOnly(cause)
      ? Effect.succeed(errorResult("Interrupted", `the call to ${tool} was cancelled`))
      : Effect.as(Effect.logError(`${tool} failed unexpectedly`, cause), errorResult("Defect", Cause.pretty(cause)))
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

/**
 * Warns, once for each, of a toolset's tool whose name a gateway tool takes (`register` hides it):
 * `toolvisor_status` while the gateway offers it, `search_tools` while the agent defers tools.
 */
export const warnHidden = (registry: ToolsetRegistry.Registry, agent: string | undefined, statusTool: boolean) => {
  const warned = new Set<string>()
  return registry.catalogChanges(agent).pipe(
    Stream.runForEach((catalog) => {
      const deferring = catalog.tools.some((entry) => entry.deferred === true)
      const hidden = catalog.tools.filter(
        (entry) =>
          ((statusTool && entry.name === StatusTool.name) || (deferring && entry.name === Deferral.name)) &&
          !warned.has(`${entry.toolset}/${entry.name}`)
      )
      return Effect.forEach(
        hidden,
        (entry) => {
          warned.add(`${entry.toolset}/${entry.name}`)
          return Effect.logWarning(
            `${entry.toolset}: its tool ${entry.name} is hidden by the gateway's own ${entry.name}; to offer both, give ${entry.toolset} a name of its own`
          )
        },
        { discard: true }
      )
    }),
    Effect.ignore
  )
}

/** True for the names the gateway may answer itself rather than route. */
const isOwn = (name: string) => name === StatusTool.name || name === Deferral.name

/**
 * Answers tools/list and tools/call on `server`, one session, offered what `session` says; the
 * calls of `client` (when the gateway routes backends' requests) are in flight while they run.
 * With `tasks`, a call with a `task` param runs as one of the session's tasks (`GatewayTasks`).
 */
export const register = (
  server: Server,
  serving: Serving,
  session: SessionOffer.SessionOffer,
  client?: GatewayClients.Client,
  tasks?: GatewayTasks.Tasks
): void => {
  const { registry, agent, ready, run, pageSize } = serving
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
    run(
      Effect.andThen(
        GatewayReady.settled(server, registry, ready, extra),
        listing(registry, agent).pipe(
          Effect.flatMap((tools) => {
            const searches = session.searches(tools)
            const status = offersStatus(serving)
            // The gateway's own tools take their names: a toolset's tool of one is not listed (nor called).
            const hidden = (entry: Catalog.Entry) =>
              (searches && entry.name === Deferral.name) || (status && entry.name === StatusTool.name)
            return GatewayPages.page(
              "tools",
              [
                ...session
                  .listed(tools)
                  .filter((entry) => !hidden(entry))
                  .map(toMcpTool),
                ...(searches ? [SessionOffer.searchTool] : []),
                ...(status ? [StatusTool.tool] : [])
              ],
              request.params?.cursor,
              pageSize
            )
          }),
          Effect.map(({ items, nextCursor }) => ({
            tools: [...items],
            ...(nextCursor === undefined ? {} : { nextCursor })
          }))
        )
      ),
      { signal: extra.signal }
    )
  )
  const callTool = (
    request: CallToolRequest,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
    task: boolean
  ) => {
    const { name } = request.params
    const args = request.params.arguments ?? {}
    const signal = { signal: extra.signal }
    const own = isOwn(name)
    if (!own && !session.may(name)) return Promise.reject(SessionOffer.outside(session, name))
    const carried = task ? { ...callOptions(extra), task } : callOptions(extra)
    if (!own && carried === undefined && GatewayReady.isSettled(ready)) {
      // Most calls: sent at once, the runtime entered only if the call fails.
      const now = registry.callToolNow(name, args, agent, extra.signal, client?.origin)
      if (now !== undefined) {
        return now.then((exit) => (Exit.isSuccess(exit) ? exit.value : run(failure(name)(exit.cause), signal)))
      }
    }
    const routed = registry.callTool(name, args, agent, carried)
    const call = Effect.catchCause(
      Effect.andThen(revive(serving, name), client === undefined ? routed : CallOrigin.attach(client.origin)(routed)),
      failure(name)
    )
    const answer = GatewayReady.isSettled(ready)
      ? call
      : Effect.andThen(GatewayReady.settled(server, registry, ready, extra), call)
    if (!own) return run(answer, signal)
    // The status and the search answer at once, start-up or not: that is when a host wants to know.
    // A toolset's own tool of the same name is routed only while the gateway does not offer its own.
    const ownAnswer = Effect.flatMap(listing(registry, agent), (tools) => {
      if (name === StatusTool.name && offersStatus(serving)) return statusResult(registry, agent)
      if (name === Deferral.name && session.searches(tools)) {
        return SessionOffer.search(registry, agent, session, args, extra)
      }
      return session.may(name) ? answer : Effect.fail(SessionOffer.outside(session, name))
    })
    return run(ownAnswer, signal)
  }
  const called = (
    request: CallToolRequest,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
    task: boolean
  ) => {
    if (client === undefined) return callTool(request, extra, task)
    const leave = client.calling(extra.requestId)
    return CallOrigin.leaving(callTool(request, extra, task), leave)
  }
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    if (request.params.task === undefined || tasks === undefined) return called(request, extra, false)
    const { name } = request.params
    if (!session.may(name)) return Promise.reject(SessionOffer.outside(session, name))
    const admitted = Effect.andThen(
      GatewayReady.settled(server, registry, ready, extra),
      GatewayTasks.admit(registry, agent, name, isOwn(name))
    )
    return run(admitted, { signal: extra.signal }).then(() =>
      tasks.start(extra, (signal) => called(request, { ...extra, signal }, true))
    )
  })
}
