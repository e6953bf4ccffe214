/**
 * The requests a server sends its client while a session lives (`sampling/createMessage`,
 * `elicitation/create`, `roots/list`), answered by the app's services (`ClientFeatures`). What
 * the server sends is hostile: bounded in size and depth, decoded, its secrets masked, and only
 * then handed on, with the toolset's name and the origin of the call that caused it. A request whose origin cannot be
 * told (no call in flight, or calls of several origins) is declined unless the service says it
 * handles such requests, and logged either way.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  type Root
} from "@modelcontextprotocol/sdk/types.js"
import { type CallOrigin, JsonLimits, Redaction } from "@toolvisor/core"
import * as LogThrottle from "@toolvisor/core/internal/logThrottle"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as ClientFeatures from "../ClientFeatures.ts"
import * as Elicitation from "../Elicitation.ts"

/** Who caused a request, as far as the toolset can tell. */
export interface Attribution {
  readonly origin: CallOrigin.CallOrigin | undefined
  /** Why there is none: no call in flight, or calls of several origins. */
  readonly unknown?: string | undefined
}

export interface Options {
  readonly name: string
  readonly features: ClientFeatures.Features
  /** The toolset's default roots. */
  readonly roots: ReadonlyArray<Root>
  /** The origin of the calls in flight now. */
  readonly attribution: () => Attribution
}

/** JSON-RPC's code for a request the user rejected (the spec's example, for sampling). */
const rejected = -1

/** What a sampling request may weigh (images included) and how many messages it may hold. */
const maxSamplingBytes = 4 * 1024 * 1024
const maxMessages = 1_000
/** An elicitation is a short form or a link. */
const maxElicitationBytes = 256 * 1024
const maxFields = 100

/**
 * How many of a server's sampling (or elicitation) requests may be answered at once: each runs the
 * agent's model (or asks a person). A hostile server fired 300 at once, and 300 model calls ran.
 */
export const maxInFlight = 4

/** A server's request, refused before any service saw it. */
const refuse = (name: string, method: string, reason: string) =>
  new McpError(-32602, `${name}: ${method} refused: ${reason}`)

/** The JSON size of a request the SDK parsed, or a reason to refuse it. */
const tooBig = (params: unknown, bytes: number): string | undefined => {
  if (JsonLimits.isTooDeep(params)) return `nested deeper than ${JsonLimits.maxDepth} levels`
  const size = JSON.stringify(params).length
  return size > bytes ? `${size} bytes, over the limit of ${bytes}` : undefined
}

/**
 * What a server asks, with every secret the toolsets' configs hold masked: a sampling request goes
 * to a model (the agent's, or a gateway client's), a form to a person, and a server that read its
 * own token from its environment must not hand it on that way.
 */
const masked = <A extends object>(params: A): Effect.Effect<A> =>
  Effect.map(Redaction.Current, (redactor) => (redactor.isEmpty() ? params : Redaction.record(params, redactor.values)))

const SamplingBounds = Schema.Struct({
  messages: Schema.Array(Schema.Unknown).check(Schema.isMaxLength(maxMessages)),
  maxTokens: Schema.Int.check(Schema.isGreaterThan(0))
})

/**
 * Declares the capabilities of the features provided and answers their requests on `client`.
 * `run` runs a handler in the toolset's context, interrupted when the server cancels the request.
 */
