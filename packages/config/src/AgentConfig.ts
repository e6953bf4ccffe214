/**
 * docker-agent's agent YAML as Schemas, and the resolved model the runtime builds toolsets from.
 * The input Schemas follow docker-agent's own (so existing files load); the MCP hosts' JSON formats
 * are in `internal/hostConfig.ts`. The JSON Schema for editors is generated from the same definitions, so
 * the two can never disagree.
 */
import { Policy } from "@toolvisor/core"
import * as Url from "@toolvisor/core/internal/httpUrl"
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Interpolation from "./internal/interpolation.ts"

// ---------------------------------------------------------------------------------------------
// Durations and the lifecycle block
// ---------------------------------------------------------------------------------------------

const durationMessage = "Expected a duration like 500ms, 30s, 1m, 1h or a whole number of seconds"

/** docker-agent reads a YAML number as seconds: `startup_timeout: 30` is 30 s. */
const Seconds = Schema.Int.pipe(
  Schema.check(Schema.isGreaterThanOrEqualTo(0, { message: durationMessage })),
  Schema.decodeTo(
    Schema.Duration,
    SchemaTransformation.transform({ decode: Duration.seconds, encode: Duration.toSeconds })
  )
)

/** A duration as core's `DurationString` (`500ms`, `30s`, `1m`, `1h`, `0`) or integer seconds. */
export const DurationInput = Schema.Union([Policy.DurationString, Seconds]).annotate({
  description: "A duration: 500ms, 30s, 1m, 1h, or a whole number of seconds",
  message: durationMessage
})

const optionalDuration = Schema.optionalKey(DurationInput)

/**
 * Core's `lifecycle` block with every duration also accepting integer seconds. The decoded type is
 * core's `Policy.Lifecycle`, so `Policy.fromLifecycle` resolves it unchanged.
 */
export const Lifecycle = Policy.Lifecycle.mapFields((fields) => ({
  ...fields,
  backoff: Schema.optionalKey(
    fields.backoff.schema.mapFields((backoff) => ({
      ...backoff,
      initial: optionalDuration,
      max: optionalDuration,
      reset_after: optionalDuration
    }))
  ),
  startup_timeout: optionalDuration,
  call_timeout: optionalDuration,
  health: Schema.optionalKey(
    fields.health.schema.mapFields((health) => ({ ...health, interval: DurationInput, timeout: optionalDuration }))
  )
})).annotate({ identifier: "Lifecycle", description: "How a toolset is started, supervised and restarted" })

// ---------------------------------------------------------------------------------------------
// Shared field schemas
// ---------------------------------------------------------------------------------------------

/** The description of a field whose strings are expanded (see `Interpolation.expandedFields`). */
export const interpolated = (what: string): string =>
  `${what}; may use \${VAR}, \${VAR:-default}, \${env:VAR} (a variable that is not set stops this toolset only)`

/**
 * Refuses a string that holds a NUL byte. The kernel ends every argument, environment variable and
 * path at the first NUL, so a process cannot be started with one: refused here, it is an error that
 * names the field when the config loads, not a start failure later. The message says where the NUL
 * is, never the value, which may be long or a secret.
 */
const noNul = (carrier: string) =>
  Schema.makeFilter(
    (text: string) => {
      const at = text.indexOf("\u0000")
      return at === -1
        ? undefined
        : `contains a NUL byte (character ${Array.from(text.slice(0, at)).length + 1}), which no ${carrier} can carry`
    },
    { toJsonSchema: () => ({ pattern: "^[^\\u0000]*$" }) }
  )

/** What a server's program and arguments may be: text without a NUL byte. */
export const noNulArgument = noNul("process argument")
const noNulEnvironment = noNul("environment variable")

/**
 * YAML writes `PORT: 8080` and `args: [--port, 8080]`; docker-agent reads any scalar into a string,
 * and so do we. In YAML `args` and `env` that string is the text written (`3.10`, not `3.1`): the
 * parser keeps it (`configText`), and this converts what a JSON file or an alias brings. A number
 * or a boolean never holds a NUL byte, so only a string is checked for one.
 */
const scalarText = (nul: ReturnType<typeof noNul>) =>
  Schema.Union([Schema.String.check(nul), Schema.Finite, Schema.Boolean]).pipe(
    Schema.decodeTo(
      Schema.String,
      SchemaTransformation.transform<string, string | number | boolean>({ decode: String, encode: (text) => text })
    )
  )

