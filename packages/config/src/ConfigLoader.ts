/**
 * Reads a config file into the resolved model. The steps: parse YAML or JSONC, detect the format
 * from the content (docker-agent, one of the MCP hosts' files), expand variables in the raw
 * entries, decode with the format's Schema (every issue at once), then resolve. Any problem fails
 * with one `ConfigError` that names the format and lists every problem of the file, with
 * environment values masked. What does not stop the toolsets that will run (an ignored field, a
 * skipped toolset's problem) is a warning on the loaded config, and so is what the environment
 * lacks: the toolset that needs an unset variable is loaded `unresolved`, and only it cannot start.
 */
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as ConfigText from "./internal/configText.ts"
import * as HostConfig from "./internal/hostConfig.ts"
import * as HostResolver from "./internal/hostResolver.ts"
import * as Interpolation from "./internal/interpolation.ts"
import * as Resolver from "./internal/resolver.ts"
import * as Unknowns from "./internal/unknowns.ts"

/** The error `load` and `parse` fail with (defined in `ConfigError.ts`). */
export { ConfigError } from "./ConfigError.ts"

/** The file's syntax: `yaml`, or `json` (which also reads JSONC's comments and trailing commas). */
export type Format = ConfigText.Syntax

/** What `load` takes besides the path: where variables come from, and which agent to keep. */
export interface Options {
  /** Variables for `${VAR}`; defaults to `process.env`. */
  readonly env?: Interpolation.Env | undefined
  /** Load only this agent and the toolsets it uses. */
  readonly agent?: string | undefined
  /** Values for VS Code's `${input:id}`, by id (the CLI's `--input id=value`). */
  readonly inputs?: Readonly<Record<string, string>> | undefined
}

/** What `parse` needs besides the text, which a file would otherwise tell: its name, syntax and folder. */
export interface ParseOptions extends Options {
  /** Shown in errors and kept as `Config.source`: a file path or `<inline>`. Its name can tell the host. */
  readonly source: string
  /** Guessed from the text when absent. */
  readonly format?: Format | undefined
  /**
   * The file's folder. Relative paths resolve against it, or against the project above it when
   * it is a host's settings folder such as `.vscode/`.
   */
  readonly baseDir: string
}

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

const fail = (source: string, path: string, message: string, format?: string) =>
  Effect.fail(ConfigError.make(source, [{ path, message }], [], format))

/** The file's syntax by extension; other names are guessed from the content. */
export const formatOf = ConfigText.syntaxOf

interface Into {
  /** Problems of the text of a reference: the file's. */
  readonly issues: Array<ConfigError.Issue>
  readonly secrets: Map<string, ReadonlyArray<string>>
  /** What the environment lacks, by the path of the entry that needs it. */
  readonly unresolved: Map<string, ReadonlyArray<AgentConfig.Unresolved>>
}

/** Expands each entry of a record (`mcps`, a server map) or a list (`toolsets`), keyed by its path. */
const expandEntries = (
  entries: unknown,
  path: string,
  env: Interpolation.Env,
  options: Interpolation.Options,
  into: Into
): unknown => {
  const one = (entry: unknown, at: string) => {
    const expansion = Interpolation.expandEntry(entry, at, env, options)
    into.issues.push(...expansion.issues)
    into.secrets.set(at, expansion.secrets)
    into.unresolved.set(at, expansion.missing)
    return expansion.value
  }
  if (Array.isArray(entries)) return entries.map((entry, index) => one(entry, ConfigError.childPath(path, index)))
  if (Predicate.isObject(entries)) {
    return Object.fromEntries(
      Object.entries(entries).map(([key, entry]) => [key, one(entry, ConfigError.childPath(path, key))])
    )
  }
  return entries
}

/** docker-agent expands `env` values with Go's `os.Expand`, so `$VAR` works there too. */
const expandAgentFile = (document: Readonly<Record<string, unknown>>, env: Interpolation.Env, into: Into) => {
  const options = { bare: true }
  const agents = Predicate.isObject(document.agents)
    ? Object.fromEntries(
        Object.entries(document.agents).map(([name, agent]) => {
          if (!Predicate.isObject(agent) || agent.toolsets === undefined) return [name, agent]
          const at = ConfigError.childPath(ConfigError.childPath("agents", name), "toolsets")
          return [name, { ...agent, toolsets: expandEntries(agent.toolsets, at, env, options, into) }]
        })
      )
    : document.agents
  const mcps = expandEntries(document.mcps, "mcps", env, options, into)
  return { ...document, ...(agents === undefined ? {} : { agents }), ...(mcps === undefined ? {} : { mcps }) }
}

