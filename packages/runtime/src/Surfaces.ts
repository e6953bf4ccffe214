/**
 * An agent's prompts and resources, gathered from its MCP toolsets in config order, and the
 * routes of requests for them. Prompts are named like tools: with the toolset's `name` as prefix
 * when the config gives one (`Catalog.exposedName`). Resource URIs are never rewritten (servers
 * put them in their answers): a URI routes to the toolset that lists it, else to the first
 * whose template matches it. When two toolsets offer the same prompt name or resource URI, the
 * first in config order wins and the clash is reported in the catalog, never silently dropped.
 * A restarting toolset keeps its last-known listings (marked so), and a request routed to it
 * waits for it to be Ready within `call_timeout`. A catalog's `version` moves only when what it
 * offers changes.
 */
import type { Prompt, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Catalog from "./Catalog.ts"

/** A toolset of the agent with MCP surfaces (`undefined` for one without: LSP, or a cluster's). */
export interface Source {
  readonly toolset: string
  readonly prefix: string | undefined
  readonly surfaces: McpSurfaces.Surfaces | undefined
}

/** One name or URI two toolsets offer; the first in config order serves it. */
export interface Clash {
  readonly name: string
  readonly toolset: string
  readonly shadowedBy: string
}

/** What a clash is about: a prompt's name, or a resource's URI or template. */
export type ClashKind = "prompt" | "resource"

/** A clash as the log, `inspect` and `validate --check` say it. */
export const clashMessage = (kind: ClashKind, clash: Clash): string =>
  `${kind} "${clash.name}" of ${clash.toolset} is shadowed by ${clash.shadowedBy} (the first in config order wins)`

/** A prompt, resource or template on offer, with the toolset that serves it. */
export interface Offered<A> {
  readonly toolset: string
  readonly item: A
  /** From the toolset's last listing, because it is restarting. */
  readonly lastKnown: boolean
}

/** A prompt on offer, under the name the agent asks for it by. */
export interface PromptEntry extends Offered<Prompt> {
  /** The name the agent asks for. */
  readonly name: string
}

/** An agent's prompts, whole or not, with the clashes and the toolsets that cannot offer any. */
export interface PromptCatalog {
  readonly complete: boolean
  readonly prompts: ReadonlyArray<PromptEntry>
  readonly clashes: ReadonlyArray<Clash>
  /** Toolsets whose prompts and resources are not reachable through this registry (LSP, cluster). */
  readonly unsupported: ReadonlyArray<string>
  readonly version: number
}

/** An agent's resources and templates, whole or not, with the clashes and the toolsets that cannot offer any. */
export interface ResourceCatalog {
  readonly complete: boolean
  readonly resources: ReadonlyArray<Offered<Resource>>
  readonly templates: ReadonlyArray<Offered<ResourceTemplate>>
  readonly clashes: ReadonlyArray<Clash>
  readonly unsupported: ReadonlyArray<string>
  readonly version: number
}

interface Gathered<A> {
  readonly complete: boolean
  readonly items: ReadonlyArray<Offered<A> & { readonly prefix: string | undefined }>
}

/** One toolset's listings, in full (a dry run's), for `clashesOf`. */
export interface Listed {
  readonly toolset: string
  readonly prefix: string | undefined
  readonly prompts: ReadonlyArray<Prompt>
  readonly resources: ReadonlyArray<Resource>
  readonly templates: ReadonlyArray<ResourceTemplate>
}

/** The clashes an agent of these toolsets (in config order) would have: what its catalogs report. */
export const clashesOf = (
  listed: ReadonlyArray<Listed>
): { readonly prompts: ReadonlyArray<Clash>; readonly resources: ReadonlyArray<Clash> } => {
  const each = <A>(items: (listed: Listed) => ReadonlyArray<A>, key: (listed: Listed, item: A) => string) =>
    firstByKey(
      listed.flatMap((l) => items(l).map((item) => ({ toolset: l.toolset, key: key(l, item) }))),
      (entry) => entry.key
    ).clashes
  return {
    prompts: each(
      (l) => l.prompts,
      (l, prompt) => Catalog.exposedName(l.prefix, prompt.name)
    ),
    resources: [
      ...each(
        (l) => l.resources,
        (_, resource) => resource.uri
      ),
      ...each(
        (l) => l.templates,
        (_, template) => template.uriTemplate
      )
    ]
  }
}

/** Every source's listing of one kind, in config order. */
const gather = <A>(
  sources: ReadonlyArray<Source>,
  list: (
    surfaces: McpSurfaces.Surfaces
  ) => Effect.Effect<{ readonly complete: boolean; readonly items: ReadonlyArray<A> }, unknown>
): Effect.Effect<Gathered<A>> =>
  Effect.map(
    Effect.forEach(sources, (source) =>
      source.surfaces === undefined
        ? Effect.succeed({ complete: true, items: [] })
        : Effect.map(
            Effect.orElseSucceed(list(source.surfaces), () => ({ complete: false, items: [] })),
            (listing) => ({
              complete: listing.complete,
              items: listing.items.map((item) => ({
                toolset: source.toolset,
                prefix: source.prefix,
                item,
                lastKnown: !listing.complete
              }))
            })
          )
    ),
    (parts) => ({ complete: parts.every((p) => p.complete), items: parts.flatMap((p) => p.items) })
  )

/** The first of each key in config order, and the clashes of the others. */
const firstByKey = <A extends { readonly toolset: string }>(items: ReadonlyArray<A>, key: (item: A) => string) => {
  const kept = new Map<string, A>()
  const clashes: Array<Clash> = []
  for (const item of items) {
    const name = key(item)
    const first = kept.get(name)
    if (first === undefined) kept.set(name, item)
    else clashes.push({ name, toolset: item.toolset, shadowedBy: first.toolset })
  }
  return { kept: [...kept.values()], clashes }
}

/** A version that moves only when `offered` does (compared as JSON, which listings are). */
const versioned = (previous: { readonly version: number; readonly offered: string } | undefined, offered: unknown) => {
  const text = JSON.stringify(offered)
  return previous === undefined
    ? { version: 1, offered: text }
    : previous.offered === text
      ? previous
      : { version: previous.version + 1, offered: text }
}

/** Catalog versions per agent and kind, and the clashes already logged. */
export interface Memory {
  readonly versions: Map<string, { readonly version: number; readonly offered: string }>
  readonly logged: Set<string>
}

/** A fresh memory: every catalog starts at version 1, no clash logged yet. */
export const memory = (): Memory => ({ versions: new Map(), logged: new Set() })

/** Logs each clash once: status and catalogs report it for as long as it lasts. */
const logClashes = (memory: Memory, kind: ClashKind, clashes: ReadonlyArray<Clash>) =>
  Effect.forEach(
    clashes.filter((clash) => {
      const key = `${kind}\u0000${clash.name}\u0000${clash.toolset}`
      if (memory.logged.has(key)) return false
      memory.logged.add(key)
      return true
    }),
    (clash) => Effect.logWarning(clashMessage(kind, clash)),
    { discard: true }
  )

const unsupportedOf = (sources: ReadonlyArray<Source>) =>
  sources.flatMap((source) => (source.surfaces === undefined ? [source.toolset] : []))

/** The agent's prompt catalog from its toolsets' listings; logs a clash the first time it is seen. */
export const prompts = (memory: Memory, agent: string, sources: ReadonlyArray<Source>): Effect.Effect<PromptCatalog> =>
  Effect.gen(function* () {
    const gathered = yield* gather(sources, (surfaces) => surfaces.prompts)
    const named = gathered.items.map(({ prefix, ...offered }) => ({
      ...offered,
      name: Catalog.exposedName(prefix, offered.item.name)
    }))
    const { kept, clashes } = firstByKey(named, (entry) => entry.name)
    yield* logClashes(memory, "prompt", clashes)
    const key = `prompts\u0000${agent}`
    const next = versioned(
      memory.versions.get(key),
      kept.map((entry) => [entry.name, entry.item])
    )
    memory.versions.set(key, next)
    return {
      complete: gathered.complete,
      prompts: kept,
      clashes,
      unsupported: unsupportedOf(sources),
      version: next.version
    }
  })

/** The agent's resource catalog from its toolsets' listings; logs a clash the first time it is seen. */
export const resources = (
  memory: Memory,
  agent: string,
  sources: ReadonlyArray<Source>
): Effect.Effect<ResourceCatalog> =>
  Effect.gen(function* () {
    const listed = yield* gather(sources, (surfaces) => surfaces.resources)
    const templated = yield* gather(sources, (surfaces) => surfaces.resourceTemplates)
    const strip = <A>({ prefix: _, ...offered }: Offered<A> & { readonly prefix: string | undefined }) => offered
    const byUri = firstByKey(listed.items.map(strip), (entry) => entry.item.uri)
    const byTemplate = firstByKey(templated.items.map(strip), (entry) => entry.item.uriTemplate)
    const clashes = [...byUri.clashes, ...byTemplate.clashes]
    yield* logClashes(memory, "resource", clashes)
    const key = `resources\u0000${agent}`
    const next = versioned(memory.versions.get(key), [
      byUri.kept.map((entry) => entry.item),
      byTemplate.kept.map((entry) => entry.item)
    ])
    memory.versions.set(key, next)
    return {
      complete: listed.complete && templated.complete,
      resources: byUri.kept,
      templates: byTemplate.kept,
      clashes,
      unsupported: unsupportedOf(sources),
      version: next.version
    }
  })

/** Whether a URI fits `template` (as `matches`), its pattern compiled once. */
const matcher = (template: string): ((uri: string) => boolean) => {
  const parts = template.split(/\{[^}]*\}/)
  if (parts.length === 1) return (uri) => template === uri
  const pattern = new RegExp(`^${parts.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".+?")}$`)
  return (uri) => pattern.test(uri)
}

