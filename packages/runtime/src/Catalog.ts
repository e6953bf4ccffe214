/**
 * The tools an agent can call, gathered from its toolsets' listings in config order. A catalog
 * says whether it is complete and, when it is not, which toolsets are missing and why, so an
 * agent never mistakes "still starting" for "has no tools". A toolset that is restarting keeps
 * its last-known tools on offer, marked so, and the catalog is then not complete. Names are prefixed with the
 * toolset's `name` when the config gave one; a `tools:` allow-list names a tool either way
 * (`AllowList`). When two toolsets expose the same name, the first in config order wins and the
 * other is reported as shadowed: `collisions` groups those for people to read.
 */
import { AllowList } from "@toolvisor/config"
import type { State, Toolset } from "@toolvisor/core"
import * as Levenshtein from "@toolvisor/core/internal/levenshtein"

/** A toolset's contribution, as the registry gathered it. */
export interface Source extends Filter {
  readonly toolset: string
  readonly listing: Toolset.Listing<Toolset.Tool>
  readonly state: State.State
  /** What the toolset listed the last time it was usable, if it ever was. */
  readonly lastKnown: ReadonlyArray<Toolset.Tool> | undefined
}

/** One tool on offer: the name the agent calls, the toolset that serves it, and how it is offered. */
export interface Entry {
  /** The name the agent calls. */
  readonly name: string
  readonly toolset: string
  /** The tool as its toolset knows it (its `name` is the unprefixed one). */
  readonly tool: Toolset.Tool
  /**
   * True when the tool comes from its toolset's last listing because the toolset is starting or
   * restarting: a call waits for it to be back (within `call_timeout`).
   */
  readonly lastKnown: boolean
  /**
   * True when the agent's model is offered the tool only once a tool search found it (`defer`).
   * It stays in the catalog, routable and callable by name: deferral changes what is offered, not what works.
   */
  readonly deferred?: boolean | undefined
}

/** A toolset whose tools are not (all) in the catalog, with its state and why: what makes a catalog incomplete. */
export interface Missing {
  readonly toolset: string
  readonly state: State.State
  readonly reason: string
}

/** A tool not offered because an earlier toolset in config order exposes the same name. */
export interface Shadowed {
  readonly name: string
  readonly toolset: string
  readonly shadowedBy: string
}

/**
 * The tools one agent is offered, and what it is not but should know of: toolsets still missing,
 * names shadowed, tools offline. A new catalog is made on every change; `version` says whether
 * the offer itself changed, so a consumer rebuilds its tools only then.
 */
export interface Catalog {
  /** True when every toolset is usable and listed: nothing in `tools` is last-known, nothing is missing. */
  readonly complete: boolean
  /** What the agent is offered: tools of usable toolsets and the last-known tools of restarting ones. */
  readonly tools: ReadonlyArray<Entry>
  readonly missing: ReadonlyArray<Missing>
  readonly shadowed: ReadonlyArray<Shadowed>
  /**
   * Tools their toolset offered before it stopped or failed: not offered, but a call to one fails
   * at once with its toolset's error instead of "no such tool".
   */
  readonly offline: ReadonlyArray<Entry>
  /** Moves only when the offered tools (names, descriptions, schemas, annotations) or their deferral change. */
  readonly version: number
  /**
   * What the agent should be told about its toolsets, in config order: each toolset's configured
   * `instruction` with its server's own instructions.
   */
  readonly instructions?: ReadonlyArray<Instruction> | undefined
}

/** What a toolset's config and its server tell the agent about its tools, as one text. */
export interface Instruction {
  readonly toolset: string
  readonly text: string
}

/** The name the agent calls a tool by: with the toolset's prefix when the config gave one (`AllowList.exposedName`). */
export const exposedName = AllowList.exposedName

/** How a toolset's tools are filtered and named for an agent: its config's `name`, `tools:` and `deny`. */
export interface Filter {
  /** Tools are exposed as `${prefix}_${tool}` when set. */
  readonly prefix: string | undefined
  /** Tools to keep, by the server's own or the exposed name; `undefined` keeps all. */
  readonly allow: ReadonlyArray<string> | undefined
  /** Exposed names never offered (a host's disabled-tools list), applied after `allow`. */
  readonly deny?: ReadonlyArray<string> | undefined
}

/** The filter of a toolset's config entry. */
export const filterOf = (config: {
  readonly prefix: string | undefined
  readonly tools: ReadonlyArray<string> | undefined
  readonly deny?: ReadonlyArray<string> | undefined
}): Filter => ({ prefix: config.prefix, allow: config.tools, deny: config.deny })

/** Whether a toolset offers its tool `tool` (by its own, unprefixed name) through `filter`. */
export const offers = (filter: Filter, tool: string): boolean =>
  AllowList.allows(filter.allow, filter.prefix, tool) &&
  filter.deny?.includes(exposedName(filter.prefix, tool)) !== true

/**
 * How many of `tools` a toolset offers through `filter`: the tool count every status output
 * shows (snapshots, JSON lines, `/status`, `/metrics`, the live view, `validate --check`). A
 * name an earlier toolset of the same agent already offers is still counted: the catalog
 * reports it as shadowed.
 */
