/**
 * The gateway's client sessions as the answerers of its backends' requests: a backend that asks
 * for sampling, elicitation or its roots while a tool runs is asked on behalf of the session whose
 * call caused it, and only that session is asked. Every `tools/call` of a session carries the
 * session's key as its `CallOrigin`; the toolset names that origin when the request comes (see
 * `ClientFeatures`), and the request goes to that session's server — on the stream of its call in
 * flight, as the spec would have a request related to it — provided its client declared the
 * capability. Anything else is declined and logged: a session gone or lacking the capability, a
 * request no call of a known session caused (at start-up, or while several sessions call the same
 * backend, which the wire cannot tell apart). There is no one to ask then, so unlike a single-user
 * host the gateway has no "handle anyway" setting.
 *
 * The gateway always provides all three, to every backend: the backends are shared and start
 * before any session, so whether some session will be able to answer is unknown when they are
 * told what their client can do. A session that cannot is declined per request.
 *
 * A wait for a session's answer ends when the backend cancels its request, the session closes,
 * or the session has no call in flight any more — the call that caused it ended, by its answer,
 * its cancellation or its `call_timeout` — so it never outlives the call it belongs to.
 */
import * as NodeCrypto from "node:crypto"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  type ClientCapabilities,
  ElicitRequestParamsSchema,
  ErrorCode,
  McpError,
  type RequestId
} from "@modelcontextprotocol/sdk/types.js"
import type { CallOrigin } from "@toolvisor/core"
import * as LogThrottle from "@toolvisor/core/internal/logThrottle"
import { Elicitation, Roots, Sampling } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * How long at most a session is waited for when its call has no deadline of its own
 * (`call_timeout: none`) or another call of the session stays in flight: a person may take this
 * long over a form. The SDK would otherwise give up after its default minute.
 */
export const maxWait = 10 * 60 * 1000

/** One session as its calls see it. */
export interface Client {
  /** What the session's calls carry to the toolsets. */
  readonly origin: CallOrigin.CallOrigin
  /** A `tools/call` of the session is in flight until the returned function is called. */
  readonly calling: (request: RequestId) => () => void
  /** The session closed: its waits end, and it is forgotten. */
  readonly close: () => void
}

export interface Clients {
  /** Enrols the server of a new session. */
  readonly add: (server: Server) => Client
  /** Sampling, elicitation and roots, each answered by the session whose call asked. */
  readonly layer: Layer.Layer<Sampling.Sampling | Elicitation.Elicitation | Roots.Roots>
}

interface Entry {
  readonly server: Server
  /** The `tools/call` requests in flight, oldest first. */
  readonly calls: Array<RequestId>
  /** The waits for this session's answers, ended with a reason. */
  readonly waits: Set<AbortController>
}

/** Why a request was not put to a session; the service turns it into its own refusal. */
interface Refusal {
  readonly message: string
  readonly cause?: unknown
  /** No call caused the request: declined by policy, not through a fault of anyone's. */
  readonly unattributed?: boolean
}