/** The folder a host calls `${workspaceFolder}`: the project, one level above `.vscode/`, `.cursor/`… */
const workspaceFolder = (baseDir: string): string =>
  NodePath.basename(baseDir).startsWith(".") ? NodePath.dirname(baseDir) : baseDir

/**
 * The config's folder, against which its relative paths resolve and in which a stdio server with
 * no `cwd` runs: the file's own folder, or, for a host's file kept in a settings folder such as
 * `.vscode/` or `.cursor/`, the project above it — where that host runs its servers, and what it
 * calls `${workspaceFolder}`.
 */
const folderOf = (format: HostConfig.Format, baseDir: string): string =>
  format._tag === "DockerAgent" ? baseDir : workspaceFolder(baseDir)

const hostBuiltins = (format: HostConfig.Format, baseDir: string, env: Interpolation.Env) => {
  const workspace = workspaceFolder(baseDir)
  return {
    workspaceFolder: workspace,
    workspaceFolderBasename: NodePath.basename(workspace),
    userHome: NodeOs.homedir(),
    pathSeparator: NodePath.sep,
    "/": NodePath.sep,
    // Claude Code sets it to the plugin's folder, where a plugin keeps its `.mcp.json`.
    ...(format.name.startsWith("Claude Code") && env.CLAUDE_PLUGIN_ROOT === undefined
      ? { CLAUDE_PLUGIN_ROOT: baseDir }
      : {})
  }
}

/** VS Code `inputs`, with the values given on the command line. */
const inputsOf = (document: Readonly<Record<string, unknown>>, given: Readonly<Record<string, string>>) => {
  const holder = Predicate.isObject(document.mcp) && Array.isArray(document.mcp.inputs) ? document.mcp : document
  const declared = Array.isArray(holder.inputs) ? holder.inputs : []
  const inputs = new Map<string, Interpolation.Input>()
  for (const input of declared) {
    if (!Predicate.isObject(input) || typeof input.id !== "string") continue
    const description = typeof input.description === "string" ? input.description : undefined
    inputs.set(input.id, { description, value: given[input.id], password: input.password === true })
  }
  for (const [id, value] of Object.entries(given)) if (!inputs.has(id)) inputs.set(id, { value })
  return inputs
}

/** Keeps only the chosen agent, so problems in the others do not block it. */
const selectAgent = (
  document: Readonly<Record<string, unknown>>,
  format: HostConfig.Format,
  agent: string,
  source: string
): Effect.Effect<Readonly<Record<string, unknown>>, ConfigError.ConfigError> => {
  const isAgentFile = format._tag === "DockerAgent"
  const names = !isAgentFile
    ? [Resolver.defaultAgent]
    : Predicate.isObject(document.agents)
      ? Object.keys(document.agents)
      : []
  if (!names.includes(agent)) {
    const known = names.length === 0 ? "the config defines none" : `agents: ${names.join(", ")}`
    return fail(source, "agents", `No agent named "${agent}" (${known})`, format.name)
  }
  if (!isAgentFile || !Predicate.isObject(document.agents)) return Effect.succeed(document)
  return Effect.succeed({ ...document, agents: { [agent]: document.agents[agent] } })
}

const notAFormat = (document: Readonly<Record<string, unknown>>): string => {
  const keys = Object.keys(document).slice(0, 6)
  const found = keys.length === 0 ? "an empty object" : `top-level keys ${keys.join(", ")}`
  return `Not a config format Toolvisor reads (found ${found}). Toolvisor reads: ${HostConfig.formatList.join("; ")}`
}

