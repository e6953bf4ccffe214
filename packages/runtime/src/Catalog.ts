/**
 * The tools an agent can call, gathered from its toolsets' listings in config order. A catalog
 * says whether it is complete and, when it is not, which toolsets are missing and why, so an
 * agent never mistakes "still starting" for "has no tools". Names are prefixed with the
 * toolset's `name` when the config gave one; when two toolsets expose the same name, the first
 * in config order wins and the other is reported as shadowed.
 */
import type { Toolset } from "@toolvisor/core"

/** A toolset's contribution, as the registry gathered it. */
export interface Source {
  readonly toolset: string
  /** Tools are exposed as `${prefix}_${tool}` when set. */
  readonly prefix: string | undefined
  /** Exposed names to keep; `undefined` keeps all. */
  readonly allow: ReadonlyArray<string> | undefined
  readonly listing: Toolset.Listing<Toolset.Tool>
  readonly state: string
}

export interface Entry {
  /** The name the agent calls. */
  readonly name: string
  readonly toolset: string
  /** The tool as its toolset knows it (its `name` is the unprefixed one). */
  readonly tool: Toolset.Tool
}

export interface Missing {
  readonly toolset: string
  readonly state: string
  readonly reason: string
}

export interface Shadowed {
  readonly name: string
  readonly toolset: string
  readonly shadowedBy: string
}

export interface Catalog {
  readonly complete: boolean
  readonly tools: ReadonlyArray<Entry>
  readonly missing: ReadonlyArray<Missing>
  readonly shadowed: ReadonlyArray<Shadowed>
}

export const exposedName = (prefix: string | undefined, tool: string): string =>
  prefix === undefined ? tool : `${prefix}_${tool}`

/** Builds the catalog from sources in config order. */
export const make = (sources: ReadonlyArray<Source>): Catalog => {
  const tools: Array<Entry> = []
  const owners = new Map<string, string>()
  const missing: Array<Missing> = []
  const shadowed: Array<Shadowed> = []
  for (const source of sources) {
    if (!source.listing.complete) {
      missing.push({ toolset: source.toolset, state: source.state, reason: source.listing.reason.message })
      continue
    }
    for (const tool of source.listing.items) {
      const name = exposedName(source.prefix, tool.name)
      if (source.allow !== undefined && !source.allow.includes(name)) continue
      const owner = owners.get(name)
      if (owner !== undefined) {
        shadowed.push({ name, toolset: source.toolset, shadowedBy: owner })
        continue
      }
      owners.set(name, source.toolset)
      tools.push({ name, toolset: source.toolset, tool })
    }
  }
  return { complete: missing.length === 0, tools, missing, shadowed }
}

/** Levenshtein distance, for "did you mean". */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** Up to `limit` names close to `name`: the same suffix after a prefix, a shared stem, or a small edit distance. */
export const nearNames = (name: string, names: ReadonlyArray<string>, limit = 5): ReadonlyArray<string> => {
  const lower = name.toLowerCase()
  const scored = names
    .map((candidate) => {
      const other = candidate.toLowerCase()
      const contains = other.endsWith(`_${lower}`) || other.includes(lower) || lower.includes(other)
      return { candidate, score: contains ? 0 : distance(lower, other) }
    })
    .filter(({ score }) => score <= Math.max(2, Math.floor(name.length / 3)))
    .sort((a, b) => a.score - b.score || a.candidate.localeCompare(b.candidate))
  return scored.slice(0, limit).map(({ candidate }) => candidate)
}