export const make = (): Clients => {
  const sessions = new Map<string, Entry>()
  const declines = LogThrottle.make()

  const endWaits = (entry: Entry, reason: string) => {
    for (const wait of entry.waits) wait.abort(reason)
    entry.waits.clear()
  }

  const add = (server: Server): Client => {
    const key = NodeCrypto.randomUUID()
    const entry: Entry = { server, calls: [], waits: new Set() }
    sessions.set(key, entry)
    return {
      origin: { key },
      calling: (request) => {
        entry.calls.push(request)
        let left = false
        return () => {
          if (left) return
          left = true
          entry.calls.splice(entry.calls.indexOf(request), 1)
          if (entry.calls.length === 0) endWaits(entry, "the call that caused it has ended")
        }
      },
      close: () => {
        sessions.delete(key)
        endWaits(entry, "the session closed")
      }
    }
  }

  /**
   * A refusal is logged with the toolset and what it asked: as a warning, except a roots request
   * no call caused — what the spec has a server do when its session begins, which it then does
   * without — so that every start of a gateway does not warn.
   */
  const logged =
    (method: string, toolset: string) =>
    <A>(effect: Effect.Effect<A, Refusal>): Effect.Effect<A, Refusal> =>
      Effect.tapError(effect, (refusal) =>
        (refusal.unattributed === true && method === "roots/list" ? declines.info : declines.warn)(
          `${toolset} ${method} ${refusal.message}`,
          `${toolset}: declined the server's ${method}: ${refusal.message}`
        )
      )

  /**
   * Puts a request to the session whose call caused it, if it can answer (`lacks` says why not),
   * bounded as the module says; a refusal otherwise.
   */
  const ask = <A>(
    method: string,
    { toolset, origin }: { readonly toolset: string; readonly origin?: CallOrigin.CallOrigin | undefined },
    lacks: (capabilities: ClientCapabilities) => string | undefined,
    send: (server: Server, options: RequestOptions) => Promise<A>
  ): Effect.Effect<A, Refusal> =>
    Effect.suspend(() => {
      const entry = origin === undefined ? undefined : sessions.get(origin.key)
      const first = entry?.calls[0]
      if (entry === undefined || first === undefined) {
        return Effect.fail(
          origin === undefined
            ? { message: "no call of a gateway session is known to have caused it", unattributed: true }
            : { message: "the session whose call caused it has no call in flight or has closed" }
        )
      }
      const missing = lacks(entry.server.getClientCapabilities() ?? {})
      if (missing !== undefined) return Effect.fail({ message: `the calling session's client ${missing}` })
      const wait = new AbortController()
      entry.waits.add(wait)
      return Effect.tryPromise({
        try: (interrupted) =>
          send(entry.server, {
            signal: AbortSignal.any([interrupted, wait.signal]),
            relatedRequestId: first,
            timeout: maxWait
          }),
        catch: (cause) => ({
          // An error it answered with is its refusal; anything else means no answer came.
          message: wait.signal.aborted
            ? `the calling session did not answer: ${String(wait.signal.reason)}`
            : cause instanceof McpError &&
                cause.code !== ErrorCode.RequestTimeout &&
                cause.code !== ErrorCode.ConnectionClosed
              ? `the calling session refused: ${cause.message}`
              : `the calling session did not answer: ${String(cause)}`,
          cause
        })
      }).pipe(Effect.ensuring(Effect.sync(() => entry.waits.delete(wait))))
    }).pipe(logged(method, toolset))

  const sampling = Sampling.layer(
    (request) =>
      ask(
        "sampling/createMessage",
        request,
        (capabilities) => {
          if (capabilities.sampling === undefined) return "did not declare sampling"
          const tools = request.params.tools !== undefined || request.params.toolChoice !== undefined
          return tools && capabilities.sampling.tools === undefined ? "did not declare sampling with tools" : undefined
        },
        (server, options) => server.createMessage(request.params, options)
      ).pipe(
        Effect.mapError(
          ({ message, cause }) =>
            new Sampling.Declined({ toolset: request.toolset, message: `the gateway declined: ${message}`, cause })
        )
      ),
    { tools: true }
  )

  const elicitation = Elicitation.layer((request) => {
    // The form as the SDK types it: its fields must be ones MCP defines, which a client can show.
    const params = ElicitRequestParamsSchema.safeParse(request.params)
    const asked = params.success
      ? ask(
          "elicitation/create",
          request,
          ({ elicitation }) => {
            if (elicitation === undefined) return "did not declare elicitation"
            // A bare `elicitation: {}` is form mode, as before modes were declared.
            if (params.data.mode === "url" && elicitation.url === undefined) return "did not declare URL elicitation"
            return undefined
          },
          (server, options) => server.elicitInput(params.data, options)
        )
      : Effect.fail({ message: `not a form MCP defines: ${params.error.message}` }).pipe(
          logged("elicitation/create", request.toolset)
        )
    return Effect.orElseSucceed(asked, () => ({ action: "decline" as const }))
  })

  const roots = Roots.layerWith((request) =>
    ask(
      "roots/list",
      request,
      (capabilities) => (capabilities.roots === undefined ? "did not declare roots" : undefined),
      (server, options) => server.listRoots(undefined, options)
    ).pipe(
      Effect.map((answer) => answer.roots),
      Effect.mapError(
        ({ message }) => new Roots.Declined({ toolset: request.toolset, message: `the gateway declined: ${message}` })
      )
    )
  )

  return {
    add,
    layer: Layer.mergeAll(sampling, elicitation, roots)
  }
}
