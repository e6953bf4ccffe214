/**
 * Claude Code's `headersHelper`: a shell command whose standard output is a JSON object of HTTP
 * headers, for credentials that must not sit in the file. It runs once the file is read, in the
 * file's folder; what it prints is added to the server's headers (winning over the file's own)
 * and treated as secrets.
 */
import * as NodeChildProcess from "node:child_process"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"
import * as ToolsetDiff from "./ToolsetDiff.ts"

/** A helper that hangs must not hang the load. */
const timeoutMs = 10_000

const run = (command: string, cwd: string, env: NodeJS.ProcessEnv) =>
  Effect.callback<string, string>((resume) => {
    const child = NodeChildProcess.execFile(
      "/bin/sh",
      ["-c", command],
      { cwd, env, timeout: timeoutMs, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed(stdout))
        const tail = stderr.trim().split("\n").slice(-3).join(" ")
        resume(Effect.fail(error.killed ? `timed out after ${timeoutMs / 1000}s` : tail || error.message))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const headersFrom = (stdout: string): Readonly<Record<string, string>> | undefined => {
  try {
    const value: unknown = JSON.parse(stdout)
    if (!Predicate.isObject(value)) return undefined
    const entries = Object.entries(value).flatMap(([k, v]) => (typeof v === "string" ? [[k, v] as const] : []))
    return entries.length === Object.keys(value).length ? Object.fromEntries(entries) : undefined
  } catch {
    return undefined
  }
}

const withHeaders = (
  toolset: AgentConfig.ToolsetConfig,
  cwd: string,
  env: NodeJS.ProcessEnv
): Effect.Effect<AgentConfig.ToolsetConfig, ConfigError.Issue> => {
  const { headersHelper, transport } = toolset
  if (headersHelper === undefined || transport._tag === "stdio") return Effect.succeed(toolset)
  const path = `${toolset.path}.headersHelper`
  return run(headersHelper, cwd, env).pipe(
    Effect.mapError((reason) => ({ path, message: `headersHelper failed: ${reason}` })),
    Effect.flatMap((stdout) => {
      const extra = headersFrom(stdout)
      if (extra === undefined) {
        return Effect.fail({ path, message: "headersHelper must print a JSON object of header names to values" })
      }
      const updated = { ...toolset, transport: { ...transport, headers: { ...transport.headers, ...extra } } }
      return Effect.succeed({
        ...updated,
        signature: ToolsetDiff.signature(updated),
        secrets: [...new Set([...toolset.secrets, ...Object.values(extra)])]
      })
    })
  )
}

/** Runs every toolset's helper, in the config file's folder; all failures are reported together. */
export const apply = (
  config: AgentConfig.Config,
  cwd: string
): Effect.Effect<AgentConfig.Config, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    if (!config.toolsets.some((t) => t.headersHelper !== undefined)) return config
    const env = { ...process.env, CLAUDE_PLUGIN_ROOT: process.env.CLAUDE_PLUGIN_ROOT ?? cwd }
    const results = yield* Effect.forEach(config.toolsets, (t) => Effect.result(withHeaders(t, cwd, env)))
    const issues = results.flatMap((r) => (r._tag === "Failure" ? [r.failure] : []))
    if (issues.length > 0) return yield* Effect.fail(ConfigError.make(config.source, issues, [], config.format))
    return { ...config, toolsets: results.flatMap((r) => (r._tag === "Success" ? [r.success] : [])) }
  })
