/**
 * The MCP hosts' own config files, as Schemas, and how to tell them apart. Claude Desktop, Cursor,
 * Claude Code, Windsurf, Gemini CLI, Qwen Code and Cline all use `mcpServers`; VS Code uses
 * `servers` (and `inputs`); Zed uses `context_servers`; a Claude Code plugin's `.mcp.json` may be
 * the server map itself. One server Schema covers every host's fields: those Toolvisor can honour
 * are typed, and the rest are accepted so that a file written for any host loads.
 */
import * as NodePath from "node:path"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as AgentConfig from "../AgentConfig.ts"

/** Every format Toolvisor reads; `name` is what messages call it. */
export type Format =
  | { readonly _tag: "DockerAgent"; readonly name: string }
  | { readonly _tag: "McpServers"; readonly name: string }
  | { readonly _tag: "VsCode"; readonly name: string }
  | { readonly _tag: "VsCodeSettings"; readonly name: string }
  | { readonly _tag: "Zed"; readonly name: string }
  | { readonly _tag: "Plugin"; readonly name: string }

/** Listed in the error for a file that is none of them. */
export const formatList = [
  "docker-agent YAML (agents:)",
  "mcpServers JSON (Claude Desktop, Claude Code .mcp.json, Cursor, Windsurf, Gemini CLI, Qwen Code, Cline)",
  "VS Code mcp.json (servers:, inputs:)",
  "VS Code settings.json (mcp.servers)",
  "Zed settings.json (context_servers:)",
  "a Claude Code plugin .mcp.json (the server map itself)"
]

/** Which host wrote an `mcpServers` file, by its name: the content is the same for all of them. */
const mcpServersHost = (path: string): string => {
  const normal = path.replaceAll("\\", "/").toLowerCase()
  const base = NodePath.posix.basename(normal)
  if (base === "claude_desktop_config.json") return "Claude Desktop config"
  if (normal.endsWith(".cursor/mcp.json")) return "Cursor mcp.json"
  if (base === "cline_mcp_settings.json") return "Cline MCP settings"
  if (base === "mcp_config.json" || normal.includes("windsurf")) return "Windsurf mcp_config.json"
  if (normal.endsWith(".gemini/settings.json")) return "Gemini CLI settings.json"
  if (normal.endsWith(".qwen/settings.json")) return "Qwen Code settings.json"
  if (base === ".mcp.json") return "Claude Code .mcp.json"
  return "mcpServers JSON"
}

const serverKeys = ["command", "url", "serverUrl", "httpUrl"]

/**
 * A plugin `.mcp.json` is only recognised when every entry is an object that names a command or
 * a URL: a map of anything else (or an empty one) is not mistaken for servers.
 */
const isServerMap = (document: Readonly<Record<string, unknown>>): boolean => {
  const entries = Object.values(document)
  return (
    entries.length > 0 &&
    entries.every((entry) => Predicate.isObject(entry) && serverKeys.some((key) => typeof entry[key] === "string"))
  )
}

