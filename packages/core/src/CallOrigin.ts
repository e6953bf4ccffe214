/**
 * Who caused a tool call, as its caller names it. A server may send requests back while one of
 * its calls runs (an MCP server asks for sampling or elicitation); a host that serves several
 * clients (a gateway) needs to know whose call it was, to ask that client and no other. The
 * caller attaches an origin to its call (`Current` for an Effect, a parameter of `callToolNow`);
 * the toolset hands it to whatever answers the server's request. The key is opaque to Toolvisor:
 * calls with equal keys count as one origin.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** The caller's name for itself, e.g. a gateway's session id. */
export interface CallOrigin {
  readonly key: string
}

/** The origin of the calls made in this fiber; `undefined` when the caller named none. */
export const Current = Context.Reference<CallOrigin | undefined>("@toolvisor/core/CallOrigin", {
  defaultValue: () => undefined
})

/** Runs `effect` (a `callTool`, of a toolset or a registry) with its calls attributed to `origin`. */
export const attach =
  (origin: CallOrigin) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(effect, Current, origin)

/**
 * `call`, with `leave` run once it settles, either way: how a call made outside the runtime ends
 * what was counted for its origin. Not `finally`, whose extra promises cost every call two more
 * turns of the microtask queue.
 */
export const leaving = <A>(call: Promise<A>, leave: () => void): Promise<A> =>
  call.then(
    (value) => {
      leave()
      return value
    },
    (error: unknown) => {
      leave()
      throw error
    }
  )
