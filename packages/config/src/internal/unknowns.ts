/**
 * What the raw document holds beyond what Toolvisor uses, read before decoding: fields of a newer
 * docker-agent or of another host are accepted with one warning per field, and a misspelt `type`
 * is an error that says what was given and what was meant (`mpc` → `mcp`).
 */

import * as Predicate from "effect/Predicate"
import * as AgentConfig from "../AgentConfig.ts"
import * as ConfigError from "../ConfigError.ts"
import * as HostConfig from "./hostConfig.ts"

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
const topKnown = ["agents", "mcps", ...AgentConfig.toolvisorTopLevelFields, ...AgentConfig.topLevelFields]

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

/** Other hosts' fields a letter or two from one Toolvisor reads: VS Code's `dev` (watch and debug) is no `env`. */
const foreignNearMisses: ReadonlySet<string> = new Set(["dev"])

/** A host's server map: other hosts' per-server fields, and misspelt transport types. */
export const hostServers = (servers: unknown, at: string, format: string): Notes => {
  const entries = Predicate.isObject(servers)
    ? Object.entries(servers).map(([key, server]) => [ConfigError.childPath(at, key), server] as const)
    : []
  const unknown = unknownFields(entries, honoured, (field) => `\`${field}\` has no meaning in Toolvisor; ignored`)
  // Another host's field is ignored with a warning; a near miss of one Toolvisor reads (`arg`,
  // `envs`, `comand`) is a typo, and ignoring it ran the server without its arguments or variables.
  const typos = unknown.flatMap((issue) => {
    const field = issue.path.slice(issue.path.lastIndexOf(".") + 1)
    const near = foreignNearMisses.has(field) ? undefined : ConfigError.didYouMean(field, HostConfig.honouredFields)
    return near === undefined
      ? []
      : [{ path: issue.path, message: `Unknown field \`${field}\`; did you mean \`${near}\`?` }]
  })
  const typoPaths = new Set(typos.map((typo) => typo.path))
  const warnings = unknown.filter((issue) => !typoPaths.has(issue.path))
  const errors: Array<ConfigError.Issue> = [...typos]
  for (const [path, server] of entries) {
    if (!Predicate.isObject(server)) continue
    const typo = typeTypo(server.type, path, HostConfig.serverTypes)
    if (typo !== undefined) errors.push(typo)
  }
  const explained = errors.map((error) => error.path)
  return { warnings: warnings.map((w) => ({ ...w, message: `${w.message} (a ${format} field)` })), errors, explained }
}