/** A server's environment: values are strings to the process, whatever scalar the YAML wrote. */
export const Env = Schema.Record(Schema.String, scalarText(noNulEnvironment))
  .check(Schema.isPropertyNames(Schema.String.check(noNulEnvironment)))
  .annotate({
    description: interpolated("Environment variables for the server process")
  })

/** HTTP headers for a remote server; they often carry credentials, hence never shown. */
export const Headers = Schema.Record(Schema.String, Schema.String).annotate({
  description: interpolated("HTTP headers sent with every request, never shown in errors or status")
})

/** A list of strings, as `args`, `file_types` and `tools` are. */
export const Strings = Schema.Array(Schema.String)

/** Fields docker-agent defines that Toolvisor does not use: accepted so existing files load, then ignored. */
export const ignored = Schema.optionalKey(
  Schema.Unknown.annotate({ description: "docker-agent field, accepted for compatibility and ignored by Toolvisor" })
)

/** A field that belongs to another toolset type: present, it is an error that says where it belongs. */
const onlyFor = (field: string, types: string) =>
  Schema.optionalKey(Schema.Never.annotate({ message: `${field} can only be used with type ${types}` }))

/** docker-agent's `defer`: `true` defers every tool of the toolset, a list defers the tools it names. */
export const Defer = Schema.Union([
  Schema.Boolean,
  Strings.annotate({ description: "Tool names to defer, as the server names them or as exposed (<name>_<tool>)" })
]).annotate({
  description:
    "Offer these tools only once a tool search finds them (true: every tool; false: never, even past the agent's defer_above). They stay callable by name."
})
export type Defer = typeof Defer.Type

/** docker-agent v0/v1 wrote `env_file` as a string or a list; Toolvisor reads one file per toolset. */
const EnvFilePath = Schema.Union([
  Schema.NonEmptyString,
  Schema.Array(Schema.NonEmptyString).check(
    Schema.isMaxLength(1, { message: "Toolvisor reads one env_file per toolset; merge the files into one" })
  )
]).annotate({
  description: "A dotenv file (relative to this file's folder) whose variables the server starts with; env wins over it"
})

/** The MCP log levels (RFC 5424's), least severe first. */
export const logLevels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const
export type LogLevel = (typeof logLevels)[number]

/** Toolvisor's `log_level`: the least severe server log message to receive, asked on every (re)connect. */
export const LogLevel = Schema.Literals(logLevels).annotate({
  description:
    "The least severe log message the MCP server should send (logging/setLevel, asked on every connect); messages arrive as the toolset's log events"
})

const common = {
  name: Schema.optionalKey(
    Schema.NonEmptyString.annotate({ description: "Display name; MCP tools are exposed as <name>_<tool>" })
  ),
  tools: Schema.optionalKey(
    Strings.annotate({
      description: "Allow-list of tools, by the server's own names (read_file) or as exposed (<name>_read_file)"
    })
  ),
  lifecycle: Schema.optionalKey(Lifecycle),
  lazy: Schema.optionalKey(Schema.Boolean.annotate({ description: "Connect at first use instead of at start-up" })),
  instruction: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Text added to the agent's instructions for this toolset, with the server's own instructions (or in place of {ORIGINAL_INSTRUCTIONS})"
    })
  ),
  toon: ignored,
  model: ignored,
  defer: Schema.optionalKey(Defer),
  version: ignored,
  sandbox: ignored,
  env_file: Schema.optionalKey(EnvFilePath),
  log_level: Schema.optionalKey(LogLevel)
}

/** A server's command: a program on PATH (`npx`), or a path (`./bin/server`) found in the folder the server runs in. */
export const Command = Schema.NonEmptyString.check(noNulArgument).annotate({
  description: interpolated(
    "The server's program: a name looked up on PATH, or a path (with a /) relative to the folder the server runs in"
  )
})

/** A server's arguments, passed as written: a relative path among them is the server's to read, in its folder. */
export const Args = Schema.Array(scalarText(noNulArgument)).annotate({
  description: interpolated("Arguments, passed as written (relative paths are read in the folder the server runs in)")
})

/** Where a server runs: relative to the config's folder, which is also where it runs when this is not set. */
export const WorkingDir = Schema.String.check(noNul("directory path")).annotate({
  description: interpolated("Working directory, relative to the config file's folder (the default)")
})

const processFields = {
  command: Schema.optionalKey(Command),
  args: Schema.optionalKey(Args),
  env: Schema.optionalKey(Env),
  working_dir: Schema.optionalKey(WorkingDir)
}

