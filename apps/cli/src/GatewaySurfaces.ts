/**
 * The gateway's prompts, resources and completions: each request answered from the registry,
 * which routes it to the toolset that offers what it names and, while that toolset restarts,
 * answers lists from its last-known listing and holds reads until it is back (within
 * `call_timeout`). Prompts carry the names the registry gives them (prefixed like tools);
 * resource URIs are the servers' own. Definitions pass whole, only a prompt's name rewritten.
 * What is unknown is invalid params (-32602, as SEP-2164 settles for resources too); a server's
 * own error keeps its code; a toolset that is down is an internal error naming it.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import type { Surfaces, ToolsetRegistry } from "@toolvisor/runtime"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as GatewayPages from "./GatewayPages.ts"
import * as GatewayReady from "./GatewayReady.ts"
import * as SessionSubscriptions from "./SessionSubscriptions.ts"

/**
 * Runs an Effect from an SDK callback; owned by the serving scope, so closing it interrupts calls.
 * A failure rejects with the error, which the SDK answers as a JSON-RPC error (an `McpError` with its code).
 */
export type RunPromise = <A, E = never>(
  effect: Effect.Effect<A, E>,
  options?: { readonly signal?: AbortSignal }
) => Promise<A>

/** What the handlers of every session share. */
export interface Serving {
  readonly registry: ToolsetRegistry.Registry
  readonly agent: string | undefined
  readonly ready: Deferred.Deferred<void> | undefined
  readonly run: RunPromise
  readonly pageSize: number
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** What a failed request for a prompt, a resource or a completion answers. */
export const toMcpError = (
  error: ToolsetRegistry.SurfaceError | ToolsetRegistry.UnknownPrompt | ToolsetRegistry.UnknownResource
): McpError => {
  switch (error._tag) {
    case "UnknownPrompt":
      return new McpError(ErrorCode.InvalidParams, error.message, { prompt: error.prompt, near: error.near })
    case "UnknownResource":
      return new McpError(ErrorCode.InvalidParams, error.message, { uri: error.uri, near: error.near })
    case "McpRequestFailed":
      return new McpError(error.code ?? ErrorCode.InternalError, error.message)
    default:
      return new McpError(ErrorCode.InternalError, `${error._tag}: ${error.message}`)
  }
}

/** A request's `_meta` for the backend: all of it but the progress token, which belongs to this session. */
const forwardedMeta = (extra: Extra) => {
  if (extra._meta === undefined) return {}
  const { progressToken: _, ...rest } = extra._meta
  return Object.keys(rest).length === 0 ? {} : { _meta: rest }
}

/**
 * Answers prompts/*, resources/* and completion/complete on `server` (one session). The session's
 * subscriptions are returned so the caller ends them with the session.
 */
export const register = (server: Server, serving: Serving): SessionSubscriptions.SessionSubscriptions => {
  const { registry, agent, ready, run, pageSize } = serving
  /** Runs once the eager toolsets have settled: before that, every list would be empty. */
  const answer = <A, E>(extra: Extra, effect: Effect.Effect<A, E>) =>
    run(Effect.andThen(GatewayReady.settled(server, registry, ready, extra), effect), { signal: extra.signal })
  /**
   * A read sent at once once the gateway has settled, as tool calls are (`callToolNow`): the
   * runtime entered only if it fails; `effect` (which routes, names the unknown and waits for a
   * restarting toolset) when it cannot be sent now, built only then.
   */
  const answerNow = <A, E extends Parameters<typeof toMcpError>[0]>(
    extra: Extra,
    now: (signal: AbortSignal) => Promise<Exit.Exit<A, E>> | undefined,
    effect: () => Effect.Effect<A, E>
  ) => {
    const sent = GatewayReady.isSettled(ready) ? now(extra.signal) : undefined
    if (sent === undefined) return answer(extra, Effect.mapError(effect(), toMcpError))
    return sent.then((exit) =>
      Exit.isSuccess(exit)
        ? exit.value
        : run(Effect.mapError(Effect.failCause(exit.cause), toMcpError), { signal: extra.signal })
    )
  }
  const subscriptions = SessionSubscriptions.make(registry, agent, (uri) => server.sendResourceUpdated({ uri }))

  server.setRequestHandler(ListPromptsRequestSchema, (request, extra) =>
    answer(
      extra,
      registry.prompts(agent).pipe(
        Effect.mapError(toMcpError),
        Effect.flatMap((catalog) => GatewayPages.page("prompts", catalog.prompts, request.params?.cursor, pageSize)),
        Effect.map(({ items, nextCursor }) => ({
          prompts: items.map((entry) => ({ ...entry.item, name: entry.name })),
          ...(nextCursor === undefined ? {} : { nextCursor })
        }))
      )
    )
  )
  server.setRequestHandler(GetPromptRequestSchema, (request, extra) => {
    const { name, arguments: args } = request.params
    const meta = forwardedMeta(extra)
    return answerNow(
      extra,
      (signal) => registry.getPromptNow(name, args, agent, meta, signal),
      () => registry.getPrompt(name, args, agent, meta)
    )
  })
  /** A page of the agent's resources or resource templates (`list`): the servers' definitions, whole. */
  const resourcePage = <A>(
    extra: Extra,
    list: string,
    cursor: string | undefined,
    select: (catalog: Surfaces.ResourceCatalog) => ReadonlyArray<Surfaces.Offered<A>>
  ) =>
    answer(
      extra,
      registry.resources(agent).pipe(
        Effect.mapError(toMcpError),
        Effect.flatMap((catalog) => GatewayPages.page(list, select(catalog), cursor, pageSize)),
        Effect.map(({ items, nextCursor }) => ({
          items: items.map((entry) => entry.item),
          ...(nextCursor === undefined ? {} : { nextCursor })
        }))
      )
    )
  server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
    resourcePage(extra, "resources", request.params?.cursor, (c) => c.resources).then(({ items, ...rest }) => ({
      resources: items,
      ...rest
    }))
  )
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (request, extra) =>
    resourcePage(extra, "resources/templates", request.params?.cursor, (c) => c.templates).then(
      ({ items, ...rest }) => ({ resourceTemplates: items, ...rest })
    )
  )
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) => {
    const { uri } = request.params
    const meta = forwardedMeta(extra)
    return answerNow(
      extra,
      (signal) => registry.readResourceNow(uri, agent, meta, signal),
      () => registry.readResource(uri, agent, meta)
    )
  })
  server.setRequestHandler(SubscribeRequestSchema, (request, extra) =>
    answer(extra, Effect.as(subscriptions.subscribe(request.params.uri), {}))
  )
  server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) =>
    run(Effect.as(subscriptions.unsubscribe(request.params.uri), {}), { signal: extra.signal })
  )
  server.setRequestHandler(CompleteRequestSchema, (request, extra) =>
    answer(
      extra,
      registry.complete(request.params, agent).pipe(
        Effect.mapError(toMcpError),
        Effect.map((completion) => ({ completion }))
      )
    )
  )
  return subscriptions
}
