/**
 * Turns a decoded config into the resolved model: `ref`s replaced by their `mcps` definitions,
 * relative directories made absolute, policies computed, and each toolset given an identity, a
 * signature and a unique display name. Two agents that declare the same toolset share it; an unnamed
 * toolset whose identity is taken by a different definition becomes a toolset of its own; the same
 * explicit name declared twice with different definitions is an error at both places.
 */

import * as Predicate from "effect/Predicate"
import * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as Declaration from "./internal/Declaration.ts"

export type Context = Declaration.Context
export type Resolution = Declaration.Resolution
export const allowList = Declaration.allowList

/** The agent a host's server map becomes. */
export const defaultAgent = "default"

const { declare, secretsAt, unresolvedAt, skipped, assemble } = Declaration
type Outcome = Declaration.Outcome

const dockerRef = (ref: string): boolean => ref.startsWith("docker:")

const dockerSkip = (path: string, ref: string): Outcome =>
  skipped(path, "mcp", `${ref} is a Docker MCP catalog ref; Toolvisor does not run the Docker catalog`)

type McpFields = Omit<AgentConfig.McpDefinition, "type">

const unknownRef = (path: string, ref: string, defined: ReadonlyArray<string>): ConfigError.Issue => {
  const known = defined.length === 0 ? "there is no top-level mcps: section" : `defined: ${defined.join(", ")}`
  return { path: `${path}.ref`, message: `No MCP definition named "${ref}" under mcps (${known})` }
}

/**
 * Refs that name no `mcps` entry, read from the raw document: when the Schema rejects the file,
 * resolution does not run, yet these problems should be reported with the others.
 */
export const unknownRefs = (document: unknown): ReadonlyArray<ConfigError.Issue> => {
  if (!Predicate.isObject(document) || !Predicate.isObject(document.agents)) return []
  const defined = Predicate.isObject(document.mcps) ? Object.keys(document.mcps) : []
  return Object.entries(document.agents).flatMap(([agent, spec]) => {
    const toolsets = Predicate.isObject(spec) && Array.isArray(spec.toolsets) ? spec.toolsets : []
    return toolsets.flatMap((entry: unknown, index) => {
      if (!Predicate.isObject(entry) || typeof entry.ref !== "string") return []
      if (dockerRef(entry.ref) || defined.includes(entry.ref)) return []
      const path = `${ConfigError.childPath("agents", agent)}.toolsets[${index}]`
      return [unknownRef(path, entry.ref, defined)]
    })
  })
}

const declareMcp = (entry: McpFields, path: string, file: AgentConfig.AgentFile, context: Context): Outcome => {
  const ref = entry.ref
  if (ref === undefined) return declareMcpSource(entry, entry, path, path, undefined, context)
  if (dockerRef(ref)) return dockerSkip(path, ref)
  const definition = file.mcps?.[ref]
  if (definition === undefined) {
    return { _tag: "Invalid", issues: [unknownRef(path, ref, Object.keys(file.mcps ?? {}))] }
  }
  const definitionPath = ConfigError.childPath("mcps", ref)
  if (definition.ref !== undefined) {
    if (dockerRef(definition.ref)) return dockerSkip(path, definition.ref)
    return {
      _tag: "Invalid",
      issues: [
        { path: `${definitionPath}.ref`, message: "A definition under mcps can only ref a docker: catalog entry" }
      ]
    }
  }
  const merged: McpFields = {
    ...definition,
    ...entry,
    env: { ...definition.env, ...entry.env }
  }
  return declareMcpSource(merged, definition, path, definitionPath, ref, context)
}

/** `fields` carries the overridable settings; `source` is where command or remote was written. */
const declareMcpSource = (
  fields: McpFields,
  source: McpFields,
  path: string,
  sourcePath: string,
  ref: string | undefined,
  context: Context
): Outcome =>
  declare(
    {
      path,
      sourcePath,
      type: "mcp",
      name: fields.name,
      ref,
      source: {
        command: source.command,
        args: fields.args,
        env: fields.env,
        cwd: fields.working_dir,
        url: source.remote?.url,
        headers: source.remote?.headers,
        oauth: source.remote?.oauth,
        sse: source.remote?.transport_type === "sse"
      },
      urlPath: `${sourcePath}.remote.url`,
      fileTypes: undefined,
      tools: fields.tools,
      lifecycle: fields.lifecycle,
      lazy: fields.lazy,
      envFile: envFileOf(fields.env_file),
      secrets: secretsAt(context, path, sourcePath),
      unresolved: unresolvedAt(context, path, sourcePath)
    },
    context
  )