/**
 * Whether a URI fits an RFC 6570 template: each `{expression}` matches one path segment or
 * more (`{+x}`, `{/x}` …); enough to route, the server decides what it serves.
 */
export const matches = (template: string, uri: string): boolean => matcher(template)(uri)

/** What a catalog routes a name or a URI to; undefined for what it does not offer. */
export type Router<A> = (key: string) => A | undefined

/**
 * The toolset that serves a URI: the one listing it, else the first whose template matches.
 * Built once per catalog (the listed URIs indexed, each template compiled), so a read routes by a
 * lookup and not by a scan of every resource and a `RegExp` built per template.
 */
export const uriRouter = (catalog: ResourceCatalog): Router<string> => {
  // A catalog lists each URI once (`firstByKey` kept the first).
  const listed = new Map(catalog.resources.map((entry) => [entry.item.uri, entry.toolset]))
  const templates = catalog.templates.map((entry) => ({
    matches: matcher(entry.item.uriTemplate),
    toolset: entry.toolset
  }))
  return (uri) => listed.get(uri) ?? templates.find((template) => template.matches(uri))?.toolset
}

/** `uriRouter` for one URI. */
export const routeUri = (catalog: ResourceCatalog, uri: string): string | undefined => uriRouter(catalog)(uri)

/** The catalog's prompt of each name (it lists each name once), found by a lookup. */
export const promptRouter = (catalog: PromptCatalog): Router<PromptEntry> => {
  const byName = new Map(catalog.prompts.map((entry) => [entry.name, entry]))
  return (name) => byName.get(name)
}
