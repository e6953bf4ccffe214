/**
 * What the raw document holds beyond what Toolvisor uses, read before decoding: fields of a newer
 * docker-agent or of another host are accepted with one warning per field, and a misspelt `type`
 * is an error that says what was given and what was meant (`mpc` → `mcp`).
 */

import * as Predicate from "effect/Predicate"
import * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as HostConfig from "./HostConfig.ts"

export interface Notes {
  readonly warnings: ReadonlyArray<ConfigError.Issue>
  readonly errors: ReadonlyArray<ConfigError.Issue>
  /** Paths whose Schema issues these errors already explain. */
  readonly explained: ReadonlyArray<string>
}

const toolsetTypes: ReadonlyArray<string> = ["mcp", "lsp", ...AgentConfig.skippedTypes]

/** An unknown value of `type`: the error names it and suggests the closest known one. */
const typeTypo = (type: unknown, path: string, known: ReadonlyArray<string>): ConfigError.Issue | undefined => {
  if (typeof type !== "string" || known.includes(type)) return undefined
  const near = ConfigError.didYouMean(type, known)
  const suggestion = near === undefined ? `; expected one of: ${known.join(", ")}` : `; did you mean "${near}"?`
  return { path: ConfigError.childPath(path, "type"), message: `Unknown type "${type}"${suggestion}` }
}

/** Collects one warning per unknown field name, at its first place. */
const unknownFields = (
  entries: ReadonlyArray<readonly [string, unknown]>,
  known: ReadonlySet<string>,
  describe: (field: string) => string
): Array<ConfigError.Issue> => {
  const seen = new Set<string>()
  const warnings: Array<ConfigError.Issue> = []
  for (const [path, value] of entries) {
    if (!Predicate.isObject(value)) continue
    for (const field of Object.keys(value)) {
      if (known.has(field) || seen.has(field)) continue
      seen.add(field)
      warnings.push({ path: ConfigError.childPath(path, field), message: describe(field) })
    }
  }
  return warnings
}

const ignoredField = (owner: string, known: ReadonlyArray<string>) => (field: string) => {
  const near = ConfigError.didYouMean(field, known)
  return `\`${field}\` is not a${owner} field Toolvisor knows; ignored${near === undefined ? "" : ` (did you mean \`${near}\`?)`}`
}

const agentKnown = [
  "toolsets",
  ...AgentConfig.toolvisorAgentFields,
  ...AgentConfig.agentFields,
  ...AgentConfig.legacyToolsetFields
]
const topKnown = ["agents", "mcps", ...AgentConfig.topLevelFields]

/** A docker-agent document: unknown top-level and agent fields, and misspelt toolset types. */
export const agentFile = (document: Readonly<Record<string, unknown>>): Notes => {
  const agents = Predicate.isObject(document.agents) ? Object.entries(document.agents) : []
  const warnings = [
    ...unknownFields([["", document]], new Set(topKnown), ignoredField(" top-level docker-agent", topKnown)),
    ...unknownFields(
      agents.map(([name, agent]) => [ConfigError.childPath("agents", name), agent] as const),
      new Set([...agentKnown, "tools"]),
      ignoredField("n agent", agentKnown)
    )
  ]
  const errors: Array<ConfigError.Issue> = []
  const explained: Array<string> = []
  for (const [name, agent] of agents) {
    const toolsets = Predicate.isObject(agent) && Array.isArray(agent.toolsets) ? agent.toolsets : []
    toolsets.forEach((entry: unknown, index) => {
      const path = `${ConfigError.childPath(ConfigError.childPath("agents", name), "toolsets")}[${index}]`
      const typo = Predicate.isObject(entry) ? typeTypo(entry.type, path, toolsetTypes) : undefined
      if (typo === undefined) return
      errors.push(typo)
      explained.push(path, typo.path)
    })
  }
  return { warnings, errors, explained }
}

const honoured: ReadonlySet<string> = new Set(HostConfig.honouredFields)

/** A host's server map: other hosts' per-server fields, and misspelt transport types. */
export const hostServers = (servers: unknown, at: string, format: string): Notes => {
  const entries = Predicate.isObject(servers)
    ? Object.entries(servers).map(([key, server]) => [ConfigError.childPath(at, key), server] as const)
    : []
  const warnings = unknownFields(entries, honoured, (field) => `\`${field}\` has no meaning in Toolvisor; ignored`)
  const errors: Array<ConfigError.Issue> = []
  for (const [path, server] of entries) {
    if (!Predicate.isObject(server)) continue
    const typo = typeTypo(server.type, path, HostConfig.serverTypes)
    if (typo !== undefined) errors.push(typo)
  }
  const explained = errors.map((error) => error.path)
  return { warnings: warnings.map((w) => ({ ...w, message: `${w.message} (a ${format} field)` })), errors, explained }
}
