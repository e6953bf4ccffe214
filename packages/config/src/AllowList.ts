/**
 * A toolset's `tools` allow-list checked against the tools its server offers. An entry that
 * matches nothing usually is a typo or a tool the server renamed, and the toolset then silently
 * exposes less than the user meant; the runtime (status) and `validate --check` report it.
 */
import type * as AgentConfig from "./AgentConfig.ts"

export interface Unmatched {
  readonly toolset: string
  /** Allow-list entries that name no tool the toolset offers. */
  readonly entries: ReadonlyArray<string>
  /** The exposed names it does offer, for the message. */
  readonly offered: ReadonlyArray<string>
}

/**
 * The entries of `allow` that name none of `offered` (exposed names: `<prefix>_<tool>` when the
 * toolset has a prefix). `undefined` (no allow-list, or `*`) matches everything.
 */
export const unmatched = (
  allow: ReadonlyArray<string> | undefined,
  offered: ReadonlyArray<string>
): ReadonlyArray<string> => (allow === undefined ? [] : allow.filter((entry) => !offered.includes(entry)))

/** The check for one Ready toolset: `undefined` when every entry matches. */
export const check = (
  toolset: Pick<AgentConfig.ToolsetConfig, "name" | "tools">,
  offered: ReadonlyArray<string>
): Unmatched | undefined => {
  const entries = unmatched(toolset.tools, offered)
  return entries.length === 0 ? undefined : { toolset: toolset.name, entries, offered }
}

/** One line a user can act on. */
export const message = (found: Unmatched): string =>
  `${found.toolset}: tools allow-list entr${found.entries.length === 1 ? "y" : "ies"} ${found.entries
    .map((entry) => `"${entry}"`)
    .join(", ")} match${found.entries.length === 1 ? "es" : ""} no tool it offers (offered: ${
    found.offered.length === 0 ? "none" : found.offered.join(", ")
  })`
