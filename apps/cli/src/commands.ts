/**
 * The `toolvisor` command tree: names, arguments, flags and help. Each command's work lives in
 * its own module, loaded only when that command runs, so `--version` and `--help` load nothing
 * but effect/cli, and only `--cluster` and `runner` load the cluster and its SQL driver.
 */

import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as ClusterFlags from "./ClusterFlags.ts"
import * as Flags from "./Flags.ts"
import * as SignalExit from "./SignalExit.ts"

/** Runs `f` on a module imported on first use. */
const lazy = <M, A, E, R>(load: () => Promise<M>, f: (module: M) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.promise(load), f)

const target = {
  config: Flags.config,
  input: Flags.input,
  agent: Flags.agent,
  cluster: Flags.cluster,
  ...ClusterFlags.member
}

/** What the commands that act on one thing (`describe`, `call`, `prompt`, `read`) take besides their operands. */
const request = {
  input: Flags.input,
  agent: Flags.agent,
  cluster: Flags.cluster,
  ...ClusterFlags.member,
  json: Flags.json,
  timeout: Flags.timeout
}

const run = Command.make(
  "run",
  {
    ...target,
    json: Flags.json,
    watch: Flag.Boolean("watch").pipe(
      Flag.withDescription("Reload when the config file changes"),
      Flag.withDefault(false)
    ),
    http: Flag.Int("http").pipe(
      Flag.withDescription("Serve the status page, /status, /events, /metrics and health probes on this port"),
      Flag.optional
    ),
    ...Flags.httpAccess,
    otlp: Flags.otlp
  },
  (options) =>
    lazy(
      () => import("./Run.ts"),
      (Run) => SignalExit.runsUntilSignal(Run.run(options))
    )
).pipe(
  Command.withDescription(
    "Start the agent's toolsets and keep them supervised until Ctrl-C, SIGTERM or (--json) the end of stdin"
  ),
  Command.withExamples([
    { command: "toolvisor run examples/agent.yaml", description: "live table on a terminal" },
    { command: "toolvisor run agent.yaml --json", description: "JSON lines out, commands in on stdin" },
    { command: "toolvisor run agent.yaml --http 8809", description: "dashboard at http://127.0.0.1:8809/" }
  ])
)

const status = Command.make("status", { ...target, json: Flags.json, timeout: Flags.timeout }, (options) =>
  lazy(
    () => import("./Status.ts"),
    (Status) => Status.run(options)
  )
).pipe(
  Command.withDescription(
    "Start, wait until every toolset settles (at most --timeout), print the table, stop; exit 1 if a required toolset or every toolset is down"
  ),
  Command.withExamples([{ command: "toolvisor status agent.yaml --json", description: "status as a JSON array" }])
)

const tools = Command.make("tools", { ...target, json: Flags.json, timeout: Flags.timeout }, (options) =>
  lazy(
    () => import("./Tools.ts"),
    (Tools) => Tools.list(options)
  )
).pipe(Command.withDescription("List the agent's tools (--json: with input schemas and annotations)"))

const describe = Command.make(
  "describe",
  {
    operands: Flags.operands("[CONFIG] NAME (a tool's name as `tools` lists it, or a prompt's as `prompts` does)", 2),
    ...request
  },
  (options) =>
    lazy(
      () => import("./Tools.ts"),
      (Tools) => Tools.describe(options)
    )
).pipe(
  Command.withDescription(
    "Show one tool (or, when no tool has the name, one prompt): its description, its arguments and how to call it"
  ),
  Command.withExamples([{ command: "toolvisor describe agent.yaml everything_echo", description: "" }])
)

const call = Command.make(
  "call",
  {
    operands: Flags.operands("[CONFIG] TOOL [ARGS_JSON]", 3),
    ...request
  },
  (options) =>
    lazy(
      () => import("./Call.ts"),
      (Call) => Call.run(options)
    )
).pipe(
  Command.withDescription(
    "Call one tool and print its result; exit 1 if the call fails or the tool reports an error (--json: the error as JSON). The servers' log lines go to stderr, and on a terminal a progress bar while the tool reports progress"
  ),
  Command.withExamples([{ command: `toolvisor call agent.yaml everything_echo '{"message":"hi"}'`, description: "" }])
)

