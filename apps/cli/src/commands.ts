/**
 * The `toolvisor` commands. Each one is a few calls into the runtime: load the config, build
 * the registry, start, then show or do one thing. No lifecycle logic lives here.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { ClusterClient, ClusterRegistry, Runner, Sealing } from "@toolvisor/cluster"
import { ConfigLoader, JsonSchema } from "@toolvisor/config"
import { Policy } from "@toolvisor/core"
import { LocalRegistry, OrphanSweep, Runtime, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import { Argument, Command, Flag } from "effect/cli"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Auth from "./Auth.ts"
import * as Gateway from "./Gateway.ts"
import * as JsonLines from "./JsonLines.ts"
import * as LiveView from "./LiveView.ts"
import * as Output from "./Output.ts"

/** A failure the user caused (bad arguments, a missing file): exit 2, one clear line. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The command ran but its outcome is a failure (a tool error, a required toolset down): exit 1. */
export class Failure extends Schema.TaggedError<Failure>()("Failure", { message: Schema.String }) {}

const bundledExample = NodePath.resolve(import.meta.dirname, "../../../examples/agent.yaml")

/** CONFIG if given; else ./agent.yaml if present; else the bundled example. */
const configPath = (given: Option.Option<string>): string =>
  Option.getOrElse(given, () => (NodeFs.existsSync("agent.yaml") ? NodePath.resolve("agent.yaml") : bundledExample))

const configArgument = Argument.String("config").pipe(
  Argument.withDescription(
    "Agent config: docker-agent YAML or mcpServers JSON (default ./agent.yaml, else the bundled example)"
  ),
  Argument.optional
)
const agentFlag = Flag.String("agent").pipe(Flag.withDescription("The agent whose toolsets to use"), Flag.optional)
const jsonFlag = Flag.Boolean("json").pipe(Flag.withDescription("Machine-readable output"), Flag.withDefault(false))
const timeoutFlag = Flag.String("timeout").pipe(
  Flag.withDescription("How long to wait for the toolsets to settle, e.g. 30s"),
  Flag.withDefault("30s")
)

const clusterFlag = Flag.String("cluster").pipe(
  Flag.withDescription(
    "PostgreSQL URL of a Toolvisor cluster: run the toolsets on its runners instead of in this process"
  ),
  Flag.optional
)

/** The cluster key from the environment, when set: clients seal secrets with it, runners open them. */
const sealing = () => {
  const key = Sealing.fromEnv()
  return key === undefined ? {} : { key }
}

const parseDuration = (text: string, flag = "--timeout") =>
  Schema.decodeUnknownEffect(Policy.DurationString)(text).pipe(
    Effect.mapError(() => new UsageError({ message: `${flag}: expected a duration like 30s, got "${text}"` }))
  )

/**
 * Loads the config and builds its registry in the current scope; nothing is started yet. With a
 * cluster URL the registry joins the cluster as a client and its toolsets run on the runners.
 */
const open = (config: Option.Option<string>, agent: Option.Option<string>, cluster: Option.Option<string>) =>
  Effect.gen(function* () {
    const path = configPath(config)
    const options = Option.match(agent, { onNone: () => ({}), onSome: (name) => ({ agent: name }) })
    const loaded = yield* ConfigLoader.load(path, options)
    for (const skipped of loaded.skipped) yield* Effect.logWarning(`${skipped.path}: ${skipped.reason}`)
    const registry = yield* Option.match(cluster, {
      onNone: () => Effect.andThen(OrphanSweep.start, LocalRegistry.make(loaded, options)),
      onSome: (postgres) =>
        Effect.flatMap(Layer.build(ClusterClient.layer({ postgres })), (context) =>
          ClusterRegistry.make(loaded, { ...options, ...sealing() }).pipe(Effect.provideContext(context))
        )
    })
    return { path, config: loaded, registry }
  })

/** Starts everything and waits until no toolset is starting or restarting, at most `timeout`. */
const settle = (registry: ToolsetRegistry.Registry, timeout: Duration.Duration) =>
  Effect.gen(function* () {
    const started = yield* Effect.result(registry.start)
    yield* registry.status.pipe(
      Stream.filter((board) => board.every((s) => s.state !== "Starting" && s.state !== "Restarting")),
      Stream.runHead,
      Effect.timeoutOption(timeout)
    )
    return started
  })