export const offeredCount = (filter: Filter, tools: ReadonlyArray<Toolset.Tool>): number => {
  let count = 0
  for (const tool of tools) if (offers(filter, tool.name)) count += 1
  return count
}

/** States in which a toolset's last-known tools stay on offer: it is on its way back. */
const returning = (state: State.State): boolean => state === "Starting" || state === "Restarting"

/**
 * Builds the catalog from sources in config order; `previous` (the last catalog of the same
 * agent) keeps the version when the offered tools are the same.
 */
export const make = (sources: ReadonlyArray<Source>, previous?: Catalog): Catalog => {
  const tools: Array<Entry> = []
  const owners = new Map<string, string>()
  const missing: Array<Missing> = []
  const shadowed: Array<Shadowed> = []
  const offline: Array<Entry> = []
  const offer = (source: Source, items: ReadonlyArray<Toolset.Tool>, lastKnown: boolean, into: Array<Entry>) => {
    for (const tool of items) {
      if (!offers(source, tool.name)) continue
      const name = exposedName(source.prefix, tool.name)
      const owner = owners.get(name)
      if (owner !== undefined) {
        if (into === tools) shadowed.push({ name, toolset: source.toolset, shadowedBy: owner })
        continue
      }
      if (into === tools) owners.set(name, source.toolset)
      into.push({ name, toolset: source.toolset, tool, lastKnown })
    }
  }
  for (const source of sources) {
    if (source.listing.complete) {
      offer(source, source.listing.items, false, tools)
      continue
    }
    missing.push({ toolset: source.toolset, state: source.state, reason: source.listing.reason.message })
    if (source.lastKnown !== undefined && returning(source.state)) offer(source, source.lastKnown, true, tools)
  }
  // Offline tools never shadow an offered one: they are looked at after every source is in.
  for (const source of sources) {
    if (!source.listing.complete && source.lastKnown !== undefined && !returning(source.state)) {
      offer(source, source.lastKnown, true, offline)
    }
  }
  const version =
    previous === undefined ? 0 : sameOffer(previous.tools, tools) ? previous.version : previous.version + 1
  return { complete: missing.length === 0, tools, missing, shadowed, offline, version }
}

/** Whether two offers hold the same tools, by name and content (listings are new objects after a restart). */
const sameOffer = (a: ReadonlyArray<Entry>, b: ReadonlyArray<Entry>): boolean =>
  a.length === b.length &&
  a.every((entry, i) => {
    const other = b[i]
    return other !== undefined && entry.name === other.name && sameTool(entry.tool, other.tool)
  })

const sameTool = (a: Toolset.Tool, b: Toolset.Tool): boolean =>
  a === b ||
  (a.description === b.description &&
    a.title === b.title &&
    JSON.stringify([a.inputSchema, a.outputSchema, a.annotations]) ===
      JSON.stringify([b.inputSchema, b.outputSchema, b.annotations]))

/** The tools of one toolset hidden behind another's of the same names. */
export interface Collision {
  readonly toolset: string
  readonly hiddenBy: string
  readonly names: ReadonlyArray<string>
}

/**
 * The catalog's shadowed tools grouped by the pair of toolsets, in order: a toolset whose tools
 * all collide would otherwise vanish from the agent with no word, however its status reads.
 */
export const collisions = (catalog: Pick<Catalog, "shadowed">): ReadonlyArray<Collision> => {
  const groups = new Map<string, { toolset: string; hiddenBy: string; names: Array<string> }>()
  for (const { name, toolset, shadowedBy } of catalog.shadowed) {
    const key = JSON.stringify([toolset, shadowedBy])
    const group = groups.get(key) ?? { toolset, hiddenBy: shadowedBy, names: [] }
    group.names.push(name)
    groups.set(key, group)
  }
  return Array.from(groups.values())
}

/** One line a user can act on: which tools are hidden, by which toolset, and how to keep both. */
export const collisionMessage = (collision: Collision): string =>
  `${collision.toolset}: ${collision.names.length} tool(s) hidden by ${collision.hiddenBy}, which offers the same name(s): ${collision.names.join(", ")}; to offer both, give ${collision.toolset} a name of its own (its tools are then exposed as <name>_<tool>)`

/** The longest name suggestions are looked for, or offered. */
const maxSuggestable = 128

/** Up to `limit` names close to `name`: the same suffix after a prefix, a shared stem, or a small edit distance. */
export const nearNames = (
  name: string,
  names: ReadonlyArray<string>,
  limit = 5,
  within = Math.max(2, Math.floor(name.length / 3))
): ReadonlyArray<string> => {
  // A name that long is no typo of a tool's; comparing it with thousands cost seconds per call.
  if (name.length > maxSuggestable) return []
  const lower = name.toLowerCase()
  const scored = names
    .filter((candidate) => candidate.length <= maxSuggestable)
    .map((candidate) => {
      const other = candidate.toLowerCase()
      const contains = other.endsWith(`_${lower}`) || other.includes(lower) || lower.includes(other)
      return { candidate, score: contains ? 0 : Levenshtein.distance(lower, other, within) }
    })
    .filter(({ score }) => score <= within)
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate))
  return scored.slice(0, limit).map(({ candidate }) => candidate)
}