/**
 * An absolute http(s) URL, checked in the Schema (after interpolation), so a bad URL is reported
 * with every other problem. One that still holds a `${VAR}` the environment lacks cannot be
 * judged from the file: its toolset is unresolved (see `ToolsetConfig.unresolved`), not invalid.
 */
export const HttpUrl = Schema.NonEmptyString.check(
  Schema.makeFilter((url: string) => (Interpolation.hasReference(url) ? undefined : Url.serverProblem(url)))
).annotate({ description: interpolated("URL") })

/** `scopes` as a list (docker-agent) or one space-separated string (`.mcp.json` hosts). */
const Scopes = Schema.Union([Strings, Schema.String]).pipe(
  Schema.decodeTo(
    Strings,
    SchemaTransformation.transform<ReadonlyArray<string>, ReadonlyArray<string> | string>({
      decode: (scopes) => (typeof scopes === "string" ? scopes.split(/\s+/).filter((s) => s !== "") : scopes),
      encode: (scopes) => scopes
    })
  )
)

/** OAuth for a remote server, spelled as docker-agent (and `.mcp.json` hosts) spell it. */
export const OAuth = Schema.Struct({
  clientId: Schema.optionalKey(
    Schema.NonEmptyString.annotate({
      description: interpolated("Pre-registered client id; without it the client registers itself")
    })
  ),
  clientSecret: Schema.optionalKey(
    Schema.String.annotate({
      description: interpolated(
        "Client secret, never shown; with no callbackPort it selects the client-credentials grant"
      )
    })
  ),
  callbackPort: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 })).annotate({
      description: "Loopback port of the redirect URI registered for clientId (default: any free port)"
    })
  ),
  callbackRedirectURL: Schema.optionalKey(
    Schema.String.annotate({
      description: interpolated(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: docker-agent's placeholder being documented
        "Redirect URI to use instead of http://127.0.0.1:<port>/callback; ${callbackPort} is its port, not a variable"
      )
    })
  ),
  scopes: Schema.optionalKey(Scopes.annotate({ description: interpolated("Scopes to request") })),
  authServerMetadataUrl: ignored,
  xaa: ignored
}).annotate({ identifier: "OAuth" })
export type OAuth = typeof OAuth.Type

/** A remote MCP server. `streamable` and `streamable-http` both mean streamable HTTP. */
export const Remote = Schema.Struct({
  url: HttpUrl,
  transport_type: Schema.optionalKey(Schema.Literals(["sse", "streamable", "streamable-http"])),
  headers: Schema.optionalKey(Headers),
  oauth: Schema.optionalKey(OAuth)
})

const mcpSourceMessage = "either command, remote or ref must be set, but only one of those"

interface McpSource {
  readonly command?: string | undefined
  readonly remote?: unknown
  readonly ref?: string | undefined
  readonly working_dir?: string | undefined
}

/** docker-agent's rules for an MCP source: exactly one of command, remote, ref; no working_dir when remote. */
/** Exactly one of the fields is present, in JSON Schema. */
export const exactlyOne = (fields: ReadonlyArray<string>) => ({
  oneOf: fields.map((field) => ({ required: [field] }))
})

const checkMcpSource = Schema.makeFilter(
  (entry: McpSource) => {
    const sources = [entry.command, entry.remote, entry.ref].filter((source) => source !== undefined).length
    return [
      ...(sources === 1 ? [] : [mcpSourceMessage]),
      ...(entry.remote !== undefined && entry.working_dir !== undefined
        ? [{ path: ["working_dir"], issue: "working_dir cannot be used with a remote MCP server" }]
        : [])
    ]
  },
  {
    toJsonSchema: () => ({
      ...exactlyOne(["command", "remote", "ref"]),
      not: { required: ["remote", "working_dir"] }
    })
  }
)

const mcpFields = {
  ...common,
  ...processFields,
  remote: Schema.optionalKey(Remote),
  ref: Schema.optionalKey(
    Schema.NonEmptyString.annotate({ description: "A name under top-level `mcps:`, or a docker: catalog ref" })
  ),
  config: ignored,
  file_types: onlyFor("file_types", "'lsp'"),
  allow_outside_workspace: onlyFor("allow_outside_workspace", "'lsp'")
}

