/**
 * The registry's prompts, resources, subscriptions and completions: each request is routed by
 * the agent's catalogs (`Surfaces`) to the toolset that offers what it names, with the same
 * typed errors as a tool call (`UnknownPrompt`, `UnknownResource` with close names; the
 * toolset's own lifecycle errors). A toolset that is restarting still routes (from its
 * last-known listing) and the request waits for it within `call_timeout`. Catalogs are kept
 * while nothing they are built from moved (a status, the config, a listing: each toolset's
 * `listingsVersion` moves as its server's `list_changed` is handled), so a request costs a
 * lookup and a prompt or resource that appears or goes is routed accordingly at once.
 */
import type { AgentConfig } from "@toolvisor/config"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Catalog from "../Catalog.ts"
import * as Surfaces from "../Surfaces.ts"
import * as ToolsetRegistry from "../ToolsetRegistry.ts"

/** A running toolset as these routes see it. */
export interface Entry {
  readonly config: Pick<AgentConfig.ToolsetConfig, "name" | "prefix">
  readonly mcp: McpSurfaces.Surfaces | undefined
}

export interface Options {
  readonly agentEntries: (agent: string) => Effect.Effect<ReadonlyArray<Entry>, ToolsetRegistry.UnknownAgent>
  /** Moves whenever a toolset's status, the config or the running set changes. */
  readonly version: () => number
  readonly memory: Surfaces.Memory
}

/**
 * What a catalog was built from: the registry's version and each toolset's listings version, in
 * config order. While neither moves, the catalog (and the routes in it) is what a fresh one would be.
 */
interface Stamp {
  readonly at: number
  readonly listings: ReadonlyArray<number>
}

const listingsOf = (entry: Entry) => entry.mcp?.listingsVersion() ?? -1

const stampOf = (at: number, entries: ReadonlyArray<Entry>): Stamp => ({ at, listings: entries.map(listingsOf) })

/** Whether `stamp` is what `stampOf(at, entries)` would be, checked without building it (every request checks). */
const isStamp = (stamp: Stamp, at: number, entries: ReadonlyArray<Entry>) => {
  if (stamp.at !== at || stamp.listings.length !== entries.length) return false
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]
    if (entry === undefined || listingsOf(entry) !== stamp.listings[i]) return false
  }
  return true
}

/**
 * An agent's catalog of one kind, each of its toolsets' surfaces by name (where a route leads),
 * and the catalog's routes, indexed once per catalog so a request costs a lookup, not a scan.
 */
interface Kept<C, R> {
  readonly catalog: C
  readonly surfaces: ReadonlyMap<string, McpSurfaces.Surfaces>
  readonly route: R
}