/** docker-agent's `env_file` is VS Code's `envFile`: one dotenv file, read the same way. */
const envFileOf = (file: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof file === "string" ? file : file?.[0]

/**
 * What the entry (or the `mcps` definition it refers to) says about how the agent is offered it;
 * `undefined` when it is offered whole and eagerly. An empty `defer` list defers nothing.
 */
const offerOf = (entry: AgentConfig.ToolsetEntry, file: AgentConfig.AgentFile): AgentConfig.Offer | undefined => {
  if (entry.type !== "mcp" && entry.type !== "lsp") return undefined
  const definition = entry.type === "mcp" && entry.ref !== undefined ? file.mcps?.[entry.ref] : undefined
  const defer = entry.defer ?? definition?.defer
  const instruction = entry.instruction ?? definition?.instruction
  const offer = {
    ...(defer === undefined || (Array.isArray(defer) && defer.length === 0) ? {} : { defer }),
    ...(instruction === undefined || instruction.trim() === "" ? {} : { instruction })
  }
  return Object.keys(offer).length === 0 ? undefined : offer
}

const withOffer = (outcome: Outcome, entry: AgentConfig.ToolsetEntry, file: AgentConfig.AgentFile): Outcome => {
  if (outcome._tag !== "Declared") return outcome
  const offer = offerOf(entry, file)
  return offer === undefined ? outcome : { ...outcome, offer }
}

const declareEntry = (
  entry: AgentConfig.ToolsetEntry,
  path: string,
  file: AgentConfig.AgentFile,
  context: Context
): Outcome => {
  switch (entry.type) {
    case "mcp":
      return declareMcp(entry, path, file, context)
    case "lsp":
      return declare(
        {
          path,
          type: "lsp",
          name: entry.name,
          ref: undefined,
          source: { command: entry.command, args: entry.args, env: entry.env, cwd: entry.working_dir, sse: false },
          urlPath: path,
          fileTypes: entry.file_types,
          allowOutsideWorkspace: entry.allow_outside_workspace,
          tools: entry.tools,
          lifecycle: entry.lifecycle,
          lazy: entry.lazy,
          secrets: secretsAt(context, path),
          unresolved: unresolvedAt(context, path)
        },
        context
      )
    default:
      return skipped(path, entry.type, `type ${entry.type} is a docker-agent built-in that Toolvisor does not run`)
  }
}

const legacyReason = (field: string, version: string | undefined) =>
  `agent-level ${field}: (a docker-agent version "0" field${
    version === undefined || version === "0" ? "" : `, in a version "${version}" file`
  }) is the built-in ${field} toolset; Toolvisor does not run it`

/**
 * docker-agent's upgrade from version 0: `todo`, `think` and `memory` on the agent become built-in
 * toolsets ahead of the declared ones. Toolvisor skips built-ins, so each becomes a skipped entry.
 */
const legacyToolsets = (agent: AgentConfig.AgentFile["agents"][string], path: string, version: string | undefined) =>
  AgentConfig.legacyToolsetFields.flatMap((field) => {
    const value = agent[field]
    const enabled =
      value === true ||
      (typeof value === "object" && value !== null && !("enabled" in value && value.enabled === false))
    return enabled ? [skipped(ConfigError.childPath(path, field), field, legacyReason(field, version))] : []
  })

const versionOf = (file: AgentConfig.AgentFile): string | undefined =>
  typeof file.version === "string" || typeof file.version === "number" ? String(file.version) : undefined

/** Resolves the docker-agent format: one agent spec per agent, in file order. */
export const fromAgentFile = (file: AgentConfig.AgentFile, context: Context): Resolution =>
  assemble(
    context.source,
    Object.entries(file.agents).map(([name, agent]) => {
      const path = ConfigError.childPath("agents", name)
      return {
        name,
        outcomes: [
          ...legacyToolsets(agent, path, versionOf(file)),
          ...(agent.toolsets ?? []).map((entry, index) =>
            withOffer(
              declareEntry(entry, `${ConfigError.childPath(path, "toolsets")}[${index}]`, file, context),
              entry,
              file
            )
          )
        ],
        deferAbove: agent.defer_above
      }
    })
  )