const run = Command.make(
  "run",
  {
    config: configArgument,
    agent: agentFlag,
    cluster: clusterFlag,
    json: jsonFlag,
    watch: Flag.Boolean("watch").pipe(
      Flag.withDescription("Reload when the config file changes"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("toolvisor.run")(function* ({ config, agent, cluster, json, watch }) {
    const { path, registry } = yield* open(config, agent, cluster)
    const loadAgain = ConfigLoader.load(
      path,
      Option.match(agent, { onNone: () => ({}), onSome: (a) => ({ agent: a }) })
    )
    if (watch) yield* Runtime.watch(path, loadAgain, registry)
    if (json) {
      yield* JsonLines.run(registry)
    } else if (process.stdout.isTTY && process.stdin.isTTY) {
      yield* Effect.forkScoped(Effect.ignore(registry.start))
      return yield* LiveView.run(registry)
    } else {
      yield* registry.events.pipe(
        Stream.runForEach((e) => Console.log(Output.transitionLine(e))),
        Effect.forkScoped({ startImmediately: true })
      )
    }
    const started = yield* Effect.result(registry.start)
    if (started._tag === "Failure") yield* Effect.logError(started.failure.message)
    return yield* Effect.never
  })
).pipe(
  Command.withDescription("Start the agent's toolsets and keep them supervised until Ctrl-C or SIGTERM"),
  Command.withExamples([
    { command: "toolvisor run examples/agent.yaml", description: "live table on a terminal" },
    { command: "toolvisor run agent.yaml --json", description: "JSON lines out, commands in on stdin" }
  ])
)

const status = Command.make(
  "status",
  { config: configArgument, agent: agentFlag, cluster: clusterFlag, json: jsonFlag, timeout: timeoutFlag },
  Effect.fn("toolvisor.status")(function* ({ config, agent, cluster, json, timeout }) {
    const wait = yield* parseDuration(timeout)
    const { config: loaded, registry } = yield* open(config, agent, cluster)
    yield* settle(registry, wait)
    const board = yield* registry.snapshot
    yield* Console.log(json ? JSON.stringify(board.map(Output.statusJson)) : Output.table(board, { colour: false }))
    const required = new Set(loaded.toolsets.filter((t) => t.policy.required).map((t) => t.name))
    const down = board.filter((s) => required.has(s.name) && s.state !== "Ready")
    if (down.length > 0) {
      return yield* new Failure({ message: `required toolset(s) not Ready: ${down.map((s) => s.name).join(", ")}` })
    }
  })
).pipe(
  Command.withDescription(
    "Start, wait until every toolset settles, print the table, stop; exit 1 if a required one is down"
  ),
  Command.withExamples([{ command: "toolvisor status agent.yaml --json", description: "status as a JSON array" }])
)

const tools = Command.make(
  "tools",
  { config: configArgument, agent: agentFlag, cluster: clusterFlag, json: jsonFlag, timeout: timeoutFlag },
  Effect.fn("toolvisor.tools")(function* ({ config, agent, cluster, json, timeout }) {
    const { registry } = yield* open(config, agent, cluster)
    yield* settle(registry, yield* parseDuration(timeout))
    const catalog = yield* registry.catalog()
    yield* Console.log(json ? JSON.stringify(Output.catalogJson(catalog)) : Output.catalogText(catalog))
  })
).pipe(Command.withDescription("List the agent's tools"))

const call = Command.make(
  "call",
  {
    operands: Argument.String("operands").pipe(
      Argument.withDescription("[CONFIG] TOOL [ARGS_JSON]"),
      Argument.variadic({ min: 1, max: 3 })
    ),
    agent: agentFlag,
    cluster: clusterFlag,
    json: jsonFlag,
    timeout: timeoutFlag
  },
  Effect.fn("toolvisor.call")(function* ({ operands, agent, cluster, json, timeout }) {
    const [config, tool, rawArgs] = yield* splitCallOperands(operands)
    const args = yield* parseArgs(rawArgs)
    const { registry } = yield* open(config, agent, cluster)
    yield* settle(registry, yield* parseDuration(timeout))
    const result = yield* registry.callTool(tool, args)
    yield* Console.log(json ? JSON.stringify(result) : Output.resultText(result))
    if (result.isError === true) return yield* new Failure({ message: `${tool} reported an error` })
  })
).pipe(
  Command.withDescription("Call one tool and print its result; exit 1 if the tool reports an error"),
  Command.withExamples([{ command: `toolvisor call agent.yaml everything_echo '{"message":"hi"}'`, description: "" }])
)

/** `call [CONFIG] TOOL [ARGS_JSON]`: the first operand is the config when it names a file that exists. */
const splitCallOperands = (operands: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const [first = "", ...rest] = operands
    const isConfig = operands.length > 1 && /\.(ya?ml|json)$/i.test(first) && NodeFs.existsSync(first)
    const [tool, args] = isConfig ? rest : operands
    if (tool === undefined) return Effect.fail(new UsageError({ message: "call: missing TOOL" }))
    if (!isConfig && operands.length > 2) {
      return Effect.fail(new UsageError({ message: `call: config file not found: ${first}` }))
    }
    return Effect.succeed([isConfig ? Option.some(first) : Option.none<string>(), tool, args] as const)
  })

const parseArgs = (raw: string | undefined) =>
  Effect.try({
    try: (): { readonly [key: string]: unknown } => {
      const parsed: unknown = raw === undefined ? {} : JSON.parse(raw)
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object")
      return Object.fromEntries(Object.entries(parsed))
    },
    catch: () => new UsageError({ message: `call: ARGS_JSON must be a JSON object, got ${raw}` })
  })

const validate = Command.make(
  "validate",
  { config: Argument.String("config").pipe(Argument.withDescription("The config file to check")) },
  Effect.fn("toolvisor.validate")(function* ({ config }) {
    const loaded = yield* ConfigLoader.load(config)
    for (const skipped of loaded.skipped) yield* Console.error(`warning: ${skipped.path}: ${skipped.reason}`)
    yield* Console.log(
      `${config}: valid — ${loaded.agents.length} agent(s), ${loaded.toolsets.length} toolset(s)` +
        (loaded.skipped.length > 0 ? `, ${loaded.skipped.length} skipped` : "")
    )
  })
).pipe(Command.withDescription("Check a config; print every problem as path: message (exit 2 if any)"))

const schema = Command.make("schema", {}, () => Console.log(JSON.stringify(JsonSchema.make(), null, 2))).pipe(
  Command.withDescription("Print the config's JSON Schema (for editor completion)")
)

const serve = Command.make(
  "serve",
  {
    config: configArgument,
    agent: agentFlag,
    cluster: clusterFlag,
    http: Flag.Int("http").pipe(
      Flag.withDescription("Serve streamable HTTP on this port instead of stdio"),
      Flag.optional
    ),
    host: Flag.String("host").pipe(Flag.withDescription("Address to bind with --http"), Flag.withDefault("127.0.0.1"))
  },
  Effect.fn("toolvisor.serve")(function* ({ config, agent, cluster, http, host }) {
    const { registry } = yield* open(config, agent, cluster)
    yield* Effect.forkScoped(Effect.ignore(registry.start))
    return yield* Gateway.serve(registry, {
      ...Option.match(agent, { onNone: () => ({}), onSome: (name) => ({ agent: name }) }),
      ...Option.match(http, { onNone: () => ({}), onSome: (port) => ({ http: { port, host } }) })
    })
  })
).pipe(
  Command.withDescription("Serve every tool of every toolset as one MCP server (stdio, or HTTP with --http)"),
  Command.withExamples([{ command: "toolvisor serve agent.yaml --http 8808", description: "" }])
)

const durationFlag = (name: string, fallback: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.withDefault(fallback))

const runner = Command.make(
  "runner",
  {
    postgres: Flag.String("postgres").pipe(
      Flag.withDescription(
        "PostgreSQL URL shared by every member of the cluster (runner registry, shard locks, call ledger)"
      )
    ),
    host: Flag.String("host").pipe(
      Flag.withDescription("Address the other members reach this runner at (also its identity)"),
      Flag.withDefault("127.0.0.1")
    ),
    port: Flag.Int("port").pipe(Flag.withDescription("Port for the other members"), Flag.withDefault(34431)),
    listenHost: Flag.String("listen-host").pipe(
      Flag.withDescription("Address to bind when it differs from --host (e.g. 0.0.0.0)"),
      Flag.optional
    ),
    lease: durationFlag(
      "lease",
      "10s",
      "How long a runner holds its shards without renewing: the failover time after a crash"
    ),
    leaseRefresh: durationFlag("lease-refresh", "3s", "How often the lease is renewed"),
    healthCheck: durationFlag("health-check", "5s", "How often runners ping each other"),
    assignmentsRefresh: durationFlag("assignments-refresh", "1s", "How often shard ownership is re-read"),
    messagePoll: durationFlag("message-poll", "2s", "How often persisted start requests are polled"),
    shutdownGrace: durationFlag("shutdown-grace", "10s", "How long shutdown waits for toolsets before moving them")
  },
  Effect.fn("toolvisor.runner")(function* (flags) {
    const timers = {
      lease: yield* parseDuration(flags.lease, "--lease"),
      leaseRefresh: yield* parseDuration(flags.leaseRefresh, "--lease-refresh"),
      healthCheck: yield* parseDuration(flags.healthCheck, "--health-check"),
      assignmentsRefresh: yield* parseDuration(flags.assignmentsRefresh, "--assignments-refresh"),
      messagePoll: yield* parseDuration(flags.messagePoll, "--message-poll"),
      shutdownGrace: yield* parseDuration(flags.shutdownGrace, "--shutdown-grace")
    }
    yield* Runner.start({
      postgres: flags.postgres,
      host: flags.host,
      port: flags.port,
      timers,
      ...sealing(),
      ...Option.match(flags.listenHost, { onNone: () => ({}), onSome: (listenHost) => ({ listenHost }) })
    })
    yield* Console.log(`runner ${flags.host}:${flags.port} is up (pid ${process.pid})`)
    return yield* Effect.never
  })
).pipe(
  Command.withDescription("Run a cluster runner that hosts toolsets for `--cluster` clients, until SIGTERM"),
  Command.withExamples([
    {
      command: "toolvisor runner --postgres postgres://toolvisor@127.0.0.1/toolvisor --port 34431",
      description: "then: toolvisor run agent.yaml --cluster postgres://toolvisor@127.0.0.1/toolvisor"
    }
  ])
)

export const toolvisor = Command.make("toolvisor").pipe(
  Command.withDescription("Supervise an AI agent's MCP and LSP toolsets"),
  Command.withSubcommands([
    run,
    status,
    tools,
    call,
    validate,
    schema,
    serve,
    runner,
    Auth.make({ configArgument, agentFlag, configPath, UsageError })
  ])
)