export const make = (options: Options) => {
  const { memory } = options
  const sourceOf = (entry: Entry): Surfaces.Source => ({
    toolset: entry.config.name,
    prefix: entry.config.prefix,
    surfaces: entry.mcp
  })

  /**
   * An agent's catalogs of one kind, kept until the registry's version or a listing's version
   * moves, as tools keep theirs: a request costs one lookup, not a rebuild of every listing.
   * An incomplete catalog (a toolset down, or its listing failed) is built again each time.
   */
  const keeping = <C extends { readonly complete: boolean }, R>(
    build: (agent: string, sources: ReadonlyArray<Surfaces.Source>) => Effect.Effect<C>,
    index: (catalog: C) => R
  ) => {
    const kept = new Map<string, Kept<C, R> & { readonly stamp: Stamp; readonly entries: ReadonlyArray<Entry> }>()
    const get = (agent: string): Effect.Effect<Kept<C, R>, ToolsetRegistry.UnknownAgent> =>
      Effect.flatMap(options.agentEntries(agent), (entries) => {
        const at = options.version()
        const found = kept.get(agent)
        if (found !== undefined && isStamp(found.stamp, at, entries)) return Effect.succeed(found)
        const stamp = stampOf(at, entries)
        return Effect.map(build(agent, entries.map(sourceOf)), (catalog) => {
          const surfaces = new Map(
            entries.flatMap((e) => (e.mcp === undefined ? [] : [[e.config.name, e.mcp] as const]))
          )
          const fresh = { catalog, surfaces, route: index(catalog), stamp, entries }
          if (catalog.complete) kept.set(agent, fresh)
          else kept.delete(agent)
          return fresh
        })
      })
    /**
     * The kept catalogs, read outside the runtime: only while nothing they were built from moved
     * (the registry's version covers the agent's toolsets, so its entries are still these).
     */
    const now = (agent: string): Kept<C, R> | undefined => {
      const found = kept.get(agent)
      return found !== undefined && isStamp(found.stamp, options.version(), found.entries) ? found : undefined
    }
    return { get, now }
  }
  const promptsKept = keeping((agent, sources) => Surfaces.prompts(memory, agent, sources), Surfaces.promptRouter)
  const resourcesKept = keeping((agent, sources) => Surfaces.resources(memory, agent, sources), Surfaces.uriRouter)
  const prompts = (agent: string) => Effect.map(promptsKept.get(agent), (kept) => kept.catalog)
  const resources = (agent: string) => Effect.map(resourcesKept.get(agent), (kept) => kept.catalog)

  /** The toolset serving a prompt of the catalog, and the prompt's own name there. */
  const promptIn = (kept: Kept<Surfaces.PromptCatalog, Surfaces.Router<Surfaces.PromptEntry>>, prompt: string) => {
    const entry = kept.route(prompt)
    const surfaces = entry === undefined ? undefined : kept.surfaces.get(entry.toolset)
    return entry === undefined || surfaces === undefined ? undefined : { surfaces, name: entry.item.name }
  }

  const promptRoute = (prompt: string, agent: string) =>
    Effect.flatMap(promptsKept.get(agent), (kept) => {
      const route = promptIn(kept, prompt)
      if (route !== undefined) return Effect.succeed(route)
      const { catalog } = kept
      const near = Catalog.nearNames(
        prompt,
        catalog.prompts.map((p) => p.name)
      )
      return Effect.fail(
        new ToolsetRegistry.UnknownPrompt({
          prompt,
          near,
          incomplete: !catalog.complete,
          message: `no prompt named "${prompt}"${near.length === 0 ? "" : ` (did you mean ${near.join(", ")}?)`}${catalog.complete ? "" : "; some toolsets are not ready, it may appear later"}`
        })
      )
    })

  /** The toolset that lists a resource or has a template that matches it. */
  const resourceIn = (kept: Kept<Surfaces.ResourceCatalog, Surfaces.Router<string>>, uri: string) => {
    const toolset = kept.route(uri)
    return toolset === undefined ? undefined : kept.surfaces.get(toolset)
  }

  const resourceRoute = (uri: string, agent: string) =>
    Effect.flatMap(resourcesKept.get(agent), (kept) => {
      const surfaces = resourceIn(kept, uri)
      if (surfaces !== undefined) return Effect.succeed(surfaces)
      const { catalog } = kept
      // URIs share long prefixes: only a few edits away is near.
      const near = Catalog.nearNames(
        uri,
        catalog.resources.map((r) => r.item.uri),
        5,
        Math.max(2, Math.floor(uri.length / 10))
      )
      return Effect.fail(
        new ToolsetRegistry.UnknownResource({
          uri,
          near,
          incomplete: !catalog.complete,
          message: `no toolset lists the resource ${uri} or has a template that matches it${near.length === 0 ? "" : ` (did you mean ${near.join(", ")}?)`}${catalog.complete ? "" : "; some toolsets are not ready, it may appear later"}`
        })
      )
    })

  /**
   * `getPrompt` outside the runtime, as tools have `callToolNow`: a route of a kept catalog to a
   * toolset that is live now (`McpSurfaces.getPromptNow`); `undefined` leaves it to `getPrompt`,
   * which builds the catalog, names what is unknown and waits for a toolset that is restarting.
   */
  const getPromptNow = (
    prompt: string,
    args: { readonly [key: string]: string } | undefined,
    agent: string,
    options?: McpSurfaces.RequestOptions,
    signal?: AbortSignal
  ) => {
    const kept = promptsKept.now(agent)
    const route = kept === undefined ? undefined : promptIn(kept, prompt)
    return route?.surfaces.getPromptNow(route.name, args, options, signal)
  }

  /** `readResource` outside the runtime, as `getPromptNow`. */
  const readResourceNow = (uri: string, agent: string, options?: McpSurfaces.RequestOptions, signal?: AbortSignal) => {
    const kept = resourcesKept.now(agent)
    return (kept === undefined ? undefined : resourceIn(kept, uri))?.readResourceNow(uri, options, signal)
  }

  return {
    prompts,
    resources,
    getPrompt: (
      prompt: string,
      args: { readonly [key: string]: string } | undefined,
      agent: string,
      options?: McpSurfaces.RequestOptions
    ) => Effect.flatMap(promptRoute(prompt, agent), ({ surfaces, name }) => surfaces.getPrompt(name, args, options)),
    getPromptNow,
    readResource: (uri: string, agent: string, options?: McpSurfaces.RequestOptions) =>
      Effect.flatMap(resourceRoute(uri, agent), (surfaces) => surfaces.readResource(uri, options)),
    readResourceNow,
    subscribe: (uri: string, agent: string) =>
      Stream.unwrap(Effect.map(resourceRoute(uri, agent), (surfaces) => surfaces.subscribe(uri))),
    complete: (params: McpSurfaces.CompleteParams, agent: string) =>
      params.ref.type === "ref/prompt"
        ? Effect.flatMap(promptRoute(params.ref.name, agent), ({ surfaces, name }) =>
            surfaces.complete({ ...params, ref: { type: "ref/prompt", name } })
          )
        : Effect.flatMap(resourceRoute(params.ref.uri, agent), (surfaces) => surfaces.complete(params))
  }
}