/** Decodes and resolves an already parsed document; pure. */
const fromDocument = (
  raw: unknown,
  options: ParseOptions
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const { source } = options
    if (!Predicate.isObject(raw)) {
      const got =
        raw === null || raw === undefined ? "an empty document" : `a ${Array.isArray(raw) ? "list" : typeof raw}`
      return yield* fail(source, "", `Expected a mapping (${HostConfig.formatList.join("; ")}), got ${got}`)
    }
    const format = HostConfig.detect(raw, source)
    if (format === undefined) return yield* fail(source, "", notAFormat(raw))
    const document = options.agent === undefined ? raw : yield* selectAgent(raw, format, options.agent, source)
    const env = options.env ?? process.env
    const into: Into = { issues: [], secrets: new Map(), unresolved: new Map() }
    const base = {
      source,
      baseDir: folderOf(format, options.baseDir),
      secrets: into.secrets,
      unresolved: into.unresolved
    }
    if (format._tag === "DockerAgent") {
      const value = expandAgentFile(document, env, into)
      const decoded = Schema.decodeUnknownResult(AgentConfig.AgentFile)(value, parseOptions)
      return yield* settle(decoded, (file) => Resolver.fromAgentFile(file, base), {
        source,
        folder: base.baseDir,
        format,
        value,
        into,
        notes: Unknowns.agentFile(document)
      })
    }
    const located = HostConfig.serversOf(format, document) ?? { path: "", servers: {} }
    const expansion = {
      builtins: hostBuiltins(format, options.baseDir, env),
      inputs: inputsOf(document, options.inputs ?? {}),
      noDefaults: format._tag === "VsCode" || format._tag === "VsCodeSettings"
    }
    const servers = expandEntries(located.servers, located.path, env, expansion, into)
    const value = HostConfig.withServers(format, document, servers)
    const decoded = HostConfig.decode(format, value)
    return yield* settle(
      decoded,
      (file) => HostResolver.fromHostServers(file, located.path, format, base, HostConfig.serverFilter(document)),
      {
        source,
        folder: base.baseDir,
        format,
        value,
        into,
        notes: Unknowns.hostServers(located.servers, located.path, format.name)
      }
    )
  })

interface Pending {
  readonly source: string
  /** The config's folder (`folderOf`). */
  readonly folder: string
  readonly format: HostConfig.Format
  readonly value: unknown
  readonly into: Into
  readonly notes: Unknowns.Notes
}

const within = (path: string, roots: ReadonlyArray<string>): boolean =>
  roots.some((root) => path === root || path.startsWith(`${root}.`) || path.startsWith(`${root}[`))

/**
 * Fails with every problem of the file (Schema, references, resolution), or succeeds with
 * warnings. What the environment lacks is not the file's problem: a toolset that needs a variable
 * that is not set is loaded unresolved (it will not start; the others will) and named in a
 * warning. A problem in an entry that does not run (skipped, or unused) is a warning too.
 */
