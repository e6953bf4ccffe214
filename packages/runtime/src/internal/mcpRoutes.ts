/**
 * The registry's prompts, resources, subscriptions and completions: each request is routed by
 * the agent's catalogs (`Surfaces`) to the toolset that offers what it names, with the same
 * typed errors as a tool call (`UnknownPrompt`, `UnknownResource` with close names; the
 * toolset's own lifecycle errors). A toolset that is restarting still routes (from its
 * last-known listing) and the request waits for it within `call_timeout`.
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
  readonly memory: Surfaces.Memory
}

export const make = (options: Options) => {
  const { memory } = options
  const sources = (agent: string) =>
    Effect.map(options.agentEntries(agent), (entries) =>
      entries.map(
        (entry): Surfaces.Source => ({ toolset: entry.config.name, prefix: entry.config.prefix, surfaces: entry.mcp })
      )
    )
  const surfacesOf = (agent: string, toolset: string) =>
    Effect.map(options.agentEntries(agent), (entries) => entries.find((e) => e.config.name === toolset)?.mcp)

  const prompts = (agent: string) => Effect.flatMap(sources(agent), (list) => Surfaces.prompts(memory, agent, list))
  const resources = (agent: string) => Effect.flatMap(sources(agent), (list) => Surfaces.resources(memory, agent, list))

  /** The toolset serving a prompt of the catalog, and the prompt's own name there. */
  const promptRoute = (prompt: string, agent: string) =>
    Effect.gen(function* () {
      const catalog = yield* prompts(agent)
      const entry = catalog.prompts.find((p) => p.name === prompt)
      const surfaces = entry === undefined ? undefined : yield* surfacesOf(agent, entry.toolset)
      if (entry === undefined || surfaces === undefined) {
        const names = catalog.prompts.map((p) => p.name)
        const near = Catalog.nearNames(prompt, names)
        return yield* new ToolsetRegistry.UnknownPrompt({
          prompt,
          near,
          incomplete: !catalog.complete,
          message: `no prompt named "${prompt}"${near.length === 0 ? "" : ` (did you mean ${near.join(", ")}?)`}${catalog.complete ? "" : "; some toolsets are not ready, it may appear later"}`
        })
      }
      return { surfaces, name: entry.item.name }
    })

  const resourceRoute = (uri: string, agent: string) =>
    Effect.gen(function* () {
      const catalog = yield* resources(agent)
      const toolset = Surfaces.routeUri(catalog, uri)
      const surfaces = toolset === undefined ? undefined : yield* surfacesOf(agent, toolset)
      if (surfaces === undefined) {
        // URIs share long prefixes: only a few edits away is near.
        const near = Catalog.nearNames(
          uri,
          catalog.resources.map((r) => r.item.uri),
          5,
          Math.max(2, Math.floor(uri.length / 10))
        )
        return yield* new ToolsetRegistry.UnknownResource({
          uri,
          near,
          incomplete: !catalog.complete,
          message: `no toolset lists the resource ${uri} or has a template that matches it${near.length === 0 ? "" : ` (did you mean ${near.join(", ")}?)`}${catalog.complete ? "" : "; some toolsets are not ready, it may appear later"}`
        })
      }
      return surfaces
    })

  return {
    prompts,
    resources,
    getPrompt: (
      prompt: string,
      args: { readonly [key: string]: string } | undefined,
      agent: string,
      options?: McpSurfaces.RequestOptions
    ) => Effect.flatMap(promptRoute(prompt, agent), ({ surfaces, name }) => surfaces.getPrompt(name, args, options)),
    readResource: (uri: string, agent: string, options?: McpSurfaces.RequestOptions) =>
      Effect.flatMap(resourceRoute(uri, agent), (surfaces) => surfaces.readResource(uri, options)),
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