/** The format of a parsed document: by its content first; the file name only names the host. */
export const detect = (document: Readonly<Record<string, unknown>>, path: string): Format | undefined => {
  if ("agents" in document) return { _tag: "DockerAgent", name: "docker-agent YAML" }
  if ("mcpServers" in document) return { _tag: "McpServers", name: mcpServersHost(path) }
  if (Predicate.isObject(document.servers) && ("inputs" in document || !("mcp" in document))) {
    return { _tag: "VsCode", name: "VS Code mcp.json" }
  }
  if (Predicate.isObject(document.mcp) && Predicate.isObject(document.mcp.servers)) {
    return { _tag: "VsCodeSettings", name: "VS Code settings.json" }
  }
  if ("context_servers" in document) return { _tag: "Zed", name: "Zed settings.json" }
  if (isServerMap(document)) return { _tag: "Plugin", name: "Claude Code plugin .mcp.json" }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// One server, as any host writes it
// ---------------------------------------------------------------------------------------------

/** How each host spells the transport; `streamableHttp` is Cline's, `streamable-http` Gemini's and docker-agent's. */
export const serverTypes = [
  "stdio",
  "http",
  "sse",
  "streamable-http",
  "streamableHttp",
  "streamablehttp",
  "streamable"
] as const

/** Zed's original form: `command: { path, args, env }`. */
const ZedCommand = Schema.Struct({
  path: AgentConfig.Command,
  args: Schema.optionalKey(AgentConfig.Args),
  env: Schema.optionalKey(AgentConfig.Env)
})

/** Fields with a meaning in Toolvisor. Other hosts' fields are accepted and reported as ignored. */
export const honouredFields = [
  "command",
  "args",
  "env",
  "cwd",
  "url",
  "serverUrl",
  "httpUrl",
  "type",
  "transportType",
  "headers",
  "oauth",
  "headersHelper",
  "envFile",
  "lifecycle",
  "tools",
  "lazy",
  "disabled",
  "enabled",
  "timeout",
  "includeTools",
  "excludeTools",
  "disabledTools",
  "source",
  "settings"
] as const

interface ServerSource {
  readonly command?: unknown
  readonly url?: string | undefined
  readonly serverUrl?: string | undefined
  readonly httpUrl?: string | undefined
  readonly type?: string | undefined
  readonly cwd?: string | undefined
  readonly source?: string | undefined
  readonly settings?: unknown
}

/** A Zed server that only carries `settings` is run by a Zed extension, and is skipped, not rejected. */
export const isExtensionServer = (server: ServerSource): boolean =>
  server.source === "extension" ||
  (server.command === undefined && urlOf(server) === undefined && server.settings !== undefined)

export const urlOf = (server: ServerSource): string | undefined => server.url ?? server.serverUrl ?? server.httpUrl

const urlKeys = ["url", "serverUrl", "httpUrl"]

/** The same rules for editors: one source, unless the entry is a Zed extension's settings. */
const serverSourceJsonSchema = () => ({
  anyOf: [
    AgentConfig.exactlyOne(["command", ...urlKeys]),
    { required: ["source"], properties: { source: { const: "extension" } } },
    { required: ["settings"], not: { anyOf: ["command", ...urlKeys].map((key) => ({ required: [key] })) } }
  ]
})

const checkServerSource = Schema.makeFilter(
  (server: ServerSource) => {
    if (isExtensionServer(server)) return []
    const urls = [server.url, server.serverUrl, server.httpUrl].filter((url) => url !== undefined).length
    const remote = server.type !== undefined && server.type !== "stdio"
    return [
      ...(urls > 1 ? ["set only one of url, serverUrl and httpUrl"] : []),
      ...((server.command === undefined) === (urls === 0)
        ? ["either command or url must be set, but only one of those"]
        : []),
      ...(server.type === "stdio" && urls > 0
        ? [{ path: ["type"], issue: "type stdio needs a command, not a url" }]
        : []),
      ...(remote && server.command !== undefined
        ? [{ path: ["type"], issue: `type ${server.type} needs a url, not a command` }]
        : []),
      ...(urls > 0 && server.cwd !== undefined
        ? [{ path: ["cwd"], issue: "cwd cannot be used with a remote MCP server" }]
        : [])
    ]
  },
  { toJsonSchema: serverSourceJsonSchema }
)

const typeMessage = `Expected a transport type: one of ${serverTypes.join(", ")}`

/** One server of any host's file; `lifecycle`, `tools` and `lazy` are Toolvisor extensions. */
export const McpServer = Schema.StructWithRest(
  Schema.Struct({
    command: Schema.optionalKey(Schema.Union([AgentConfig.Command, ZedCommand])),
    args: Schema.optionalKey(AgentConfig.Args),
    env: Schema.optionalKey(AgentConfig.Env),
    cwd: Schema.optionalKey(AgentConfig.WorkingDir),
    url: Schema.optionalKey(AgentConfig.HttpUrl),
    serverUrl: Schema.optionalKey(
      AgentConfig.HttpUrl.annotate({ description: AgentConfig.interpolated("Windsurf's name for url") })
    ),
    httpUrl: Schema.optionalKey(
      AgentConfig.HttpUrl.annotate({ description: AgentConfig.interpolated("Gemini CLI: a streamable HTTP url") })
    ),
    type: Schema.optionalKey(Schema.Literals(serverTypes).annotate({ message: typeMessage })),
    transportType: Schema.optionalKey(Schema.Literals(serverTypes).annotate({ message: typeMessage })),
    headers: Schema.optionalKey(AgentConfig.Headers),
    oauth: Schema.optionalKey(AgentConfig.OAuth),
    headersHelper: Schema.optionalKey(
      Schema.NonEmptyString.check(AgentConfig.noNulArgument).annotate({
        description:
          "A shell command whose JSON output gives extra headers, run in the config's folder at each connect (never at load); its shell expands $VAR itself"
      })
    ),
    envFile: Schema.optionalKey(
      Schema.NonEmptyString.annotate({
        description: AgentConfig.interpolated(
          "VS Code: a dotenv file of variables for a stdio server, relative to this file's folder, read at each start"
        )
      })
    ),
    lifecycle: Schema.optionalKey(AgentConfig.Lifecycle),
    tools: Schema.optionalKey(AgentConfig.Strings.annotate({ description: "Allow-list of tool names; * means all" })),
    lazy: Schema.optionalKey(Schema.Boolean),
    disabled: Schema.optionalKey(Schema.Boolean.annotate({ description: "A disabled server is skipped" })),
    enabled: Schema.optionalKey(Schema.Boolean.annotate({ description: "Zed: false skips the server" })),
    timeout: Schema.optionalKey(
      Schema.Finite.annotate({ description: "Call timeout: seconds for Cline, milliseconds for Gemini CLI" })
    ),
    includeTools: Schema.optionalKey(AgentConfig.Strings.annotate({ description: "Gemini CLI allow-list" })),
    excludeTools: Schema.optionalKey(AgentConfig.Strings.annotate({ description: "Gemini CLI deny list" })),
    disabledTools: Schema.optionalKey(AgentConfig.Strings.annotate({ description: "Tools never exposed" })),
    source: Schema.optionalKey(Schema.String),
    settings: Schema.optionalKey(Schema.Unknown)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)
  .pipe(Schema.check(checkServerSource))
  .annotate({ identifier: "McpServer" })
export type McpServer = typeof McpServer.Type

const Servers = Schema.Record(Schema.String, McpServer)

/** Every host file keeps its own other sections; only the server map is read. */
const withRest = <S extends Schema.Struct<Schema.Struct.Fields>>(schema: S) =>
  Schema.StructWithRest(schema, [Schema.Record(Schema.String, Schema.Unknown)])

export const McpServersFile = withRest(Schema.Struct({ mcpServers: Servers })).annotate({
  identifier: "McpServersFile",
  title: "mcpServers JSON (Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI, Cline)"
})

/** VS Code's `inputs`: values asked for at start; Toolvisor takes them from `--input` or the environment. */
export const VsCodeInput = Schema.StructWithRest(
  Schema.Struct({
    id: Schema.NonEmptyString,
    type: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    password: Schema.optionalKey(Schema.Boolean)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

export const VsCodeFile = withRest(
  Schema.Struct({ servers: Servers, inputs: Schema.optionalKey(Schema.Array(VsCodeInput)) })
).annotate({ identifier: "VsCodeMcpFile", title: "VS Code mcp.json" })

export const VsCodeSettingsFile = withRest(
  Schema.Struct({
    mcp: withRest(Schema.Struct({ servers: Servers, inputs: Schema.optionalKey(Schema.Array(VsCodeInput)) }))
  })
).annotate({ identifier: "VsCodeSettingsFile", title: "VS Code settings.json" })

export const ZedFile = withRest(Schema.Struct({ context_servers: Servers })).annotate({
  identifier: "ZedSettingsFile",
  title: "Zed settings.json"
})

export const PluginFile = Servers.annotate({ identifier: "PluginMcpFile", title: "Claude Code plugin .mcp.json" })

/** Where the servers are in a document of the format, as a path prefix and the map itself. */
export const serversOf = (
  format: Format,
  document: Readonly<Record<string, unknown>>
): { readonly path: string; readonly servers: unknown } | undefined => {
  switch (format._tag) {
    case "McpServers":
      return { path: "mcpServers", servers: document.mcpServers }
    case "VsCode":
      return { path: "servers", servers: document.servers }
    case "VsCodeSettings":
      return { path: "mcp.servers", servers: Predicate.isObject(document.mcp) ? document.mcp.servers : undefined }
    case "Zed":
      return { path: "context_servers", servers: document.context_servers }
    case "Plugin":
      return { path: "", servers: document }
    case "DockerAgent":
      return undefined
  }
}

/** Every issue at once, as the loader reports them. */
const decodeOptions = { errors: "all", onExcessProperty: "error" } as const

/** Gemini CLI's `mcp.allowed` / `mcp.excluded`: which of the servers may start. */
export interface ServerFilter {
  readonly allowed?: ReadonlyArray<string> | undefined
  readonly excluded?: ReadonlyArray<string> | undefined
}

const strings = (value: unknown): ReadonlyArray<string> | undefined =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : undefined

/** Gemini CLI's `mcp.allowed` and `mcp.excluded` lists, when the file has them. */
export const serverFilter = (document: Readonly<Record<string, unknown>>): ServerFilter =>
  Predicate.isObject(document.mcp) && !Predicate.isObject(document.mcp.servers)
    ? { allowed: strings(document.mcp.allowed), excluded: strings(document.mcp.excluded) }
    : {}

/** The document with its server map replaced (by the expanded one). */
export const withServers = (format: Format, document: Readonly<Record<string, unknown>>, servers: unknown): unknown => {
  if (format._tag === "Plugin") return servers
  if (format._tag === "McpServers") return { ...document, mcpServers: servers }
  if (format._tag === "VsCode") return { ...document, servers }
  if (format._tag === "Zed") return { ...document, context_servers: servers }
  return { ...document, mcp: { ...(Predicate.isObject(document.mcp) ? document.mcp : {}), servers } }
}

type Servers = Readonly<Record<string, McpServer>>

/** Decodes a host file and hands back its server map. */
export const decode = (format: Format, value: unknown): Result.Result<Servers, Schema.SchemaError> => {
  switch (format._tag) {
    case "McpServers":
      return Result.map(Schema.decodeUnknownResult(McpServersFile)(value, decodeOptions), (f) => f.mcpServers)
    case "VsCode":
      return Result.map(Schema.decodeUnknownResult(VsCodeFile)(value, decodeOptions), (f) => f.servers)
    case "VsCodeSettings":
      return Result.map(Schema.decodeUnknownResult(VsCodeSettingsFile)(value, decodeOptions), (f) => f.mcp.servers)
    case "Zed":
      return Result.map(Schema.decodeUnknownResult(ZedFile)(value, decodeOptions), (f) => f.context_servers)
    default:
      return Schema.decodeUnknownResult(PluginFile)(value, decodeOptions)
  }
}