const settle = <A>(
  decoded: Result.Result<A, Schema.SchemaError>,
  resolve: (file: A) => Resolver.Resolution,
  pending: Pending
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.suspend(() => {
    const { source, format, into, notes } = pending
    const secrets = [...into.secrets.values()].flat()
    const missing = [...into.unresolved.values()].flat()
    // A reference left as written for a missing variable is valid text: only a malformed one
    // explains the Schema's issue with its value.
    const explained = new Set([...into.issues.map((issue) => issue.path), ...notes.explained])
    const failWith = (found: ReadonlyArray<ConfigError.Issue>, expanded: ReadonlyArray<ConfigError.Issue>) => {
      const issues = [...found.filter((issue) => !explained.has(issue.path)), ...notes.errors, ...expanded]
      return Effect.fail(ConfigError.make(source, issues, secrets, format.name))
    }
    if (Result.isFailure(decoded)) {
      const refs = format._tag === "DockerAgent" ? Resolver.unknownRefs(pending.value) : []
      return failWith([...ConfigError.fromSchemaIssue(decoded.failure.issue), ...refs], into.issues)
    }
    const resolution = resolve(decoded.success)
    const blocking = into.issues.filter((issue) => within(issue.path, resolution.live))
    if (resolution.issues.length > 0 || blocking.length > 0 || notes.errors.length > 0) {
      return failWith(resolution.issues, blocking)
    }
    const deferred = [...into.issues, ...missing].filter((issue) => !within(issue.path, resolution.live))
    const warnings = ConfigError.maskIssues(
      [
        ...notes.warnings,
        ...deferred.map((issue) => ({ ...issue, message: `${issue.message} (not needed: this entry does not run)` })),
        ...resolution.config.toolsets.flatMap((toolset) =>
          (toolset.unresolved ?? []).map((lack) => ({
            path: lack.path,
            message: `toolset ${toolset.name} will not start: ${lack.message}`
          }))
        ),
        ...surprises(resolution.config)
      ],
      secrets
    )
    return Effect.succeed({ ...resolution.config, format: format.name, warnings, folder: pending.folder })
  })

/** A `~` path segment: a shell expands it, but no shell runs a server, so it names a folder called `~`. */
const hasTilde = (path: string | undefined) =>
  path !== undefined && (path === "~" || path.startsWith("~/") || path.includes("/~/") || path.endsWith("/~"))

/**
 * What loads but cannot be what the user meant: a config with no toolset at all (its commands
 * succeeded with an empty table and nothing said; one whose toolsets are all skipped says so
 * already), and `~` in a server's command or folder. (One agent without toolsets is common: a
 * coordinator that only hands work to others.)
 */
const surprises = (config: AgentConfig.Config): ReadonlyArray<ConfigError.Issue> => [
  ...(config.toolsets.length === 0 && config.skipped.length === 0
    ? [{ path: "", message: "no toolset Toolvisor runs (an MCP or LSP server): there is nothing to supervise" }]
    : []),
  ...config.toolsets.flatMap((toolset) => {
    const { transport } = toolset
    if (transport._tag !== "stdio") return []
    return [
      ...(hasTilde(transport.command) ? [{ path: `${toolset.path}.command`, field: "command" }] : []),
      ...(hasTilde(transport.cwd) ? [{ path: `${toolset.path}.working_dir`, field: "working_dir" }] : [])
    ].map(({ path, field }) => ({
      path,
      message: `"~" in ${field} is not expanded (no shell runs the server): write \${userHome} instead`
    }))
  })
]

/** Parses config text. Pure: no file access; relative paths resolve against `options.baseDir`. */
export const parse = (
  text: string,
  options: ParseOptions
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  ConfigText.parse(text, options.format ?? ConfigText.guess(text), options.source).pipe(
    Effect.flatMap((raw) => fromDocument(raw, options))
  )

/** A config is a few KiB; a file past this is someone's attempt at something else, refused unread. */
export const maxBytes = 4 * 1024 * 1024

/** How long a pipe given as the config (`<(…)`, `/dev/stdin`) may take to end. */
const pipeMillis = 30_000

const readError = (error: unknown): string => {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined
  if (code === "ENOENT") return "File not found"
  if (code === "EISDIR") return "Is a directory, not a config file"
  if (code === "EACCES") return "Permission denied"
  if (error instanceof BoundedFile.Unreadable) return `Refused: ${error.message}`
  return `Cannot read the file: ${error instanceof Error ? error.message : String(error)}`
}

/** Not "an empty document": nothing was written to the pipe, so there was no document at all. */
const readMessage = (error: unknown, absolute: string): string =>
  error instanceof BoundedFile.NoWriter ? `${absolute} is ${error.message}` : `${readError(error)}: ${absolute}`

/**
 * Reads and parses a config file; relative paths in it resolve against the file's folder. Reading
 * a config runs nothing and reads no other file: a `headersHelper` runs, and an `envFile` is read,
 * only when its toolset connects, so validating someone else's repository is safe.
 */
export const load = (path: string, options: Options = {}): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const absolute = NodePath.resolve(path)
    const text = yield* Effect.tryPromise({
      try: () => BoundedFile.readText(absolute, { maxBytes, pipeMillis }),
      catch: (error) => ConfigError.make(path, [{ path: "", message: readMessage(error, absolute) }])
    })
    if (text === undefined) {
      return yield* fail(path, "", `Refused: larger than ${maxBytes / 1024 / 1024} MiB, which no config is`)
    }
    const baseDir = NodePath.dirname(absolute)
    return yield* parse(text, { ...options, source: path, format: ConfigText.syntaxOf(path, text), baseDir })
  })