/** A `type: mcp` toolset: exactly one of `command`, `remote` or `ref` says where its server is. */
export const McpEntry = Schema.Struct({ type: Schema.Literal("mcp"), ...mcpFields })
  .pipe(Schema.check(checkMcpSource))
  .annotate({ identifier: "McpToolset", description: "An MCP server: a command (stdio), a remote URL or a ref" })

/** A `type: lsp` toolset: a language server started over stdio and offered as `lsp_*` tools. */
export const LspEntry = Schema.Struct({
  type: Schema.Literal("lsp"),
  ...common,
  ...processFields,
  command: Schema.NonEmptyString.check(noNulArgument),
  file_types: Schema.optionalKey(
    Strings.annotate({ description: "File extensions this server handles, e.g. .go; empty means all" })
  ),
  allow_outside_workspace: Schema.optionalKey(
    Schema.Union([Schema.Boolean, Strings]).annotate({
      description:
        "Where the lsp_* tools may read and write besides working_dir: true for anywhere, or a list of extra folders (relative ones against the config file's directory). Default: only inside working_dir"
    })
  ),
  remote: onlyFor("remote", "'mcp'"),
  ref: onlyFor("ref", "'mcp'"),
  env_file: onlyFor("env_file", "'mcp'")
}).annotate({ identifier: "LspToolset", description: "A language server over stdio" })

/** docker-agent toolset types Toolvisor does not run: loaded, reported as skipped. */
export const skippedTypes = [
  "todo",
  "tasks",
  "memory",
  "think",
  "shell",
  "script",
  "filesystem",
  "fetch",
  "api",
  "a2a",
  "user_prompt",
  "openapi",
  "model_picker",
  "background_agents",
  "rag"
] as const

/**
 * One member per skipped type: the union picks a member by its literal `type`, so a bad `mcp` entry
 * reports only its own problems. Their other fields belong to docker-agent and are not checked.
 */
const skippedEntries = skippedTypes.map((type) =>
  Schema.StructWithRest(
    Schema.Struct({ type: Schema.Literal(type), lifecycle: onlyFor("lifecycle", "'mcp' or 'lsp'") }),
    [Schema.Record(Schema.String, Schema.Unknown)]
  )
)

/**
 * One entry of an agent's `toolsets:`, picked by its `type`. The types Toolvisor does not run are
 * members too, so that a docker-agent file loads and they are reported as skipped, not as errors.
 */
export const ToolsetEntry = Schema.Union([McpEntry, LspEntry, ...skippedEntries]).annotate({
  message: `Expected a toolset with type one of: mcp, lsp, ${skippedTypes.join(", ")}`
})
export type ToolsetEntry = typeof ToolsetEntry.Type

/** A reusable MCP definition under top-level `mcps:`; `type: mcp` is implied. */
export const McpDefinition = Schema.Struct({ ...mcpFields, type: Schema.optionalKey(Schema.Literal("mcp")) })
  .pipe(Schema.check(checkMcpSource))
  .annotate({ identifier: "McpDefinition" })
export type McpDefinition = typeof McpDefinition.Type

/** Every agent field docker-agent has defined (versions 0 to 7 and later), all ignored by Toolvisor. */
export const agentFields = [
  "model",
  "fallback",
  "description",
  "welcome_message",
  "instruction",
  "sub_agents",
  "handoffs",
  "rag",
  "add_date",
  "add_environment_info",
  "add_description_parameter",
  "add_prompt_files",
  "code_mode_tools",
  "max_iterations",
  "num_history_items",
  "commands",
  "structured_output",
  "skills",
  "hooks",
  "name",
  "tool_choice",
  "plan_persona"
] as const

/** Version 0 agent fields that docker-agent converts to built-in toolsets: `think: true` is `{type: think}`. */
export const legacyToolsetFields = ["think", "todo", "memory"] as const

/**
 * Fields docker-agent adds over time are accepted (the loader warns once per unknown field), so
 * a newer file still loads; only `toolsets` matters to Toolvisor.
 */
/** `tools:` on an agent is cagent's pre-release form: ignoring it would silently drop the agent's servers. */
const noAgentTools = Schema.makeFilter(
  (agent: { readonly [key: string]: unknown }) =>
    "tools" in agent
      ? {
          path: ["tools"],
          issue:
            "`tools` is not an agent field (it is the pre-release cagent form); declare the servers under `toolsets:` with `type: mcp`"
        }
      : undefined,
  { toJsonSchema: () => ({ not: { required: ["tools"] } }) }
)

/** Agent fields of Toolvisor's own, beside docker-agent's. */
export const toolvisorAgentFields = ["defer_above"] as const

