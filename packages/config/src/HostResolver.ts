/**
 * Resolves an MCP host's server map (any of the formats in `HostConfig.ts`) into the resolved
 * model: one agent, `default`, each server named and prefixed by its key. What each host means by
 * its own fields is decided here: Gemini's `url` is SSE, Cline's `timeout` is seconds, a
 * disabled-tools list is a deny list.
 */
import type { Policy } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as ConfigError from "./ConfigError.ts"
import * as HostConfig from "./HostConfig.ts"
import * as Declaration from "./internal/Declaration.ts"
import * as Resolver from "./Resolver.ts"

/** Which transport a host server uses: `type` (or Cline's `transportType`), else Gemini's `httpUrl`. */
const hostTransport = (server: HostConfig.McpServer, format: HostConfig.Format): "stdio" | "http" | "sse" => {
  if (server.command !== undefined) return "stdio"
  const type = server.type ?? server.transportType
  if (type === "sse") return "sse"
  if (type !== undefined) return "http"
  if (server.httpUrl !== undefined) return "http"
  // Gemini CLI reads a bare `url` as SSE; every other host defaults to streamable HTTP.
  return usesMilliseconds(format) && server.url !== undefined ? "sse" : "http"
}

/** Gemini CLI and its fork Qwen Code: `url` is SSE and `timeout` is in milliseconds. */
const usesMilliseconds = (format: HostConfig.Format): boolean =>
  format.name.startsWith("Gemini") || format.name.startsWith("Qwen")

/** Cline writes seconds, Gemini CLI milliseconds: both become `call_timeout`. */
const callTimeout = (server: HostConfig.McpServer, format: HostConfig.Format): Duration.Duration | undefined => {
  if (server.timeout === undefined || server.timeout <= 0) return undefined
  return usesMilliseconds(format) ? Duration.millis(server.timeout) : Duration.seconds(server.timeout)
}

/** MCP clients accept tool names of letters, digits, `_` and `-`: a key like `github.com/x/y` is made one. */
const prefixOf = (key: string): string => key.replace(/[^A-Za-z0-9_-]+/g, "_")

/**
 * `"command": "uv run server.py"` with no `args` works in hosts that start servers through a
 * shell; Toolvisor starts the program directly, so the words are split here, the way a shell
 * would split them when nothing is quoted. A path (`/Applications/My App/server`) is left whole.
 */
const splitCommand = (command: string, args: ReadonlyArray<string> | undefined) => {
  const words = command.trim().split(/\s+/)
  const [program = command, ...rest] = words
  const plain = !/["'\\$`]/.test(command) && !/^[./~]/.test(command)
  const split = (args === undefined || args.length === 0) && rest.length > 0 && plain
  return split ? { command: program, args: rest } : { command, args }
}

/**
 * Hosts name tools as their server does; the runtime filters the exposed names, which carry the
 * server's key as a prefix. `*` stays as written: it means every tool.
 */
const exposed = (prefix: string, names: ReadonlyArray<string> | undefined) =>
  names?.map((name) => (name === "*" ? name : `${prefix}_${name}`))

const hostServer = (
  key: string,
  server: HostConfig.McpServer,
  path: string,
  format: HostConfig.Format,
  filter: HostConfig.ServerFilter,
  context: Declaration.Context
): Declaration.Outcome => {
  if (server.disabled === true) return Declaration.skipped(path, "mcp", "disabled: true")
  if (server.enabled === false) return Declaration.skipped(path, "mcp", "enabled: false")
  if (filter.allowed !== undefined && !filter.allowed.includes(key)) {
    return Declaration.skipped(path, "mcp", "not listed in mcp.allowed")
  }
  if (filter.excluded?.includes(key) === true) return Declaration.skipped(path, "mcp", "listed in mcp.excluded")
  if (HostConfig.isExtensionServer(server)) {
    return Declaration.skipped(path, "mcp", "provided by a Zed extension, which only Zed can run")
  }
  const prefix = prefixOf(key)
  const command = typeof server.command === "object" ? server.command : undefined
  const program =
    typeof server.command === "string"
      ? splitCommand(server.command, server.args)
      : { command: command?.path, args: command?.args ?? server.args }
  const transport = hostTransport(server, format)
  const timeout = callTimeout(server, format)
  const lifecycle: Policy.Lifecycle | undefined =
    timeout === undefined || server.lifecycle?.call_timeout !== undefined
      ? server.lifecycle
      : { ...server.lifecycle, call_timeout: timeout }
  return Declaration.declare(
    {
      path,
      type: "mcp",
      name: prefix,
      ref: undefined,
      source: {
        command: program.command,
        args: program.args,
        env: { ...command?.env, ...server.env },
        cwd: server.cwd,
        url: HostConfig.urlOf(server),
        headers: server.headers,
        oauth: server.oauth,
        sse: transport === "sse"
      },
      urlPath: `${path}.url`,
      headersHelper: server.headersHelper,
      envFile: server.envFile,
      fileTypes: undefined,
      tools: exposed(prefix, server.tools ?? server.includeTools),
      deny: exposed(prefix, [...(server.excludeTools ?? []), ...(server.disabledTools ?? [])]),
      lifecycle,
      lazy: server.lazy,
      secrets: Declaration.secretsAt(context, path),
      unresolved: Declaration.unresolvedAt(context, path)
    },
    context
  )
}

/** Resolves a host's server map: one agent, `default`, each server named (and prefixed) by its key. */
export const fromHostServers = (
  servers: Readonly<Record<string, HostConfig.McpServer>>,
  at: string,
  format: HostConfig.Format,
  context: Declaration.Context,
  filter: HostConfig.ServerFilter = {}
): Declaration.Resolution =>
  Declaration.assemble(context.source, [
    {
      name: Resolver.defaultAgent,
      outcomes: Object.entries(servers).map(([key, server]) =>
        hostServer(key, server, ConfigError.childPath(at, key), format, filter, context)
      )
    }
  ])
