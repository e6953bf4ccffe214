/**
 * A toolset's `defer:` list checked against the tools its server offers. A name that matches no
 * tool (neither as the server names it nor as exposed) usually is a typo or a renamed tool, and the
 * tool it meant is then offered eagerly, costing tokens on every model call; `validate --check`
 * reports it with the name it probably meant.
 */
import type * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"

/** One tool the toolset offers, by both its names. */
export interface Offered {
  /** As the agent calls it: `<prefix>_<tool>` when the toolset has a prefix. */
  readonly exposed: string
  /** As the server names it. */
  readonly server: string
}

export interface Unmatched {
  readonly agent: string
  readonly toolset: string
  readonly entries: ReadonlyArray<{ readonly name: string; readonly near: string | undefined }>
}

/** For every agent whose `defer:` list for this toolset names tools it does not offer. */
export const check = (
  config: Pick<AgentConfig.Config, "agents">,
  toolset: Pick<AgentConfig.ToolsetConfig, "identity" | "name">,
  offered: ReadonlyArray<Offered>
): ReadonlyArray<Unmatched> => {
  const names = new Set(offered.flatMap((tool) => [tool.exposed, tool.server]))
  const known = offered.map((tool) => tool.exposed)
  return config.agents.flatMap((agent) => {
    const defer = agent.offers?.[toolset.identity]?.defer
    if (!Array.isArray(defer)) return []
    const entries = defer
      .filter((name) => !names.has(name))
      .map((name) => ({ name, near: ConfigError.didYouMean(name, [...known, ...offered.map((tool) => tool.server)]) }))
    return entries.length === 0 ? [] : [{ agent: agent.name, toolset: toolset.name, entries }]
  })
}

/** One line a user can act on. */
export const message = (found: Unmatched): string =>
  `${found.toolset}: defer entr${found.entries.length === 1 ? "y" : "ies"} of agent ${found.agent} ${found.entries
    .map((entry) => `"${entry.name}"${entry.near === undefined ? "" : ` (did you mean "${entry.near}"?)`}`)
    .join(", ")} match${found.entries.length === 1 ? "es" : ""} no tool it offers`
