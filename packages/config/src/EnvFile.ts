/**
 * VS Code's `envFile`: a dotenv file whose variables a stdio server starts with. It is read once
 * the config file is; the server's own `env` wins over it, and every value read is a secret.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as ToolsetDiff from "./ToolsetDiff.ts"

const line = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$/

/** `KEY=value` lines; `#` comments, blank lines and surrounding quotes as dotenv writes them. */
export const parse = (text: string): Readonly<Record<string, string>> =>
  Object.fromEntries(
    text.split(/\r?\n/).flatMap((raw) => {
      if (/^\s*(#|$)/.test(raw)) return []
      const match = line.exec(raw)
      if (match === null) return []
      const [, key = "", value = ""] = match
      const quoted = /^(["'])([\s\S]*)\1$/.exec(value)
      return [[key, quoted === null ? value.replace(/\s+#.*$/, "") : (quoted[2] ?? "")]]
    })
  )

const withEnvFile = (
  toolset: AgentConfig.ToolsetConfig,
  baseDir: string
): Effect.Effect<AgentConfig.ToolsetConfig, ConfigError.Issue> => {
  const { envFile, transport } = toolset
  if (envFile === undefined || transport._tag !== "stdio") return Effect.succeed(toolset)
  const file = NodePath.resolve(baseDir, envFile)
  return Effect.tryPromise({
    try: () => NodeFs.readFile(file, "utf8"),
    catch: () => ({ path: `${toolset.path}.envFile`, message: `Cannot read the env file ${file}` })
  }).pipe(
    Effect.map((text) => {
      const values = parse(text)
      const updated = { ...toolset, transport: { ...transport, env: { ...values, ...transport.env } } }
      return {
        ...updated,
        signature: ToolsetDiff.signature(updated),
        secrets: [...new Set([...toolset.secrets, ...Object.values(values).filter((v) => v !== "")])]
      }
    })
  )
}

/** Reads every toolset's env file, relative to the config file's folder; all failures together. */
export const apply = (
  config: AgentConfig.Config,
  baseDir: string
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    if (!config.toolsets.some((t) => t.envFile !== undefined)) return config
    const results = yield* Effect.forEach(config.toolsets, (t) => Effect.result(withEnvFile(t, baseDir)))
    const issues = results.flatMap((r) => (r._tag === "Failure" ? [r.failure] : []))
    if (issues.length > 0) return yield* Effect.fail(ConfigError.make(config.source, issues, [], config.format))
    return { ...config, toolsets: results.flatMap((r) => (r._tag === "Success" ? [r.success] : [])) }
  })
