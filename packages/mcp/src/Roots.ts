/**
 * Roots (`roots/list`): the folders a server may work in, as its client tells it. Provide this
 * service to declare `roots`; `layer` answers each toolset with its defaults (the folder its
 * server runs in and the config's folder, as the runtime gives them), `layerWith` with a list of
 * the app's own. When `changes` emits, every live session is sent `notifications/roots/list_changed`,
 * and a server that asks again gets the new list. Roots describe the toolset, not a call, so the
 * service is asked whether or not the request's origin is known; it may decline (`Declined`).
 */
import * as NodeUrl from "node:url"
import type { Root as McpRoot } from "@modelcontextprotocol/sdk/types.js"
import type { CallOrigin } from "@toolvisor/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/** A root as MCP says it: a `file://` URI and an optional name. */
export type Root = McpRoot

/** One `roots/list` request of a server. */
export interface Request {
  readonly toolset: string
  /** The toolset's default roots: the folder its server runs in, the config's folder. */
  readonly defaults: ReadonlyArray<Root>
  readonly origin?: CallOrigin.CallOrigin | undefined
}

/**
 * The app will not tell this server its roots (e.g. a gateway that cannot tell whose call asked):
 * the server gets an error with the message, not an empty list it would take as "nowhere".
 */
export class Declined extends Schema.TaggedError<Declined>()("RootsDeclined", {
  toolset: Schema.String,
  message: Schema.String
}) {}

/** What the app gives: the roots per toolset, and when they change. */
export interface Service {
  readonly list: (request: Request) => Effect.Effect<ReadonlyArray<Root>, Declined>
  /** Emits when the roots changed: servers are told (`notifications/roots/list_changed`). */
  readonly changes: Stream.Stream<void>
  /** Whether `changes` can emit, which is declared as `roots.listChanged`. */
  readonly listChanged: boolean
}

/** The app's roots: provide it to a toolset or a registry to tell servers where they may work. */
export class Roots extends Context.Service<Roots, Service>()("@toolvisor/mcp/Roots") {}

/** Roots of the app's own; `changes` (if given) says when `list` would answer differently. */
export const make = (
  list: (request: Request) => Effect.Effect<ReadonlyArray<Root>, Declined>,
  changes?: Stream.Stream<void>
): Service => ({ list, changes: changes ?? Stream.empty, listChanged: changes !== undefined })

/** Each toolset's defaults, which never change. */
export const defaults: Service = make((request) => Effect.succeed(request.defaults))

/** Roots answered with each toolset's defaults. */
export const layer: Layer.Layer<Roots> = Layer.succeed(Roots, defaults)

/** Roots of the app's own (see `make`). */
export const layerWith = (
  list: (request: Request) => Effect.Effect<ReadonlyArray<Root>, Declined>,
  changes?: Stream.Stream<void>
): Layer.Layer<Roots> => Layer.succeed(Roots, make(list, changes))

/** The root of a local folder (an absolute path), named after it. */
export const ofFolder = (folder: string): Root => ({
  uri: NodeUrl.pathToFileURL(folder).href,
  name:
    folder
      .split("/")
      .filter((part) => part !== "")
      .at(-1) ?? folder
})