const prompts = Command.make("prompts", { ...target, json: Flags.json, timeout: Flags.timeout }, (options) =>
  lazy(
    () => import("./Prompts.ts"),
    (Prompts) => Prompts.list(options)
  )
).pipe(
  Command.withDescription(
    "List the agent's MCP prompts, named like its tools (--json: with their arguments, as an MCP client sees them)"
  )
)

const prompt = Command.make(
  "prompt",
  {
    operands: Flags.operands("[CONFIG] NAME [ARGS…] (key=value words, or one JSON object of strings)", 66),
    ...request
  },
  (options) =>
    lazy(
      () => import("./Prompts.ts"),
      (Prompts) => Prompts.get(options)
    )
).pipe(
  Command.withDescription("Get one prompt with its arguments and print its messages (--json: the result as JSON)"),
  Command.withExamples([
    { command: "toolvisor prompt agent.yaml args-prompt city=Lyon", description: "" },
    { command: `toolvisor prompt agent.yaml args-prompt '{"city":"Lyon"}'`, description: "" }
  ])
)

const resources = Command.make("resources", { ...target, json: Flags.json, timeout: Flags.timeout }, (options) =>
  lazy(
    () => import("./Resources.ts"),
    (Resources) => Resources.list(options)
  )
).pipe(Command.withDescription("List the agent's MCP resources and resource templates, with the toolset of each"))

const read = Command.make(
  "read",
  {
    operands: Flags.operands("[CONFIG] URI (a resource's URI, as `resources` lists it or a template fits)", 2),
    ...request,
    out: Flag.String("out").pipe(
      Flag.withDescription("Write the contents (a blob's bytes, decoded) to this file instead of stdout"),
      Flag.optional
    )
  },
  (options) =>
    lazy(
      () => import("./Resources.ts"),
      (Resources) => Resources.read(options)
    )
).pipe(
  Command.withDescription(
    "Read one resource: its text to stdout; a blob is named by MIME type and size, its bytes written only with --out FILE"
  ),
  Command.withExamples([
    { command: "toolvisor read agent.yaml demo://resource/static/document/architecture.md", description: "" },
    { command: "toolvisor read agent.yaml demo://resource/dynamic/blob/1 --out blob.bin", description: "" }
  ])
)

const validate = Command.make(
  "validate",
  {
    config: Argument.String("config").pipe(Argument.withDescription("The config file to check")),
    json: Flags.json,
    check: Flag.Boolean("check").pipe(
      Flag.withDescription(
        "Also start each toolset, list its tools and stop it (exit 1 if one does not start); warns of allow-list entries that match no tool and of tools two toolsets both offer"
      ),
      Flag.withDefault(false)
    ),
    input: Flags.input
  },
  (options) =>
    lazy(
      () => import("./Validate.ts"),
      (Validate) => Validate.run(options)
    )
).pipe(
  Command.withDescription(
    "Check a config and print what was understood; or the file, its format and every problem as path: message, one a line (exit 2)"
  ),
  Command.withExamples([
    { command: "toolvisor validate .vscode/mcp.json --input memory-file=/tmp/memory.jsonl", description: "" },
    { command: "toolvisor validate agent.yaml --check", description: "also start each toolset once" }
  ])
)

const schema = Command.make(
  "schema",
  {
    format: Flag.String("format").pipe(
      Flag.withDescription(
        "Which file format: docker-agent (default), mcp-servers, vscode, vscode-settings, zed or plugin"
      ),
      Flag.withDefault("docker-agent")
    )
  },
  ({ format }) =>
    lazy(
      () => import("./Validate.ts"),
      (Validate) => Validate.schema(format)
    )
).pipe(Command.withDescription("Print the JSON Schema of a config format (for editor completion)"))

