/**
 * `toolvisor serve`: every tool of the agent's toolsets as one MCP server, over stdio or, with
 * `--http PORT`, streamable HTTP. The port is checked and bound before any toolset starts, so a
 * taken or impossible port is one line at once, not a failure after every server has started.
 * Over HTTP the status routes (dashboard, /status, /events, /metrics, probes) share the port and
 * its one gate: the same token, Host and Origin rules for `/mcp` as for `/status`. A config's tool
 * groups are served at `/mcp/<group>`, or, over stdio, one of them with `--group`. The registry is
 * built with the gateway's sessions as its sampling, elicitation and roots (`GatewayClients`).
 */
import * as NodePath from "node:path"
import { type AgentConfig, ToolGroups } from "@toolvisor/config"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Exporting from "./Exporting.ts"
import * as Gateway from "./Gateway.ts"
import * as GatewayClients from "./GatewayClients.ts"
import * as HttpListen from "./HttpListen.ts"
import * as McpHttp from "./McpHttp.ts"
import * as Open from "./Open.ts"
import * as StatusServer from "./StatusServer.ts"

export interface Options extends Open.Target, StatusServer.Flags {
  readonly sessionIdle: string
  readonly maxSessions: number
  /** Leave out `toolvisor_status`, the gateway's own tool that tells why tools are missing. */
  readonly noStatusTool: boolean
  /** Over stdio: serve only this tool group of the config's `groups`. */
  readonly group: Option.Option<string>
  readonly otlp: Option.Option<string>
  /** Items per page of the gateway's lists (`GatewayPages.defaultSize` when none). */
  readonly pageSize: Option.Option<number>
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

/** `--page-size`: at least one item per page, checked before anything starts. */
const pageSizeFlag = (pageSize: Option.Option<number>) =>
  Option.match(pageSize, {
    onNone: () => Effect.succeed(undefined),
    onSome: (size) =>
      Number.isInteger(size) && size >= 1
        ? Effect.succeed(size)
        : Effect.fail(new UsageError({ message: `--page-size: at least 1, got ${size}` }))
  })

/** The names of the served agent's toolsets: whose servers' log messages its clients hear. */
const toolsetsOf = (config: AgentConfig.Config, agent: string) => {
  const names = new Map(config.toolsets.map((t) => [t.identity, t.name]))
  return (config.agents.find((a) => a.name === agent)?.toolsets ?? []).flatMap((id) => names.get(id) ?? [])
}

/** `--group`: a group the config names, before anything starts; a usage error names the ones it has. */
const groupFlag = (group: Option.Option<string>, config: AgentConfig.Config) =>
  Option.match(group, {
    onNone: () => Effect.succeed({}),
    onSome: (name) =>
      ToolGroups.find(config, name) === undefined
        ? Effect.fail(new UsageError({ message: `--group: ${ToolGroups.unknownMessage(config, name)}` }))
        : Effect.succeed({ group: name })
  })

/**
 * Which agent is served, told when the config has several: without `--agent` it is the first,
 * and a host that finds another agent's tools missing would not know why.
 */
const agentNotice = (config: AgentConfig.Config, agent: string) => {
  const names = config.agents.map((a) => a.name)
  return names.length < 2
    ? Effect.void
    : Effect.logInfo(
        `serving agent ${agent}'s tools; the config has ${names.length} agents (${names.join(", ")}): --agent NAME serves another`
      )
}

/** The config's registry, asking the gateway's sessions what its servers ask their client. */
const open = (options: Options, clients: GatewayClients.Clients) =>
  Open.open(options).pipe(Effect.provide(clients.layer))

const command = Effect.fn("toolvisor.serve")(function* (options: Options) {
  const pageSize = yield* pageSizeFlag(options.pageSize)
  const clients = GatewayClients.make()
  /** What the gateway is told over stdio and HTTP alike. */
  const served = (registry: ToolsetRegistry.Registry, config: AgentConfig.Config): Gateway.Options => ({
    ...Open.agentOptions(options.agent),
    statusTool: !options.noStatusTool,
    groups: config.groups,
    pageSize,
    toolsets: toolsetsOf(config, registry.agent),
    clients
  })
  if (Option.isNone(options.http)) {
    const { registry, config } = yield* open(options, clients)
    const group = yield* groupFlag(options.group, config)
    yield* agentNotice(config, registry.agent)
    return yield* Gateway.serve(registry, { ...served(registry, config), ...group })
  }
  if (Option.isSome(options.group)) {
    return yield* new UsageError({
      message: "--group is for stdio; over --http a host picks a tool group by its URL path, /mcp/<group>"
    })
  }
  const port = yield* HttpListen.checkPort(options.http.value)
  const sessions = yield* sessionLimits(options)
  const gate = yield* StatusServer.gate(options, McpHttp.endpoint)
  const { registry, config, path } = yield* open(options, clients)
  yield* agentNotice(config, registry.agent)
  const routes = yield* StatusServer.handler(registry, gate, {
    required: StatusServer.required(config),
    config: NodePath.basename(path),
    ...Open.agentOptions(options.agent)
  })
  return yield* Gateway.serve(registry, {
    ...served(registry, config),
    http: { port, host: options.host, routes, gate, sessions }
  })
})
