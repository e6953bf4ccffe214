/**
 * Reads a config file into the resolved model. The steps: parse YAML or JSON, pick the format by
 * its shape (`mcpServers` or `agents`), expand `${VAR}` in the raw entries, decode with the Schema
 * (every issue at once, unknown fields rejected), then resolve. Any problem fails with one
 * `ConfigError` that lists them all, with environment values masked.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Yaml from "yaml"
import * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as Interpolation from "./Interpolation.ts"
import * as Resolver from "./Resolver.ts"

/** The error `load` and `parse` fail with (defined in `ConfigError.ts`). */
export { ConfigError } from "./ConfigError.ts"

export type Format = "yaml" | "json"

export interface Options {
  /** Variables for `${VAR}`; defaults to `process.env`. */
  readonly env?: Interpolation.Env | undefined
  /** Load only this agent and the toolsets it uses. */
  readonly agent?: string | undefined
}

export interface ParseOptions extends Options {
  /** Shown in errors and kept as `Config.source`: a file path or `<inline>`. */
  readonly source: string
  /** Guessed from the text when absent. */
  readonly format?: Format | undefined
  /** Relative directories are resolved against it. */
  readonly baseDir: string
}

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

const decodeAgentFile = Schema.decodeUnknownResult(AgentConfig.AgentFile)
const decodeMcpServers = Schema.decodeUnknownResult(AgentConfig.McpServersFile)

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const fail = (source: string, path: string, message: string) =>
  Effect.fail(ConfigError.make(source, [{ path, message }]))

const guessFormat = (text: string): Format => (/^\s*[{[]/.test(text) ? "json" : "yaml")

/** The file's format by extension; other names are guessed from the content. */
export const formatOf = (path: string, text: string): Format => {
  const extension = NodePath.extname(path).toLowerCase()
  if (extension === ".json") return "json"
  if (extension === ".yaml" || extension === ".yml") return "yaml"
  return guessFormat(text)
}

const parseText = (text: string, format: Format, source: string): Effect.Effect<unknown, ConfigError.ConfigError> => {
  if (format === "json") {
    return Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) =>
        ConfigError.make(source, [
          { path: "", message: `Not valid JSON: ${error instanceof Error ? error.message : error}` }
        ])
    })
  }
  const document = Yaml.parseDocument(text)
  const [error] = document.errors
  if (error !== undefined) {
    const where = error.linePos?.[0]
    const at = where === undefined ? "" : ` (line ${where.line}, column ${where.col})`
    return fail(source, "", `Not valid YAML${at}: ${error.message.split("\n")[0]}`)
  }
  return Effect.succeed(document.toJS())
}

interface Expanded {
  readonly value: unknown
  readonly issues: ReadonlyArray<ConfigError.Issue>
  readonly secrets: ReadonlyMap<string, ReadonlyArray<string>>
}

/**
 * Expands every entry of a record of entries (`mcps`, `mcpServers`) or a list (`toolsets`) in the
 * raw document, keyed by the path each entry will have once decoded.
 */
const expandEntries = (
  entries: unknown,
  path: string,
  env: Interpolation.Env,
  into: { issues: Array<ConfigError.Issue>; secrets: Map<string, ReadonlyArray<string>> }
): unknown => {
  const one = (entry: unknown, at: string) => {
    const expansion = Interpolation.expandEntry(entry, at, env)
    into.issues.push(...expansion.issues)
    into.secrets.set(at, expansion.secrets)
    return expansion.value
  }
  if (Array.isArray(entries)) return entries.map((entry, index) => one(entry, ConfigError.childPath(path, index)))
  if (isRecord(entries)) {
    return Object.fromEntries(
      Object.entries(entries).map(([key, entry]) => [key, one(entry, ConfigError.childPath(path, key))])
    )
  }
  return entries
}

const expandAgentFile = (document: Readonly<Record<string, unknown>>, env: Interpolation.Env): Expanded => {
  const into = { issues: [] as ConfigError.Issue[], secrets: new Map<string, ReadonlyArray<string>>() }
  const agents = isRecord(document.agents)
    ? Object.fromEntries(
        Object.entries(document.agents).map(([name, agent]) => {
          const at = ConfigError.childPath(ConfigError.childPath("agents", name), "toolsets")
          return [name, isRecord(agent) ? { ...agent, toolsets: expandEntries(agent.toolsets, at, env, into) } : agent]
        })
      )
    : document.agents
  const mcps = expandEntries(document.mcps, "mcps", env, into)
  const value = { ...document, ...(agents === undefined ? {} : { agents }), ...(mcps === undefined ? {} : { mcps }) }
  return { value, issues: into.issues, secrets: into.secrets }
}