const auth = Command.make(
  "auth",
  {
    operands: Flags.operands("[CONFIG] NAME (the remote MCP toolset to log in to)", 2),
    input: Flags.input,
    agent: Flags.agent,
    logout: Flag.Boolean("logout").pipe(
      Flag.withDescription("Forget the stored login instead"),
      Flag.withDefault(false)
    ),
    noBrowser: Flag.Boolean("no-browser").pipe(
      Flag.withDescription("Only print the login URL (for a browser on another machine)"),
      Flag.withDefault(false)
    )
  },
  (options) =>
    lazy(
      () => import("./Auth.ts"),
      (Auth) => Auth.run(options)
    )
).pipe(
  Command.withDescription("Log in to a remote MCP server over OAuth and store the tokens (0600) for later runs"),
  Command.withExamples([
    { command: "toolvisor auth agent.yaml linear", description: "opens the browser, then connects" },
    { command: "toolvisor auth --logout agent.yaml linear", description: "forgets the stored tokens" }
  ])
)

const stop = Command.make(
  "stop",
  {
    operands: Flags.operands("[CONFIG] [TOOLSET…] (default: every toolset of the agent)", Number.MAX_SAFE_INTEGER, 0),
    input: Flags.input,
    agent: Flags.agent,
    cluster: Flags.cluster,
    ...ClusterFlags.member
  },
  (options) =>
    lazy(
      () => import("./Stop.ts"),
      (Stop) => Stop.run(options)
    )
).pipe(
  Command.withDescription(
    "Stop toolsets a cluster runs (--cluster), for every client: the config's, or the ones named. They outlive the clients that started them until stopped"
  ),
  Command.withExamples([
    { command: "toolvisor stop agent.yaml --cluster $PG", description: "every toolset of the config" },
    { command: "toolvisor stop agent.yaml linear --cluster $PG", description: "one of them" }
  ])
)

const serve = Command.make(
  "serve",
  {
    ...target,
    http: Flag.Int("http").pipe(
      Flag.withDescription("Serve streamable HTTP on this port instead of stdio (/mcp, and the status routes)"),
      Flag.optional
    ),
    ...Flags.httpAccess,
    sessionIdle: Flag.String("session-idle").pipe(
      Flag.withDescription("Close an MCP session over HTTP that no client has used for this long (default 10m)"),
      Flag.withDefault("10m")
    ),
    maxSessions: Flag.Int("max-sessions").pipe(
      Flag.withDescription(
        "The most MCP sessions over HTTP open at once, 1000 by default; an initialize past it is refused (503)"
      ),
      Flag.withDefault(1000)
    ),
    group: Flag.String("group").pipe(
      Flag.withDescription(
        "Serve only this tool group of the config's groups: (stdio; over HTTP a host connects to /mcp/<group>)"
      ),
      Flag.optional
    ),
    noStatusTool: Flag.Boolean("no-status-tool").pipe(
      Flag.withDescription("Do not offer toolvisor_status, the read-only tool that tells a host why tools are missing"),
      Flag.withDefault(false)
    ),
    pageSize: Flag.Int("page-size").pipe(
      Flag.withDescription(
        "Items per page of tools/list, prompts/list and resources/list (1000 by default: many hosts read one page only)"
      ),
      Flag.optional
    ),
    otlp: Flags.otlp
  },
  (options) =>
    lazy(
      () => import("./Serve.ts"),
      (Serve) => SignalExit.runsUntilSignal(Serve.run(options))
    )
).pipe(
  Command.withDescription("Serve every tool of every toolset as one MCP server (stdio, or HTTP with --http)"),
  Command.withExamples([
    { command: "toolvisor serve agent.yaml --http 8808", description: "MCP at http://127.0.0.1:8808/mcp" },
    {
      command:
        "toolvisor serve agent.yaml --http 8808 --host 0.0.0.0 --jwt-issuer https://idp.example --jwt-audience https://tools.example/mcp",
      description: "behind your identity provider"
    }
  ])
)

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
    lanePort: Flag.Int("lane-port").pipe(
      Flag.withDescription(
        "Port clients send tool calls to directly, on the same host; 0 takes a free one and tells the clients"
      ),
      Flag.withDefault(0)
    ),
    ...ClusterFlags.runner
  },
  (options) =>
    lazy(
      () => import("./Runner.ts"),
      (Runner) => SignalExit.runsUntilSignal(Runner.run(options))
    )
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
    describe,
    call,
    prompts,
    prompt,
    resources,
    read,
    validate,
    schema,
    serve,
    auth,
    runner,
    stop
  ])
)