/**
 * One agent under `agents:`. Only its toolsets and `defer_above` matter to Toolvisor; the rest of
 * docker-agent's fields (model, instruction…) are accepted and ignored, and unknown ones kept.
 */
export const Agent = Schema.StructWithRest(
  Schema.Struct({
    // `toolsets:` with nothing after it is YAML's null, which docker-agent reads as no toolsets.
    toolsets: Schema.optionalKey(Schema.NullOr(Schema.Array(ToolsetEntry))),
    defer_above: Schema.optionalKey(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
        description:
          "Defer every tool (but those a toolset's tools: names, and toolsets with defer: false) while the agent has more tools than this"
      })
    ),
    ...Object.fromEntries(agentFields.map((field) => [field, ignored])),
    ...Object.fromEntries(legacyToolsetFields.map((field) => [field, ignored]))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)
  .pipe(Schema.check(noAgentTools))
  .annotate({ identifier: "Agent" })

/**
 * A tool group's name: a host selects it as a URL path segment (`/mcp/<name>`) or with
 * `serve --group <name>`, so it is a plain word.
 */
export const GroupName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/u, {
    message: "Expected a group name of letters, digits, _ and - (at most 64), starting with a letter or digit"
  })
)

/** Tool names as exposed (`<name>_<tool>`), `*` standing for any run of characters: `git_*`, `*_search`. */
export const GroupPatterns = Schema.Array(Schema.NonEmptyString)
  .check(Schema.isMinLength(1, { message: "Expected one tool name or pattern at least" }))
  .annotate({
    description: "Tool names as exposed (<name>_<tool>); * matches any run of characters, e.g. git_*"
  })

/** Toolvisor's `groups:`: named subsets of an agent's tools that a gateway client can ask for. */
export const Groups = Schema.Record(Schema.String, GroupPatterns).check(Schema.isPropertyNames(GroupName)).annotate({
  description:
    "Named groups of tools: a gateway client that connects to /mcp/<group> (or serve --group <group> on stdio) is offered and may call only the tools of its group"
})

/** Top-level fields of Toolvisor's own, beside docker-agent's. */
export const toolvisorTopLevelFields = ["groups"] as const

/** docker-agent's top-level sections besides `agents` and `mcps`; v0's `env` included. */
export const topLevelFields = ["version", "metadata", "models", "rag", "providers", "permissions", "env"] as const

