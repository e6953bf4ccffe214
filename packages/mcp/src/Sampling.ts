/**
 * Sampling (`sampling/createMessage`): a server asks its client's model for a completion while
 * one of its tools runs. The app answers with its own model by providing this service; without
 * it the client does not declare `sampling` and no server asks. Requests reach the service
 * bounded in size and checked by the SDK's schema, with the toolset that asked and, when Toolvisor
 * can tell, the origin of the call that caused them (`CallOrigin`).
 */
import type {
  CreateMessageRequestParams,
  CreateMessageResult,
  CreateMessageResultWithTools
} from "@modelcontextprotocol/sdk/types.js"
import type { CallOrigin } from "@toolvisor/core"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** One sampling request of a server. */
export interface Request {
  readonly toolset: string
  readonly params: CreateMessageRequestParams
  /** The caller of the tool call that caused it, when known (see `CallOrigin`). */
  readonly origin?: CallOrigin.CallOrigin | undefined
}

/** A completion; with `tool_use` content only when the request offered `tools`. */
export type Result = CreateMessageResult | CreateMessageResultWithTools

/** The app will not sample for this request (the server is told the user rejected it). */
export class Declined extends Schema.TaggedError<Declined>()("SamplingDeclined", {
  toolset: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** What answers requests whose call has no known origin: the handler anyway, or a refusal (the default). */
export type WithoutOrigin = "decline" | "handle"

/** What the app gives: the handler, and what the client declares for it. */
export interface Service {
  readonly createMessage: (request: Request) => Effect.Effect<Result, Declined>
  /** Declares `sampling.tools`: the handler can answer requests that offer tools (2025-11-25). */
  readonly tools: boolean
  readonly withoutOrigin: WithoutOrigin
}

/** The app's sampling: provide it to a toolset or a registry to let servers sample. */
export class Sampling extends Context.Service<Sampling, Service>()("@toolvisor/mcp/Sampling") {}

/** How `layer` declares the handler: with tools or not (default not), and without an origin (default decline). */
export interface Options {
  readonly tools?: boolean | undefined
  readonly withoutOrigin?: WithoutOrigin | undefined
}

/** Sampling answered by `createMessage`. */
export const layer = (
  createMessage: (request: Request) => Effect.Effect<Result, Declined>,
  options: Options = {}
): Layer.Layer<Sampling> =>
  Layer.succeed(Sampling, {
    createMessage,
    tools: options.tools ?? false,
    withoutOrigin: options.withoutOrigin ?? "decline"
  })
