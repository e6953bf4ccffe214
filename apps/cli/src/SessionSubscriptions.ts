/**
 * The resources one gateway session subscribed to (`resources/subscribe`): each is a registry
 * subscription (`ToolsetRegistry.subscribe`, which the toolset keeps across restarts of its
 * server) whose updates go to this session alone, as `notifications/resources/updated`. A
 * session that never subscribes costs nothing: the scope that holds the subscriptions is made at
 * the first one, and closing the session (or its expiry) ends them all, so no stream outlives it.
 * A session may hold `max` at once: each is a subscription on a backend, which a hostile client
 * must not be able to multiply without bound.
 */
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Surfaces, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** The most resources one session may subscribe to at once. */
export const max = 100

export interface SessionSubscriptions {
  /** Subscribes once the URI is known to route to a toolset; invalid params when it does not, or past `max`. */
  readonly subscribe: (uri: string) => Effect.Effect<void, McpError>
  readonly unsubscribe: (uri: string) => Effect.Effect<void>
  /** Ends every subscription; the session is gone. */
  readonly close: Effect.Effect<void>
}

export const make = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  /** Tells this session that a resource may have changed. */
  notify: (uri: string) => Promise<void>
): SessionSubscriptions => {
  let held: { readonly scope: Scope.Closeable; readonly fibers: FiberMap.FiberMap<string> } | undefined
  let closed = false

  const fibersOf = Effect.suspend(() => {
    if (held !== undefined) return Effect.succeed(held.fibers)
    return Effect.gen(function* () {
      const scope = yield* Scope.make()
      const fibers = yield* FiberMap.make<string>().pipe(Scope.provide(scope))
      held = { scope, fibers }
      return fibers
    })
  })

  /** Updates of one URI to this session until interrupted; a subscription that fails is logged and ends. */
  const forward = (uri: string) =>
    registry.subscribe(uri, agent).pipe(
      Stream.runForEach(() =>
        Effect.tryPromise(() => notify(uri)).pipe(
          Effect.catch((error) => Effect.logDebug(`a client missed resources/updated for ${uri}`, error))
        )
      ),
      Effect.catch((error) => Effect.logWarning(`the subscription to ${uri} ended: ${error.message}`))
    )

  const routed = (uri: string) =>
    registry.resources(agent).pipe(
      Effect.map((catalog) => Surfaces.routeUri(catalog, uri) !== undefined),
      Effect.orElseSucceed(() => false)
    )

  return {
    subscribe: (uri) =>
      Effect.gen(function* () {
        if (closed) return
        if (!(yield* routed(uri))) {
          return yield* Effect.fail(
            new McpError(ErrorCode.InvalidParams, `unknown resource: ${uri.slice(0, 200)}`, { uri: uri.slice(0, 200) })
          )
        }
        const fibers = yield* fibersOf
        if (FiberMap.hasUnsafe(fibers, uri)) return
        if ((yield* FiberMap.size(fibers)) >= max) {
          return yield* Effect.fail(
            new McpError(ErrorCode.InvalidParams, `a session may subscribe to ${max} resources at most`)
          )
        }
        yield* FiberMap.run(fibers, uri, forward(uri), { onlyIfMissing: true })
      }),
    unsubscribe: (uri) => (held === undefined ? Effect.void : FiberMap.remove(held.fibers, uri)),
    close: Effect.suspend(() => {
      closed = true
      const scope = held?.scope
      held = undefined
      return scope === undefined ? Effect.void : Scope.close(scope, Exit.void)
    })
  }
}