/** The docker-agent YAML format. Only `agents.*.toolsets` and `mcps` matter to Toolvisor. */
export const AgentFile = Schema.StructWithRest(
  Schema.Struct({
    agents: Schema.Record(Schema.String, Agent),
    mcps: Schema.optionalKey(Schema.Record(Schema.String, McpDefinition)),
    groups: Schema.optionalKey(Groups),
    ...Object.fromEntries(topLevelFields.map((field) => [field, ignored]))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
).annotate({ identifier: "AgentConfig", title: "Toolvisor / docker-agent agent config" })
export type AgentFile = typeof AgentFile.Type

// ---------------------------------------------------------------------------------------------
// The resolved model
// ---------------------------------------------------------------------------------------------

/** How to reach a toolset's server: a process over stdio, or a URL over streamable HTTP or SSE. */
export type Transport =
  | {
      readonly _tag: "stdio"
      readonly command: string
      readonly args: ReadonlyArray<string>
      readonly env: Readonly<Record<string, string>>
      readonly cwd: string | undefined
      /** VS Code's `envFile`, absolute: a dotenv file read when the server starts (never at load). */
      readonly envFile?: string | undefined
    }
  | {
      readonly _tag: "http" | "sse"
      readonly url: string
      readonly headers: Readonly<Record<string, string>>
      readonly oauth?: Omit<OAuth, "authServerMetadataUrl" | "xaa">
      /** Claude Code's `headersHelper`: run each time the toolset connects (never at load). */
      readonly headersHelper?: HeadersHelper | undefined
    }

/** A shell command whose output is a JSON object of extra headers, and the folder it runs in (the config's). */
export interface HeadersHelper {
  readonly command: string
  readonly cwd: string
}

/** One toolset, ready to build: every reference resolved, every variable expanded, the policy computed. */
export interface ToolsetConfig {
  /** docker-agent's identity: `mcp/<name>` if named, else `mcp/ref/…`, `mcp/cmd/…`, `mcp/remote/…`, `lsp/cmd/…`. */
  readonly identity: string
  /** Hex SHA-256 of the entry's canonical JSON: equal definitions, equal signatures. */
  readonly signature: string
  /** Display name, unique in the config. */
  readonly name: string
  /** The YAML `name` when set: tools are exposed as `${prefix}_${tool}`. */
  readonly prefix: string | undefined
  readonly type: "mcp" | "lsp"
  readonly transport: Transport
  /** LSP only; empty means every file type. */
  readonly fileTypes: ReadonlyArray<string>
  /**
   * LSP only: where the tools may read and write besides the working directory — anywhere
   * (`true`), or these extra folders, absolute. Absent, only inside the working directory.
   */
  readonly allowOutsideWorkspace?: true | ReadonlyArray<string> | undefined
  /**
   * Allow-list of tools, each by the server's own name or the exposed one (`AllowList`); `undefined`
   * exposes every tool (a `*` entry means every tool).
   */
  readonly tools: ReadonlyArray<string> | undefined
  /** Exposed tool names never offered, from a host's disabled-tools list; applied after `tools`. */
  readonly deny?: ReadonlyArray<string> | undefined
  /** The block as decoded, for display and diff. */
  readonly lifecycle: Policy.Lifecycle
  /** Profile plus overrides. For remote MCP the MCP package still applies its remote defaults. */
  readonly policy: Policy.Policy
  readonly lazy: boolean
  /** MCP only: the level asked of the server with `logging/setLevel` on every connect. */
  readonly logLevel?: LogLevel | undefined
  /** Every value that came from the environment: redact these wherever the toolset is shown. */
  readonly secrets: ReadonlyArray<string>
  /**
   * What this toolset needs that the environment lacks (absent when nothing is missing). The
   * references stay in the transport as written; such a toolset cannot start, the others can.
   */
  readonly unresolved?: ReadonlyArray<Unresolved> | undefined
  /** Where it was declared, e.g. `agents.root.toolsets[2]` or `mcpServers.files`. */
  readonly path: string
}

/** How one agent is offered one of its toolsets, when the entry says more than "all, eagerly". */
export interface Offer {
  /** `true` defers every tool, a list the tools it names; `false` keeps every tool eager past `deferAbove`. */
  readonly defer?: Defer | undefined
  /** docker-agent's `instruction`: served with the server's own instructions. */
  readonly instruction?: string | undefined
}

/** A variable (or VS Code input) a toolset needs that the environment does not have. */
export interface Unresolved {
  /** Where it is needed, e.g. `mcpServers.github.headers.Authorization`. */
  readonly path: string
  /** The variable's name, or `input:<id>`. */
  readonly variable: string
  /** What is missing and how to supply it. */
  readonly message: string
}

/** One agent of the resolved config: which toolsets it uses, and how each is offered to its model. */
export interface AgentSpec {
  readonly name: string
  /** Identities, in config order. */
  readonly toolsets: ReadonlyArray<string>
  /**
   * By toolset identity. Per agent, not per toolset: deferral changes what this agent's model is
   * offered, not the server, so two agents sharing a toolset may defer it differently.
   */
  readonly offers?: Readonly<Record<string, Offer>> | undefined
  /** Defer automatically while the agent has more tools than this. */
  readonly deferAbove?: number | undefined
}

/** A toolset entry of a type Toolvisor does not run, kept so that status and `validate` can say why it is absent. */
export interface Skipped {
  readonly path: string
  readonly type: string
  readonly reason: string
}

/** Something the loader accepted but the user should know: an ignored field, a variable a skipped toolset needs. */
export interface Warning {
  readonly path: string
  readonly message: string
}

/**
 * A loaded config, whatever format it came from: what `ConfigLoader.load` returns and the runtime
 * builds its toolsets from. Toolsets are listed once and shared by the agents that name them.
 */
export interface Config {
  readonly source: string
  /** How the file was read, e.g. `docker-agent YAML` or `VS Code mcp.json`. */
  readonly format?: string | undefined
  readonly agents: ReadonlyArray<AgentSpec>
  /** Each identity once, first-seen order; agents share a toolset by identity. */
  readonly toolsets: ReadonlyArray<ToolsetConfig>
  readonly skipped: ReadonlyArray<Skipped>
  readonly warnings?: ReadonlyArray<Warning> | undefined
  /** Named groups of tools, by group name: the patterns (`*` globs) of the exposed names each holds. */
  readonly groups?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  /** The config's folder (relative paths resolve against it); a root offered to its MCP servers. */
  readonly folder?: string | undefined
}