export const provides =
  (options: Options, run: <A, E>(effect: Effect.Effect<A, E>, signal: AbortSignal) => Promise<Exit.Exit<A, E>>) =>
  (client: Client): ClientCapabilities => {
    const { name, features } = options
    const declines = LogThrottle.make()
    /** Runs `answer` unless `maxInFlight` of `method` are being answered already. */
    const inFlight = { "sampling/createMessage": 0, "elicitation/create": 0 }
    const bounded = async <A>(method: keyof typeof inFlight, answer: () => Promise<A>): Promise<A> => {
      if (inFlight[method] >= maxInFlight) {
        throw refuse(name, method, `${maxInFlight} are being answered already; ask again once one is done`)
      }
      inFlight[method] += 1
      try {
        return await answer()
      } finally {
        inFlight[method] -= 1
      }
    }
    const capabilities: { -readonly [K in keyof ClientCapabilities]: ClientCapabilities[K] } = {}

    /** The origin to hand on, or `undefined` with the request logged as declined. */
    const originFor = (method: string, withoutOrigin: "decline" | "handle") => {
      const { origin, unknown } = options.attribution()
      if (origin !== undefined || withoutOrigin === "handle") return { declined: false as const, origin }
      return {
        declined: true as const,
        log: declines.warn(
          `${method} ${unknown}`,
          `${name}: declined the server's ${method}: ${unknown ?? "its call is unknown"}`
        )
      }
    }

    const { sampling, elicitation, roots } = features
    if (sampling !== undefined) capabilities.sampling = sampling.tools ? { tools: {} } : {}
    if (elicitation !== undefined) {
      const { form, url } = elicitation.modes
      capabilities.elicitation = { ...(form ? { form: {} } : {}), ...(url ? { url: {} } : {}) }
    }
    if (roots !== undefined) capabilities.roots = roots.listChanged ? { listChanged: true } : {}
    // The SDK accepts a handler only for a capability already declared.
    client.registerCapabilities(capabilities)
    if (sampling !== undefined) {
      client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
        bounded("sampling/createMessage", async () => {
          const { params } = request
          const refused =
            tooBig(params, maxSamplingBytes) ??
            (Schema.is(SamplingBounds)(params)
              ? undefined
              : `more than ${maxMessages} messages or no positive maxTokens`)
          if (refused !== undefined) throw refuse(name, "sampling/createMessage", refused)
          if (!sampling.tools && (params.tools !== undefined || params.toolChoice !== undefined)) {
            throw refuse(name, "sampling/createMessage", "it offers tools, which this client did not declare")
          }
          const who = originFor("sampling/createMessage", sampling.withoutOrigin)
          if (who.declined) {
            await run(who.log, extra.signal)
            throw new McpError(
              rejected,
              "the client declined to sample: no call of its user is known to have caused it"
            )
          }
          const exit = await run(
            Effect.flatMap(masked(params), (shown) =>
              sampling.createMessage({ toolset: name, params: shown, origin: who.origin })
            ),
            extra.signal
          )
          if (Exit.isSuccess(exit)) return exit.value
          const failure = Cause.findErrorOption(exit.cause)
          if (failure._tag === "Some") throw new McpError(rejected, failure.value.message)
          await run(Effect.logError(`${name}: sampling failed`, exit.cause), extra.signal)
          throw new McpError(rejected, "the client could not sample")
        })
      )
    }
    if (elicitation !== undefined) {
      client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
        bounded("elicitation/create", async () => {
          const refused = tooBig(request.params, maxElicitationBytes)
          if (refused !== undefined) throw refuse(name, "elicitation/create", refused)
          const decoded = Schema.decodeUnknownExit(Elicitation.Params)({ mode: "form", ...request.params })
          if (Exit.isFailure(decoded)) {
            throw refuse(name, "elicitation/create", Redaction.redact(Cause.pretty(decoded.cause)))
          }
          const params = decoded.value
          if (params.mode === "form" && Object.keys(params.requestedSchema.properties).length > maxFields) {
            throw refuse(name, "elicitation/create", `a form of more than ${maxFields} fields`)
          }
          const who = originFor("elicitation/create", elicitation.withoutOrigin)
          if (who.declined) {
            await run(who.log, extra.signal)
            return { action: "decline" as const }
          }
          const exit = await run(
            Effect.flatMap(masked(params), (shown) =>
              elicitation.elicit({ toolset: name, params: shown, origin: who.origin })
            ),
            extra.signal
          )
          if (Exit.isSuccess(exit)) return exit.value
          await run(Effect.logError(`${name}: elicitation failed`, exit.cause), extra.signal)
          return { action: "cancel" as const }
        })
      )
    }
    if (roots !== undefined) {
      client.setRequestHandler(ListRootsRequestSchema, async (_request, extra) => {
        const request = { toolset: name, defaults: options.roots, origin: options.attribution().origin }
        const exit = await run(roots.list(request), extra.signal)
        if (Exit.isSuccess(exit)) return { roots: [...exit.value] }
        const declined = Cause.findErrorOption(exit.cause)
        if (declined._tag === "Some") throw new McpError(rejected, declined.value.message)
        throw new McpError(-32603, `${name}: the client could not list its roots`)
      })
    }
    return capabilities
  }

/**
 * Tells the server of `client()` that the roots changed each time the app's roots say so, for as
 * long as the scope lives (the toolset's: it outlives sessions).
 */
export const followRoots = (
  features: ClientFeatures.Features,
  client: () => Client | undefined
): Effect.Effect<void, never, Scope.Scope> =>
  features.roots === undefined || !features.roots.listChanged
    ? Effect.void
    : Effect.asVoid(
        Effect.forkScoped(
          Stream.runForEach(features.roots.changes, () =>
            Effect.promise(
              () =>
                client()
                  ?.sendRootsListChanged()
                  .catch(() => undefined) ?? Promise.resolve()
            )
          )
        )
      )
