/**
 * Elicitation (`elicitation/create`): a server asks the user, through its client, for input
 * while one of its tools runs — a form described by a flat JSON Schema, or a URL to open (an
 * out-of-band flow such as a login). The app answers by providing this service; without it the
 * client does not declare `elicitation` and no server asks. Requests reach the service decoded
 * and bounded (a URL request's URL is an absolute http(s) URL), with the toolset that asked and,
 * when Toolvisor can tell, the origin of the call that caused them (`CallOrigin`).
 */
import type { ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import type { CallOrigin } from "@toolvisor/core"
import * as HttpUrl from "@toolvisor/core/internal/httpUrl"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

const Message = Schema.String.check(Schema.isMaxLength(16_384))

/** A form: the user fills in the fields of `requestedSchema` (a flat object schema). */
export const Form = Schema.Struct({
  mode: Schema.Literal("form"),
  message: Message,
  requestedSchema: Schema.Struct({
    type: Schema.Literal("object"),
    properties: Schema.Record(Schema.String, Schema.Unknown),
    required: Schema.optionalKey(Schema.Array(Schema.String))
  })
})
export type Form = typeof Form.Type

/** A URL the user opens; the server learns the outcome out of band, the answer only says whether they went. */
export const Url = Schema.Struct({
  mode: Schema.Literal("url"),
  message: Message,
  url: Schema.String.check(
    Schema.isMaxLength(8_192),
    Schema.makeFilter(HttpUrl.is, { message: "Expected an absolute http:// or https:// URL" })
  ),
  elicitationId: Schema.String.check(Schema.isMaxLength(1_024))
})
export type Url = typeof Url.Type

/** What a server may ask, as it reaches the service. */
export const Params = Schema.Union([Form, Url])
export type Params = typeof Params.Type

/** One elicitation request of a server. */
export interface Request {
  readonly toolset: string
  readonly params: Params
  /** The caller of the tool call that caused it, when known (see `CallOrigin`). */
  readonly origin?: CallOrigin.CallOrigin | undefined
}

/** The user's answer: `accept` (with `content` for a form), `decline` or `cancel`. */
export type Result = ElicitResult

/** What the app gives: the handler, and what it can show, which is all the client declares. */
export interface Service {
  readonly elicit: (request: Request) => Effect.Effect<Result>
  /** The modes the app can show; only these are declared. */
  readonly modes: { readonly form: boolean; readonly url: boolean }
  /** What answers requests whose call has no known origin: the handler anyway, or `decline` (the default). */
  readonly withoutOrigin: "decline" | "handle"
}

/** The app's elicitation: provide it to a toolset or a registry to let servers ask the user. */
export class Elicitation extends Context.Service<Elicitation, Service>()("@toolvisor/mcp/Elicitation") {}

/** How `layer` declares the handler: its modes and what it does with a request of no known origin. */
export interface Options {
  /** Default: both. */
  readonly modes?: { readonly form: boolean; readonly url: boolean } | undefined
  readonly withoutOrigin?: "decline" | "handle" | undefined
}

/** Elicitation answered by `elicit`. */
export const layer = (
  elicit: (request: Request) => Effect.Effect<Result>,
  options: Options = {}
): Layer.Layer<Elicitation> =>
  Layer.succeed(Elicitation, {
    elicit,
    modes: options.modes ?? { form: true, url: true },
    withoutOrigin: options.withoutOrigin ?? "decline"
  })