const expandMcpServers = (document: Readonly<Record<string, unknown>>, env: Interpolation.Env): Expanded => {
  const into = { issues: [] as ConfigError.Issue[], secrets: new Map<string, ReadonlyArray<string>>() }
  const mcpServers = expandEntries(document.mcpServers, "mcpServers", env, into)
  return { value: { ...document, mcpServers }, issues: into.issues, secrets: into.secrets }
}

/** Keeps only the chosen agent, so problems in the others do not block it. */
const selectAgent = (
  document: Readonly<Record<string, unknown>>,
  agent: string,
  source: string
): Effect.Effect<Readonly<Record<string, unknown>>, ConfigError.ConfigError> => {
  const isMcpServers = "mcpServers" in document
  const names = isMcpServers ? [Resolver.defaultAgent] : isRecord(document.agents) ? Object.keys(document.agents) : []
  if (!names.includes(agent)) {
    const known = names.length === 0 ? "the config defines none" : `agents: ${names.join(", ")}`
    return fail(source, "agents", `No agent named "${agent}" (${known})`)
  }
  if (isMcpServers || !isRecord(document.agents)) return Effect.succeed(document)
  return Effect.succeed({ ...document, agents: { [agent]: document.agents[agent] } })
}

/** Decodes and resolves an already parsed document; pure. */
const fromDocument = (
  raw: unknown,
  options: ParseOptions
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const { source } = options
    if (!isRecord(raw)) {
      const got =
        raw === null || raw === undefined ? "an empty document" : `a ${Array.isArray(raw) ? "list" : typeof raw}`
      return yield* fail(source, "", `Expected a YAML or JSON mapping with agents: or mcpServers:, got ${got}`)
    }
    const document = options.agent === undefined ? raw : yield* selectAgent(raw, options.agent, source)
    const env = options.env ?? process.env
    const isMcpServers = "mcpServers" in document
    const expanded = { source, ...(isMcpServers ? expandMcpServers(document, env) : expandAgentFile(document, env)) }
    const context = { source, baseDir: options.baseDir, secrets: expanded.secrets }
    return yield* isMcpServers
      ? settle(
          decodeMcpServers(expanded.value, parseOptions),
          (file) => Resolver.fromMcpServers(file, context),
          expanded
        )
      : settle(decodeAgentFile(expanded.value, parseOptions), (file) => Resolver.fromAgentFile(file, context), expanded)
  })

/**
 * Fails with every issue found (Schema, interpolation, resolution), or succeeds. A value with a
 * missing variable is reported once, for the variable: the emptied value's own issue is dropped.
 */
const settle = <A>(
  decoded: Result.Result<A, Schema.SchemaError>,
  resolve: (file: A) => Resolver.Resolution,
  expanded: Expanded & { readonly source: string }
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> => {
  const explained = new Set(expanded.issues.map((issue) => issue.path))
  const failWith = (found: ReadonlyArray<ConfigError.Issue>) => {
    const issues = [...found.filter((issue) => !explained.has(issue.path)), ...expanded.issues]
    return Effect.fail(ConfigError.make(expanded.source, issues, [...expanded.secrets.values()].flat()))
  }
  if (Result.isFailure(decoded)) {
    return failWith([...ConfigError.fromSchemaIssue(decoded.failure.issue), ...Resolver.unknownRefs(expanded.value)])
  }
  const resolution = resolve(decoded.success)
  if (resolution.issues.length > 0 || expanded.issues.length > 0) return failWith(resolution.issues)
  return Effect.succeed(resolution.config)
}

/** Parses config text. Pure: no file access; relative paths resolve against `options.baseDir`. */
export const parse = (
  text: string,
  options: ParseOptions
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  parseText(text, options.format ?? guessFormat(text), options.source).pipe(
    Effect.flatMap((raw) => fromDocument(raw, options))
  )

const readError = (error: unknown): string => {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined
  if (code === "ENOENT") return "File not found"
  if (code === "EISDIR") return "Is a directory, not a config file"
  if (code === "EACCES") return "Permission denied"
  return `Cannot read the file: ${error instanceof Error ? error.message : String(error)}`
}

/** Reads and parses a config file; relative directories in it resolve against the file's directory. */
export const load = (path: string, options: Options = {}): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const absolute = NodePath.resolve(path)
    const text = yield* Effect.tryPromise({
      try: () => NodeFs.readFile(absolute, "utf8"),
      catch: (error) => ConfigError.make(path, [{ path: "", message: `${readError(error)}: ${absolute}` }])
    })
    return yield* parse(text, {
      ...options,
      source: path,
      format: formatOf(path, text),
      baseDir: NodePath.dirname(absolute)
    })
  })
