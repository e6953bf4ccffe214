/**
 * Whether a local server's command can start here, found as `spawn` finds it: a name on the
 * toolset's PATH (its `env`'s, else ours), a path with a slash from the folder it runs in. Plain
 * `validate` runs nothing, yet a command that is not there — a typo, `npx` without Node, `uvx`
 * not installed — is the commonest first failure, so it is told before any start, as a warning:
 * the file is fine, this machine lacks the program.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentConfig } from "@toolvisor/config"
import { Redaction } from "@toolvisor/core"

/** The warnings for every toolset whose command is not there. */
export const warnings = (
  config: AgentConfig.Config,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd()
): ReadonlyArray<AgentConfig.Warning> =>
  config.toolsets.flatMap((toolset) => {
    const problem = missing(toolset, env, cwd)
    // The command may hold a secret (`command: ${API_TOKEN}`): masked as everything validate prints.
    const message =
      problem === undefined ? undefined : Redaction.make(toolset.secrets).text(`${toolset.name}: ${problem}`)
    return message === undefined ? [] : [{ path: `${toolset.path}.command`, message }]
  })

/** Why the toolset's command cannot start here, or undefined when it can (or is not ours to say). */
export const missing = (
  toolset: AgentConfig.ToolsetConfig,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd()
): string | undefined => {
  const transport = toolset.transport
  // A remote server, or a command a variable the environment lacks holds (reported as such).
  if (transport._tag !== "stdio" || toolset.unresolved !== undefined) return undefined
  const { command } = transport
  const from = transport.cwd ?? cwd
  if (command.includes("/")) {
    const path = NodePath.resolve(from, command)
    if (isExecutable(path)) return undefined
    return `"${command}" is not an executable file${path === command ? "" : ` (looked for ${path})`}`
  }
  const searched = (transport.env.PATH ?? env.PATH ?? "").split(NodePath.delimiter)
  if (searched.some((dir) => isExecutable(NodePath.resolve(from, dir, command)))) return undefined
  return `"${command}" is not found on PATH, so the toolset cannot start here; install it or give its full path`
}

const isExecutable = (path: string): boolean => {
  try {
    NodeFs.accessSync(path, NodeFs.constants.X_OK)
    return NodeFs.statSync(path).isFile()
  } catch {
    return false
  }
}
