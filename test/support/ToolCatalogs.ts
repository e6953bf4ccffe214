/**
 * Catalogs of real tool definitions, of any size: the `tools/list` answers recorded from real MCP
 * servers in `test/fixtures/tools` (see `record.mjs` there) and Toolvisor's LSP tools. A catalog
 * of N copies declares every server N times under different names, as a config with many toolsets
 * does; the labelled queries there say which tool serves each request.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { Toolset } from "@toolvisor/core"
import type { Catalog } from "@toolvisor/runtime"
import * as Schema from "effect/Schema"

export const dir = NodePath.resolve(import.meta.dirname, "../fixtures/tools")

/** Every recorded server, by fixture name. */
export const servers = [
  "everything",
  "filesystem",
  "memory",
  "sequential-thinking",
  "github",
  "gitlab",
  "slack",
  "google-maps",
  "brave-search",
  "playwright",
  "notion",
  "lsp"
] as const

export type Server = (typeof servers)[number]

/** The file a replay server serves for one recorded server. */
export const fixture = (server: Server): string => NodePath.join(dir, `${server}.json`)

const Json = Schema.Record(Schema.String, Schema.Unknown)

/** A `tools/list` answer as recorded, with the fields a tool has. */
const Recorded = Schema.Struct({
  tools: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      title: Schema.optional(Schema.String),
      description: Schema.optional(Schema.String),
      inputSchema: Json,
      outputSchema: Schema.optional(Json),
      annotations: Schema.optional(Schema.Struct({ title: Schema.optional(Schema.String) })),
      _meta: Schema.optional(Json)
    })
  )
})

const Queries = Schema.Struct({
  queries: Schema.Array(Schema.Struct({ query: Schema.String, expected: Schema.String }))
})

const readJson = (path: string): unknown => JSON.parse(NodeFs.readFileSync(path, "utf8"))

const cache = new Map<Server, ReadonlyArray<Toolset.Tool>>()

/** The tools one server listed. */
export const tools = (server: Server): ReadonlyArray<Toolset.Tool> => {
  let listed = cache.get(server)
  if (listed === undefined) {
    listed = Schema.decodeUnknownSync(Recorded)(readJson(fixture(server))).tools
    cache.set(server, listed)
  }
  return listed
}

/** The name of the `copy`th toolset of a server: the server's own name first, then `<server>-2`, … */
export const toolsetName = (server: string, copy: number): string => (copy === 1 ? server : `${server}-${copy}`)

/** The server a toolset was copied from, and the tool as it names it: what a labelled query expects. */
export const origin = (entry: Catalog.Entry): string => `${entry.toolset.replace(/-\d+$/, "")}/${entry.tool.name}`

/** Every server `copies` times over, in config order, each tool exposed as `<toolset>_<tool>`. */
export const entries = (copies: number): ReadonlyArray<Catalog.Entry> =>
  Array.from({ length: copies }, (_, i) => i + 1).flatMap((copy) =>
    servers.flatMap((server) => {
      const toolset = toolsetName(server, copy)
      return tools(server).map((tool) => ({ name: `${toolset}_${tool.name}`, toolset, tool, lastKnown: false }))
    })
  )

/** How many copies give a catalog of at least `size` tools. */
export const copiesFor = (size: number): number => Math.ceil(size / entries(1).length)

/** A complete catalog of `entries(copies)`. */
export const catalog = (copies: number, version = 0): Catalog.Catalog => ({
  complete: true,
  tools: entries(copies),
  missing: [],
  shadowed: [],
  offline: [],
  version
})

export interface Labelled {
  readonly query: string
  /** `<server>/<tool>`, as `origin` names an entry. */
  readonly expected: string
}

/** Natural-language requests, each labelled with the tool that serves it. */
export const queries: ReadonlyArray<Labelled> = Schema.decodeUnknownSync(Queries)(
  readJson(NodePath.join(dir, "queries.json"))
).queries
