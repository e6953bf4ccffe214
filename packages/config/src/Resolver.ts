/**
 * Turns a decoded config into the resolved model: `ref`s replaced by their `mcps` definitions,
 * relative directories made absolute, policies computed, and each toolset given an identity, a
 * signature and a unique display name. Two agents that declare the same toolset share it; the same
 * identity declared twice with different definitions is an error at both places.
 */
import * as NodePath from "node:path"
import { Policy } from "@toolvisor/core"
import * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as ToolsetDiff from "./ToolsetDiff.ts"

export interface Context {
  readonly source: string
  /** Relative `working_dir` / `cwd` are resolved against it: the config file's directory. */
  readonly baseDir: string
  /** The environment values expanded into each entry, by the entry's path. */
  readonly secrets: ReadonlyMap<string, ReadonlyArray<string>>
}

export interface Resolution {
  readonly config: AgentConfig.Config
  readonly issues: ReadonlyArray<ConfigError.Issue>
}

/** A toolset as one entry declares it, before sharing and naming. */
interface Declaration extends ToolsetDiff.Signed {
  readonly path: string
  readonly identity: string
  readonly derivedName: string
  readonly secrets: ReadonlyArray<string>
}

type Outcome =
  | { readonly _tag: "Declared"; readonly declaration: Declaration }
  | { readonly _tag: "Skipped"; readonly skipped: AgentConfig.Skipped }
  | { readonly _tag: "Invalid"; readonly issues: ReadonlyArray<ConfigError.Issue> }

interface Source {
  readonly command?: string | undefined
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  readonly url?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly oauth?: AgentConfig.OAuth | undefined
  readonly sse: boolean
}

const transportOf = (
  source: Source,
  context: Context,
  urlPath: string
): AgentConfig.Transport | ReadonlyArray<ConfigError.Issue> => {
  if (source.command !== undefined) {
    return {
      _tag: "stdio",
      command: source.command,
      args: source.args ?? [],
      env: source.env ?? {},
      cwd: source.cwd === undefined ? undefined : NodePath.resolve(context.baseDir, source.cwd)
    }
  }
  const url = source.url ?? ""
  if (!AgentConfig.isHttpUrl(url)) return [{ path: urlPath, message: "Expected an absolute http:// or https:// URL" }]
  const { authServerMetadataUrl: _, xaa: __, ...oauth } = source.oauth ?? {}
  return {
    _tag: source.sse ? "sse" : "http",
    url,
    headers: source.headers ?? {},
    ...(source.oauth === undefined ? {} : { oauth })
  }
}

const nameFrom = (transport: AgentConfig.Transport): string =>
  transport._tag === "stdio" ? NodePath.basename(transport.command) : new URL(transport.url).host

interface Declare {
  readonly path: string
  readonly type: "mcp" | "lsp"
  readonly name: string | undefined
  readonly ref: string | undefined
  readonly source: Source
  readonly urlPath: string
  readonly fileTypes: ReadonlyArray<string> | undefined
  readonly tools: ReadonlyArray<string> | undefined
  readonly lifecycle: Policy.Lifecycle | undefined
  readonly lazy: boolean | undefined
  readonly secrets: ReadonlyArray<string>
}

const declare = (input: Declare, context: Context): Outcome => {
  const transport = transportOf(input.source, context, input.urlPath)
  if (!("_tag" in transport)) return { _tag: "Invalid", issues: transport }
  const signed: ToolsetDiff.Signed = {
    type: input.type,
    prefix: input.name,
    transport,
    fileTypes: input.fileTypes ?? [],
    tools: input.tools,
    lifecycle: input.lifecycle ?? {},
    lazy: input.lazy ?? false
  }
  const declaration: Declaration = {
    ...signed,
    path: input.path,
    identity: ToolsetDiff.identity({
      type: input.type,
      name: input.name,
      ref: input.ref,
      command: input.source.command,
      url: input.source.url
    }),
    derivedName: input.name ?? input.ref ?? nameFrom(transport),
    secrets: [...new Set(input.secrets)]
  }
  return { _tag: "Declared", declaration }
}

const secretsAt = (context: Context, ...paths: ReadonlyArray<string>): ReadonlyArray<string> =>
  paths.flatMap((path) => context.secrets.get(path) ?? [])

const skipped = (path: string, type: string, reason: string): Outcome => ({
  _tag: "Skipped",
  skipped: { path, type, reason }
})

const dockerRef = (ref: string): boolean => ref.startsWith("docker:")

const dockerSkip = (path: string, ref: string): Outcome =>
  skipped(path, "mcp", `${ref} is a Docker MCP catalog ref; Toolvisor does not run the Docker catalog`)

type McpFields = Omit<AgentConfig.McpDefinition, "type">

const unknownRef = (path: string, ref: string, defined: ReadonlyArray<string>): ConfigError.Issue => {
  const known = defined.length === 0 ? "there is no top-level mcps: section" : `defined: ${defined.join(", ")}`
  return { path: `${path}.ref`, message: `No MCP definition named "${ref}" under mcps (${known})` }
}

const isObject = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Refs that name no `mcps` entry, read from the raw document: when the Schema rejects the file,
 * resolution does not run, yet these problems should be reported with the others.
 */
