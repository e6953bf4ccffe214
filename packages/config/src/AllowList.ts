/**
 * A toolset's `tools` allow-list: which of its server's tools the agent is offered. An entry
 * names a tool by the server's own name (`read_text_file`, as the server's documentation and
 * every host file spell it) or by the name the agent sees (`fs_read_text_file`, with the
 * toolset's prefix); both work. An entry that matches nothing usually is a typo or a tool the
 * server renamed, and the toolset then silently exposes less than the user meant; the runtime
 * (status) and `validate --check` report it, with the closest name.
 */
import type * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"

/** The name the agent sees: `${prefix}_${tool}` when the toolset has a prefix (its `name`). */
export const exposedName = (prefix: string | undefined, tool: string): string =>
  prefix === undefined ? tool : `${prefix}_${tool}`

/** Whether `entry` names `tool` (the server's own name) of a toolset with `prefix`, by either name. */
export const names = (entry: string, prefix: string | undefined, tool: string): boolean =>
  entry === tool || entry === exposedName(prefix, tool)

/** Whether `allow` lets the tool through; `undefined` (no allow-list, or `*`) lets every tool through. */
export const allows = (allow: ReadonlyArray<string> | undefined, prefix: string | undefined, tool: string): boolean =>
  allow === undefined || allow.some((entry) => names(entry, prefix, tool))

export interface Unmatched {
  readonly toolset: string
  /** Allow-list entries that name no tool the toolset offers, each with the closest name if one is close. */
  readonly entries: ReadonlyArray<{ readonly entry: string; readonly near: string | undefined }>
  /** The server's own names of the tools it does offer, for the message. */
  readonly offered: ReadonlyArray<string>
}

/** The server's own name of an exposed one. */
const ownName = (prefix: string | undefined, exposed: string): string =>
  prefix !== undefined && exposed.startsWith(`${prefix}_`) ? exposed.slice(prefix.length + 1) : exposed

/**
 * The check for one Ready toolset against the names it offers as the agent sees them (with its
 * prefix): `undefined` when every entry matches a tool.
 */
export const check = (
  toolset: Pick<AgentConfig.ToolsetConfig, "name" | "tools"> & { readonly prefix?: string | undefined },
  offered: ReadonlyArray<string>
): Unmatched | undefined => {
  const own = offered.map((exposed) => ownName(toolset.prefix, exposed))
  const entries = (toolset.tools ?? [])
    .filter((entry) => !own.some((tool) => names(entry, toolset.prefix, tool)))
    .map((entry) => ({ entry, near: ConfigError.didYouMean(entry, [...own, ...offered]) }))
  return entries.length === 0 ? undefined : { toolset: toolset.name, entries, offered: own }
}

/** One line a user can act on. */
export const message = (found: Unmatched): string => {
  const one = found.entries.length === 1
  const entries = found.entries
    .map(({ entry, near }) => `"${entry}"${near === undefined ? "" : ` (did you mean "${near}"?)`}`)
    .join(", ")
  const offered = found.offered.length === 0 ? "none" : found.offered.join(", ")
  return `${found.toolset}: tools allow-list entr${one ? "y" : "ies"} ${entries} match${one ? "es" : ""} no tool it offers (its tools: ${offered})`
}
