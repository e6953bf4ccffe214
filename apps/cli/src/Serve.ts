/**
 * `toolvisor serve`: every tool of the agent's toolsets as one MCP server, over stdio or, with
 * `--http PORT`, streamable HTTP. The port is checked and bound before any toolset starts, so a
 * taken or impossible port is one line at once, not a failure after every server has started.
 * Over HTTP the status routes (dashboard, /status, /events, /metrics, probes) share the port and
 * its one gate: the same token, Host and Origin rules for `/mcp` as for `/status`.
 */
import * as NodePath from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Exporting from "./Exporting.ts"
import * as Gateway from "./Gateway.ts"
import * as HttpListen from "./HttpListen.ts"
import * as McpHttp from "./McpHttp.ts"
import * as Open from "./Open.ts"
import * as StatusServer from "./StatusServer.ts"

export interface Options extends Open.Target, StatusServer.Flags {
  readonly sessionIdle: string
  readonly maxSessions: number
  /** Leave out `toolvisor_status`, the gateway's own tool that tells why tools are missing. */
  readonly noStatusTool: boolean
  readonly otlp: Option.Option<string>
}

export const run = (options: Options) => Exporting.withOtlp(options.otlp)(command(options))

/** `--session-idle` and `--max-sessions`, checked before anything starts. */
const sessionLimits = (options: Options) =>
  Effect.gen(function* () {
    const idle = yield* DurationFlag.parse(options.sessionIdle, "--session-idle")
    if (Duration.toMillis(idle) <= 0) {
      return yield* new UsageError({ message: `--session-idle: longer than 0, got ${options.sessionIdle}` })
    }
    if (!Number.isInteger(options.maxSessions) || options.maxSessions < 1) {
      return yield* new UsageError({ message: `--max-sessions: at least 1, got ${options.maxSessions}` })
    }
    return { idle, max: options.maxSessions }
  })

const command = Effect.fn("toolvisor.serve")(function* (options: Options) {
  if (Option.isNone(options.http)) {
    const { registry } = yield* Open.open(options)
    return yield* Gateway.serve(registry, { ...Open.agentOptions(options.agent), statusTool: !options.noStatusTool })
  }
  const port = yield* HttpListen.checkPort(options.http.value)
  const sessions = yield* sessionLimits(options)
  const gate = yield* StatusServer.gate(options, McpHttp.endpoint)
  const { registry, config, path } = yield* Open.open(options)
  const routes = yield* StatusServer.handler(registry, gate, {
    required: StatusServer.required(config),
    config: NodePath.basename(path),
    ...Open.agentOptions(options.agent)
  })
  return yield* Gateway.serve(registry, {
    ...Open.agentOptions(options.agent),
    statusTool: !options.noStatusTool,
    http: { port, host: options.host, routes, gate, sessions }
  })
})