export const unknownRefs = (document: unknown): ReadonlyArray<ConfigError.Issue> => {
  if (!isObject(document) || !isObject(document.agents)) return []
  const defined = isObject(document.mcps) ? Object.keys(document.mcps) : []
  return Object.entries(document.agents).flatMap(([agent, spec]) => {
    const toolsets = isObject(spec) && Array.isArray(spec.toolsets) ? spec.toolsets : []
    return toolsets.flatMap((entry: unknown, index) => {
      if (!isObject(entry) || typeof entry.ref !== "string") return []
      if (dockerRef(entry.ref) || defined.includes(entry.ref)) return []
      const path = `${ConfigError.childPath("agents", agent)}.toolsets[${index}]`
      return [unknownRef(path, entry.ref, defined)]
    })
  })
}

const declareMcp = (entry: McpFields, path: string, file: AgentConfig.AgentFile, context: Context): Outcome => {
  const ref = entry.ref
  if (ref === undefined) return declareMcpSource(entry, entry, path, path, undefined, secretsAt(context, path), context)
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
  return declareMcpSource(
    merged,
    definition,
    path,
    definitionPath,
    ref,
    secretsAt(context, path, definitionPath),
    context
  )
}

/** `fields` carries the overridable settings; `source` is where command or remote was written. */
const declareMcpSource = (
  fields: McpFields,
  source: McpFields,
  path: string,
  sourcePath: string,
  ref: string | undefined,
  secrets: ReadonlyArray<string>,
  context: Context
): Outcome =>
  declare(
    {
      path,
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
      secrets
    },
    context
  )

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
          tools: entry.tools,
          lifecycle: entry.lifecycle,
          lazy: entry.lazy,
          secrets: secretsAt(context, path)
        },
        context
      )
    default:
      return skipped(path, entry.type, `type ${entry.type} is a docker-agent built-in that Toolvisor does not run`)
  }
}

/** Resolves the docker-agent format: one agent spec per agent, in file order. */
export const fromAgentFile = (file: AgentConfig.AgentFile, context: Context): Resolution =>
  assemble(
    context.source,
    Object.entries(file.agents).map(([name, agent]) => ({
      name,
      outcomes: (agent.toolsets ?? []).map((entry, index) =>
        declareEntry(
          entry,
          `${ConfigError.childPath(ConfigError.childPath("agents", name), "toolsets")}[${index}]`,
          file,
          context
        )
      )
    }))
  )

/** The agent an `mcpServers` file becomes. */
export const defaultAgent = "default"

/** Resolves an `mcpServers` file: one agent, `default`, each server named (and prefixed) by its key. */
export const fromMcpServers = (file: AgentConfig.McpServersFile, context: Context): Resolution =>
  assemble(context.source, [
    {
      name: defaultAgent,
      outcomes: Object.entries(file.mcpServers).map(([key, server]) => {
        const path = ConfigError.childPath("mcpServers", key)
        if (server.disabled === true) return skipped(path, "mcp", "disabled: true")
        return declare(
          {
            path,
            type: "mcp",
            name: key,
            ref: undefined,
            source: { ...server, sse: server.type === "sse" },
            urlPath: `${path}.url`,
            fileTypes: undefined,
            tools: server.tools,
            lifecycle: server.lifecycle,
            lazy: server.lazy,
            secrets: secretsAt(context, path)
          },
          context
        )
      })
    }
  ])

const uniqueName = (base: string, used: Set<string>): string => {
  let name = base
  for (let n = 2; used.has(name); n++) name = `${base}-${n}`
  used.add(name)
  return name
}

const assemble = (
  source: string,
  agents: ReadonlyArray<{ readonly name: string; readonly outcomes: ReadonlyArray<Outcome> }>
): Resolution => {
  const issues: Array<ConfigError.Issue> = []
  const skippedEntries: Array<AgentConfig.Skipped> = []
  const byIdentity = new Map<string, AgentConfig.ToolsetConfig>()
  const usedNames = new Set<string>()
  const specs = agents.map(({ name, outcomes }) => {
    const identities: Array<string> = []
    for (const outcome of outcomes) {
      if (outcome._tag === "Invalid") issues.push(...outcome.issues)
      else if (outcome._tag === "Skipped") skippedEntries.push(outcome.skipped)
      else {
        const { path, identity, derivedName, secrets, ...signed } = outcome.declaration
        const signature = ToolsetDiff.signature(signed)
        const existing = byIdentity.get(identity)
        if (existing === undefined) {
          byIdentity.set(identity, {
            ...signed,
            identity,
            signature,
            name: uniqueName(derivedName, usedNames),
            policy: Policy.fromLifecycle(signed.lifecycle),
            secrets,
            path
          })
        } else if (existing.signature !== signature) {
          const message = (other: string) =>
            `toolset ${identity} is also declared at ${other} with a different definition; give one a different name`
          issues.push({ path: existing.path, message: message(path) }, { path, message: message(existing.path) })
        }
        if (!identities.includes(identity)) identities.push(identity)
      }
    }
    return { name, toolsets: identities }
  })
  return {
    config: { source, agents: specs, toolsets: [...byIdentity.values()], skipped: skippedEntries },
    issues
  }
}
