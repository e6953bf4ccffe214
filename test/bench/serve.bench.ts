/**
 * `toolvisor serve` benchmark (issue 6), in one run, for two kinds of backend:
 *   1. gateway overhead, backend on stdio (the MCP fixture server): p50/p99 of sequential
 *      `tools/call` of the fixture's `echo` (a) directly, with a raw SDK `Client` +
 *      `StdioClientTransport` on the fixture (tool `echo`); (b) through a bare SDK pass-through proxy
 *      process (this file run with `--proxy`: an SDK `Server` forwarding to an SDK `Client`, no
 *      Toolvisor code: the floor for any gateway in a second process); (c) through the real CLI
 *      process (`toolvisor serve config.yaml`, tool `fx_echo`). 8 rounds, each on processes of its
 *      own: 2,000 warm-up calls per series, then 400, the series taking turns call by call (the
 *      ratio is the median of the rounds'). Two diagnostic series take their turns too, to tell where the time goes: the same config's registry in this process (`registry.callTool`), and
 *      `Gateway.connect` on that registry over an in-memory transport (the gateway without a second
 *      process);
 *   2. the same three with the backend reached over streamable HTTP on a loopback port (this file
 *      run with `--http-backend`: an SDK `Server` with the same `echo` tool behind the SDK's
 *      `StreamableHTTPServerTransport`), the case of a gateway fronting a remote server: direct is
 *      an SDK `Client` + `StreamableHTTPClientTransport`, the proxy's upstream and serve's toolset
 *      reach the backend the same way;
 *   3. the same gateway overhead for `prompts/get` (the backend's `greet`, `fx_greet` through serve)
 *      and `resources/read` (`bench://note`, its URI unchanged through serve), on both kinds of
 *      backend: this file run with `--stdio-backend` (an SDK `Server` with `echo`, `greet` and the
 *      resource, over stdio) and the HTTP backend, which serves the same; the proxy forwards them
 *      too, and a summary of every series' serve / proxy ratio follows;
 *   4. recovery: the stdio backend SIGKILLed under the proxy and under serve, then a call every
 *      50 ms until one answers again (or 10 s pass): a bare pass-through never does, serve does once
 *      its Supervisor has restarted the server;
 *   5. cold start: `toolvisor run config.yaml --json` spawned until its first `"state":"Ready"` line
 *      (SIGTERM after each; exit code 0 expected), next to what the fixture server alone needs to
 *      answer `initialize` through a raw SDK client, and to what the CLI takes for `--version`.
 * The CLI is the one users run (`npx toolvisor`, `npm run toolvisor`): `apps/cli/bin/toolvisor.js`,
 * the bundle, rebuilt first when a source is newer than it. At the end no CLI, proxy or server
 * process of this run may be alive (checked in /proc).
 *
 * Run: cd /work/main && npm run bench:serve   (needs node --expose-gc, set in the npm script)
 */

import * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeReadline from "node:readline"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { ConfigLoader } from "@toolvisor/config"
import * as Procfs from "@toolvisor/core/internal/procfs"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Gateway from "../../apps/cli/src/Gateway.ts"
import buildBundle from "../../apps/cli/test/bundle.setup.ts"
import {
  ascending,
  formatter,
  median,
  percentile,
  processCpuMs,
  renderTable,
  sum,
  TICK_MS,
  takeTurns
} from "./stats.ts"

/**
 * Calls per series in each round before any is timed (its processes are new), so the series
 * compare steady states. After 100, the
 * gateway processes were still being compiled: serve has more code on its path than the bare
 * proxy for V8 to tier up, so its p50 over the next thousand calls measured the JIT, not the
 * path (stdio, back-to-back A/B runs: 1.13× the proxy after 300 calls, 1.05× after 5,000, the
 * CPU per call of both falling from ~150 µs to ~60). `WARMUP=100 npm run bench:serve` shows
 * the cold case.
 */
const WARMUP = Number(process.env.WARMUP ?? 2_000)
/** Timed calls per series, in `ROUNDS` rounds; the series take turns call by call. */
const ROUNDS = Number(process.env.ROUNDS ?? 8)
const CALLS = ROUNDS * 400
/** The issue's target: serve's p50 over a bare SDK pass-through's (serve / proxy), on both backends. */
const TARGET = 1.1
const COLD_RUNS = 5
const READY_TIMEOUT_MS = 30_000

const root = NodePath.resolve(import.meta.dirname, "../..")
/** The CLI as `npx toolvisor` and `npm run toolvisor` run it: the bundle, rebuilt first when a source is newer. */
const cliMain = NodePath.join(root, "apps/cli/bin/toolvisor.js")
const fixtureServer = NodePath.join(root, "test/support/fixture-server.mjs")
const cliArgs = [cliMain]

/**
 * Run as `serve.bench.ts --proxy <marker> [url | --stdio-backend]`, this file is the plain SDK
 * proxy (see `proxy` below), to the fixture over stdio, to `url` over streamable HTTP, or to this
 * file's stdio backend; run as `serve.bench.ts --http-backend <marker>` (or `--stdio-backend`), it
 * is the backend of echo, greet and bench://note (see `backendServer`).
 */
const modeOf = (flag: string | undefined) => {
  switch (flag) {
    case "--proxy":
      return "proxy"
    case "--http-backend":
      return "http-backend"
    case "--stdio-backend":
      return "stdio-backend"
    default:
      return "main"
  }
}
const mode = modeOf(process.argv[2])
/** Every process of this run carries this string in its command line (the temp dir's name). */
const tempDir = mode === "main" ? NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-serve-bench-")) : ""
const marker = mode === "main" ? NodePath.basename(tempDir) : (process.argv[3] ?? "")
/** An extra argument the fixture server ignores, so its processes can be found in /proc. */
const fixtureArgs = [fixtureServer, `--bench=${marker}`]
const thisFile = ["--conditions=@toolvisor/source", import.meta.filename]

const echoArgs = { message: "x" }

// ---- helpers -----------------------------------------------------------------------------------

const fmt = formatter(3)

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const isRecord = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** The text of a tool result's first content block, if it has one. */
const textOf = (result: unknown): string | undefined => {
  if (!isRecord(result) || !Array.isArray(result.content)) return undefined
  const first: unknown = result.content[0]
  return isRecord(first) && typeof first.text === "string" ? first.text : undefined
}

/** Live processes whose command line mentions this run's marker (zombies have none). */
const ourProcesses = (): Array<{ readonly pid: number; readonly cmd: string }> =>
  NodeFs.readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .flatMap((entry) => {
      try {
        const cmd = NodeFs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").trim()
        return cmd.includes(marker) ? [{ pid: Number(entry), cmd }] : []
      } catch {
        return []
      }
    })

// ---- clients -----------------------------------------------------------------------------------

interface Connected {
  readonly client: Client
  readonly close: () => Promise<void>
  /** The process the client talks to, when it spawned one. */
  readonly pid?: number
  /** The last few kB the process wrote on stderr, for error messages. */
  readonly stderr: () => string
}

const connectStdio = async (args: ReadonlyArray<string>, cwd?: string): Promise<Connected> => {
  const client = new Client({ name: "bench-serve", version: "0.0.0" }, { capabilities: {} })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...args],
    stderr: "pipe",
    ...(cwd === undefined ? {} : { cwd })
  })
  let err = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString("utf8")).slice(-4_000)
  })
  await client.connect(transport)
  const pid = transport.pid
  if (pid === null) throw new Error("the SDK transport has no pid")
  return { client, close: () => client.close(), pid, stderr: () => err }
}

/** `pid`, when given, is the server's process, whose CPU the series counts. */
const connectHttp = async (url: string, pid?: number): Promise<Connected> => {
  const client = new Client({ name: "bench-serve", version: "0.0.0" }, { capabilities: {} })
  const transport = new StreamableHTTPClientTransport(new URL(url))
  await client.connect(transport)
  return {
    client,
    close: async () => {
      await transport.terminateSession().catch(() => undefined)
      await client.close()
    },
    ...(pid === undefined ? {} : { pid }),
    stderr: () => ""
  }
}

const connectFixture = () => connectStdio(fixtureArgs)

/** This file as the stdio backend of echo, greet and bench://note. */
const stdioBackendArgs = [...thisFile, "--stdio-backend", marker]

/**
 * The backend a series calls: over stdio the fixture (`args` undefined) or this file's backend,
 * or the HTTP backend at `url`.
 */
type Backend =
  | { readonly _tag: "stdio"; readonly local: boolean }
  | { readonly _tag: "http"; readonly url: string; readonly pid: number | undefined }

/** How a series' client reaches the backend, and what the proxy is told to forward to. */
const directTo = (backend: Backend) => {
  if (backend._tag === "http") return { connect: () => connectHttp(backend.url, backend.pid), proxy: [backend.url] }
  return backend.local
    ? { connect: () => connectStdio(stdioBackendArgs, root), proxy: ["--stdio-backend"] }
    : { connect: connectFixture, proxy: [] }
}

/**
 * The floor for a gateway in a second process: an SDK `Server` on stdio that forwards tools/list
 * and tools/call to an SDK `Client` of the backend, prefixing names as serve does. No registry and
 * no Effect on the call path. Exits when its stdin ends.
 */
const proxy = async (target: string | undefined) => {
  const upstream =
    target === undefined
      ? await connectFixture()
      : target === "--stdio-backend"
        ? await connectStdio(stdioBackendArgs, root)
        : await connectHttp(target)
  const server = new Server(
    { name: "bench-proxy", version: "0.0.0" },
    { capabilities: { tools: {}, prompts: {}, resources: {} } }
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const { tools } = await upstream.client.listTools()
    return { tools: tools.map((tool) => ({ ...tool, name: `fx_${tool.name}` })) }
  })
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    upstream.client.callTool({ ...request.params, name: request.params.name.replace(/^fx_/, "") })
  )
  server.setRequestHandler(ListPromptsRequestSchema, async () => {
    const { prompts } = await upstream.client.listPrompts()
    return { prompts: prompts.map((prompt) => ({ ...prompt, name: `fx_${prompt.name}` })) }
  })
  server.setRequestHandler(GetPromptRequestSchema, (request) =>
    upstream.client.getPrompt({ ...request.params, name: request.params.name.replace(/^fx_/, "") })
  )
  server.setRequestHandler(ListResourcesRequestSchema, () => upstream.client.listResources())
  server.setRequestHandler(ReadResourceRequestSchema, (request) => upstream.client.readResource(request.params))
  process.stdin.once("end", () => {
    void upstream.close().finally(() => process.exit(0))
  })
  await server.connect(new StdioServerTransport())
}

/** The backend's one tool, as the fixture declares its `echo`. */
const echoTool = {
  name: "echo",
  description: "Echoes its message",
  inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  annotations: { readOnlyHint: true }
}

/** The note `resources/read` series read: a few hundred bytes, as a small file would be. */
const note = { uri: "bench://note", name: "note", mimeType: "text/plain" }
const noteText = "A note the benchmark reads: ".padEnd(400, "x")

/** The backend's server: `echo` as the fixture has it, the prompt `greet`, and the resource `bench://note`. */
const backendServer = () => {
  const server = new Server(
    { name: "bench-backend", version: "0.0.0" },
    { capabilities: { tools: {}, prompts: {}, resources: {} } }
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [echoTool] }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => ({
    content: [{ type: "text", text: String(request.params.arguments?.message ?? "") }]
  }))
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: [{ name: "greet", description: "A greeting", arguments: [{ name: "who", required: true }] }]
  }))
  server.setRequestHandler(GetPromptRequestSchema, async (request) => ({
    messages: [{ role: "user", content: { type: "text", text: `Hello, ${request.params.arguments?.who ?? ""}` } }]
  }))
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [note] }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => ({
    contents: [{ uri: request.params.uri, mimeType: note.mimeType, text: noteText }]
  }))
  return server
}

/** The stdio backend: `backendServer` on stdin/stdout, until stdin ends. */
const stdioBackend = async () => {
  const server = backendServer()
  await server.connect(new StdioServerTransport())
}

/**
 * The streamable HTTP backend: a `backendServer` per session behind the SDK's transport, as the
 * SDK's stateful examples do. It prints its port on the first line of stdout and exits when its
 * stdin ends.
 */
const httpBackend = async () => {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const open = async () => {
    const server = backendServer()
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => NodeCrypto.randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport)
      }
    })
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    await server.connect(transport)
    return transport
  }
  const http = NodeHttp.createServer((req, res) => {
    const id = req.headers["mcp-session-id"]
    const known = typeof id === "string" ? sessions.get(id) : undefined
    const handled =
      known !== undefined
        ? known.handleRequest(req, res)
        : open().then((transport) => transport.handleRequest(req, res))
    handled.catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  http.listen(0, "127.0.0.1", () => {
    const address = http.address()
    process.stdout.write(`${typeof address === "object" && address !== null ? address.port : 0}\n`)
  })
  process.stdin.resume()
  process.stdin.once("end", () => {
    http.closeAllConnections()
    http.close(() => process.exit(0))
  })
}

/** Starts the HTTP backend process and reads the port it bound. */
const startHttpBackend = async () => {
  const child = NodeChild.spawn(process.execPath, [...thisFile, "--http-backend", marker], {
    cwd: root,
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = NodeReadline.createInterface({ input: child.stdout })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the HTTP backend did not report its port")), READY_TIMEOUT_MS)
    lines.once("line", (line) => {
      clearTimeout(timer)
      resolve(Number(line))
    })
  })
  lines.close()
  const exit = exited(child)
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    pid: child.pid,
    stop: async () => {
      child.stdin.end()
      const killed = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exit
      clearTimeout(killed)
    }
  }
}

/** Polls tools/list until the gateway lists `tool` (the toolset starts in the background). */
const waitForTool = async (gateway: Connected, tool: string) => {
  const deadline = performance.now() + READY_TIMEOUT_MS
  for (;;) {
    const { tools } = await gateway.client.listTools()
    if (tools.some((t) => t.name === tool)) return
    if (performance.now() > deadline) {
      throw new Error(`the gateway did not list ${tool} within ${READY_TIMEOUT_MS} ms\n${gateway.stderr()}`)
    }
    await sleep(20)
  }
}

// ---- series ------------------------------------------------------------------------------------

/**
 * Latencies of one series, the p50 of each round, the CPU this process spent on its calls and
 * that of the process it talks to.
 */
interface Series {
  readonly samples: Array<number>
  readonly rounds: Array<number>
  cpuMs: number
  otherCpuMs: number
}

const makeSeries = (): Series => ({ samples: [], rounds: [], cpuMs: 0, otherCpuMs: 0 })

const stats = (series: Series) => {
  const sorted = ascending(series.samples)
  const n = series.samples.length
  return {
    rounds: series.rounds,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    mean: sum(series.samples) / n,
    cpu: series.cpuMs / n,
    otherCpu: series.otherCpuMs / n
  }
}

type Stats = ReturnType<typeof stats>

// ---- 1, 2. gateway overhead --------------------------------------------------------------------

/** How long closing each client took (for stdio: stdin end → the process exited), by label. */
const closeMs = new Map<string, number>()

/** One request the series time, as each client makes it, and how to tell it answered right. */
interface Method {
  readonly name: string
  readonly direct: (client: Client) => Promise<unknown>
  /** Through a gateway (the proxy, serve): the names prefixed with `fx_`, URIs unchanged. */
  readonly gateway: (client: Client) => Promise<unknown>
  readonly registry: (registry: ToolsetRegistry.Registry) => Effect.Effect<unknown, unknown>
  readonly answered: (result: unknown) => boolean
}

const greetArgs = { who: "x" }

const methods = {
  call: {
    name: "tools/call",
    direct: (client) => client.callTool({ name: "echo", arguments: echoArgs }),
    gateway: (client) => client.callTool({ name: "fx_echo", arguments: echoArgs }),
    registry: (registry) => registry.callTool("fx_echo", echoArgs),
    answered: (result) => textOf(result)?.endsWith(echoArgs.message) === true
  },
  prompt: {
    name: "prompts/get",
    direct: (client) => client.getPrompt({ name: "greet", arguments: greetArgs }),
    gateway: (client) => client.getPrompt({ name: "fx_greet", arguments: greetArgs }),
    registry: (registry) => registry.getPrompt("fx_greet", greetArgs),
    answered: (result) => JSON.stringify(result).includes(`Hello, ${greetArgs.who}`)
  },
  read: {
    name: "resources/read",
    direct: (client) => client.readResource({ uri: note.uri }),
    gateway: (client) => client.readResource({ uri: note.uri }),
    registry: (registry) => registry.readResource(note.uri),
    answered: (result) => JSON.stringify(result).includes(noteText)
  }
} satisfies Record<string, Method>

interface Overhead {
  readonly method: string
  readonly direct: Stats
  readonly proxy: Stats
  readonly serve: Stats
  /** The in-process diagnostics, measured for the stdio backend only. */
  readonly registry?: Stats
  readonly memory?: Stats
  readonly elapsed: number
}

/** A series: how to make one call (a promise, or an Effect run in the series' fiber), and the pid it talks to. */
interface Path {
  readonly label: string
  readonly call: { readonly promise: () => Promise<unknown> } | { readonly effect: Effect.Effect<unknown, unknown> }
  readonly pid?: number
  readonly series: Series
}

/**
 * One call of `path`, timed around the call alone: a promise inside its own step, an Effect as
 * `yield*` runs it. This process's CPU time is taken around it.
 */
const timed = (path: Path) =>
  Effect.gen(function* () {
    const before = process.cpuUsage()
    const { call, series } = path
    if ("effect" in call) {
      const start = performance.now()
      yield* call.effect
      series.samples.push(performance.now() - start)
    } else {
      const took = yield* Effect.promise(async () => {
        const start = performance.now()
        await call.promise()
        return performance.now() - start
      })
      series.samples.push(took)
    }
    const used = process.cpuUsage(before)
    series.cpuMs += (used.user + used.system) / 1000
  })

/**
 * Direct, proxy and serve on one backend, taking turns call by call; for the stdio backend also
 * the registry and the gateway in this process. Each round opens every process anew (`round`).
 */
const overhead = async (backend: Backend, configPath: string, method: Method): Promise<Overhead> => {
  const all = new Map<string, Series>()
  const seriesOf = (label: string) => {
    const known = all.get(label)
    if (known !== undefined) return known
    const made = makeSeries()
    all.set(label, made)
    return made
  }
  let elapsed = 0
  for (let i = 0; i < ROUNDS; i++) elapsed += await round(backend, configPath, method, seriesOf)
  const of = (label: string) => stats(seriesOf(label))
  return {
    method: method.name,
    direct: of("direct"),
    proxy: of("proxy"),
    serve: of("serve"),
    ...(all.has("registry") ? { registry: of("registry") } : {}),
    ...(all.has("in-memory") ? { memory: of("in-memory") } : {}),
    elapsed
  }
}

/**
 * One round on processes of its own: they are started, every series warmed up on them (apart
 * from what it records), timed for `CALLS / ROUNDS` calls, and closed; returns the time the timed
 * calls took. Where the kernel places a process (its CPU, what shares it) weighs on every call
 * of its series: kept for a whole run, the same processes put serve / proxy over stdio anywhere
 * from 1.04 to 1.12 from run to run of one build. New processes each round let that even out.
 */
const round = async (
  backend: Backend,
  configPath: string,
  method: Method,
  seriesOf: (label: string) => Series
): Promise<number> => {
  const opened = new Map<string, Connected>()
  const open = async (label: string, connect: () => Promise<Connected>) => {
    const connected = await connect()
    opened.set(label, connected)
    return connected
  }
  // The in-process diagnostics: the same config's registry here, and the gateway on it in memory.
  const scope = Effect.runSync(Scope.make())
  const suffix = backend._tag === "stdio" ? "" : " (http)"
  try {
    const to = directTo(backend)
    const direct = await open(`direct${suffix}`, to.connect)
    const gateway = await open(`serve${suffix}`, () => connectStdio([...cliArgs, "serve", configPath], root))
    const sdkProxy = await open(`proxy${suffix}`, () =>
      connectStdio([...thisFile, "--proxy", marker, ...to.proxy], root)
    )
    await waitForTool(gateway, "fx_echo")
    // The clients list first, as an agent would (the SDK Client then knows each tool's output schema).
    await Promise.all([direct.client.listTools(), sdkProxy.client.listTools()])

    const paths: Array<Path> = [
      {
        label: "serve",
        call: { promise: () => method.gateway(gateway.client) },
        ...(gateway.pid === undefined ? {} : { pid: gateway.pid }),
        series: seriesOf("serve")
      },
      {
        label: "proxy",
        call: { promise: () => method.gateway(sdkProxy.client) },
        ...(sdkProxy.pid === undefined ? {} : { pid: sdkProxy.pid }),
        series: seriesOf("proxy")
      }
    ]
    if (backend._tag === "stdio") {
      const config = await Effect.runPromise(ConfigLoader.load(configPath))
      const registry: ToolsetRegistry.Registry = await Effect.runPromise(
        ToolsetRegistry.make(config).pipe(Scope.provide(scope))
      )
      await Effect.runPromise(registry.start)
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await Effect.runPromise(Gateway.connect(registry, serverSide).pipe(Scope.provide(scope)))
      const memory = new Client({ name: "bench-serve-memory", version: "0.0.0" }, { capabilities: {} })
      await memory.connect(clientSide)
      opened.set("in-memory", { client: memory, close: () => memory.close(), stderr: () => "" })
      await memory.listTools()
      paths.push(
        { label: "registry", call: { effect: method.registry(registry) }, series: seriesOf("registry") },
        { label: "in-memory", call: { promise: () => method.gateway(memory) }, series: seriesOf("in-memory") }
      )
    }
    const directPath: Path = {
      label: "direct",
      call: { promise: () => method.direct(direct.client) },
      ...(direct.pid === undefined ? {} : { pid: direct.pid }),
      series: seriesOf("direct")
    }
    paths.push(directPath)

    // Every path answers right.
    const answers = await Effect.runPromise(
      Effect.forEach(paths, ({ call }) => ("effect" in call ? call.effect : Effect.promise(call.promise)))
    )
    if (!answers.every(method.answered)) {
      throw new Error(`unexpected ${method.name} answers: ${JSON.stringify(answers).slice(0, 2_000)}`)
    }

    // The warm-up records into series of its own, which are dropped.
    await Effect.runPromise(
      takeTurns(
        paths.map((path) => ({ ...path, series: makeSeries() })),
        WARMUP,
        timed
      )
    )
    const peersBefore = paths.map((path) => (path.pid === undefined ? 0 : processCpuMs(path.pid)))
    const from = paths.map((path) => path.series.samples.length)
    const started = performance.now()
    // Each process a series talks to is idle while the others take their turns, alike. (Blocks of
    // 250 calls per series, in ABBA order, put serve / proxy over stdio anywhere from 1.01 to 1.44
    // on one build.)
    await Effect.runPromise(takeTurns(paths, CALLS / ROUNDS, timed))
    const elapsed = performance.now() - started
    paths.forEach((path, j) => {
      path.series.rounds.push(percentile(ascending(path.series.samples.slice(from[j])), 0.5))
      if (path.pid !== undefined) path.series.otherCpuMs += processCpuMs(path.pid) - (peersBefore[j] ?? 0)
    })
    return elapsed
  } finally {
    const memory = opened.get("in-memory")
    opened.delete("in-memory")
    await memory?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const [label, connected] of opened) {
      const start = performance.now()
      await connected.close()
      closeMs.set(label, performance.now() - start)
    }
  }
}

/** Serve's p50 over the proxy's, round by round: their median and range. */
const servePerProxy = (o: Overhead) => {
  const ratios = o.serve.rounds.map((p50, i) => p50 / (o.proxy.rounds[i] ?? Number.NaN))
  return { ratio: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios) }
}

/** The table of one backend: direct, proxy and serve, with the ratios the issue asks for. */
const report = (title: string, o: Overhead) => {
  const { ratio, low, high } = servePerProxy(o)
  const missed = ratio > TARGET
  const diagnostics = o.registry !== undefined && o.memory !== undefined
  const row = (label: string, pick: (s: Stats) => number, digits = 3) => [
    label,
    fmt(pick(o.direct), digits),
    fmt(pick(o.proxy), digits),
    fmt(pick(o.serve), digits),
    fmt(pick(o.proxy) / pick(o.direct)),
    fmt(pick(o.serve) / pick(o.direct)),
    fmt(pick(o.serve) / pick(o.proxy)),
    ...(o.registry !== undefined && o.memory !== undefined ? [fmt(pick(o.registry)), fmt(pick(o.memory))] : [])
  ]
  const peer = (pick: (s: Stats) => number) => {
    const cells = row("CPU ms/call, server§", pick)
    return diagnostics ? [...cells.slice(0, -2), "", ""] : cells
  }
  console.log(
    `\n${title}: sequential ${o.method} requests, ${ROUNDS} rounds on new processes × ${CALLS / ROUNDS} per series after ${WARMUP} warm-up, taking turns call by call (${fmt(o.elapsed / 1000, 1)} s)`
  )
  console.log(
    renderTable(
      [
        "ms per call",
        "direct",
        "SDK proxy*",
        "serve (CLI)",
        "proxy/direct",
        "serve/direct",
        "serve/proxy",
        ...(diagnostics ? ["registry†", "in-memory‡"] : [])
      ],
      [
        row("p50", (s) => s.p50),
        row("p90", (s) => s.p90),
        row("p99", (s) => s.p99),
        row("mean", (s) => s.mean),
        row("CPU ms/call, bench¶", (s) => s.cpu),
        peer((s) => s.otherCpu)
      ]
    )
  )
  const step = (label: string, ms: number) => `    ${label.padEnd(58)} ${ms >= 0 ? "+" : ""}${fmt(ms)} ms`
  console.log(
    [
      ...(o.registry !== undefined && o.memory !== undefined
        ? [
            `  where serve's p50 goes (differences of medians, so only roughly additive):`,
            `    ${"raw SDK Client → fixture".padEnd(58)}  ${fmt(o.direct.p50)} ms`,
            step("registry + McpToolset in process (registry† − direct)", o.registry.p50 - o.direct.p50),
            step("SDK Server + in-memory hop (in-memory‡ − registry†)", o.memory.p50 - o.registry.p50),
            step("a second process and stdio hop (serve − in-memory‡)", o.serve.p50 - o.memory.p50)
          ]
        : []),
      `  serve − proxy at p50: ${fmt(o.serve.p50 - o.proxy.p50)} ms (what Toolvisor adds over a bare pass-through); proxy − direct: ${fmt(o.proxy.p50 - o.direct.p50)} ms (the second process and its hop)`,
      `  p50 ratio serve / SDK proxy, median of ${ROUNDS} rounds: ${fmt(ratio)} (rounds ${fmt(low)}–${fmt(high)}; target <= ${TARGET}): ${missed ? "MISSED" : "ok"}`
    ].join("\n")
  )
  return missed
}

// ---- 3. cold start -----------------------------------------------------------------------------

interface ExitStatus {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

const exited = (child: NodeChild.ChildProcess) =>
  new Promise<ExitStatus>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode })
    } else child.once("exit", (code, signal) => resolve({ code, signal }))
  })

/** Spawns `toolvisor run config --json`, times the first Ready status line, then SIGTERMs it. */
const cliColdStart = async (configPath: string) => {
  const start = performance.now()
  const child = NodeChild.spawn(process.execPath, [...cliArgs, "run", configPath, "--json"], {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"]
  })
  let err = ""
  child.stderr.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString("utf8")).slice(-4_000)
  })
  const exit = exited(child)
  const lines = NodeReadline.createInterface({ input: child.stdout })
  const ready = new Promise<number | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), READY_TIMEOUT_MS)
    lines.on("line", (text) => {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return
      }
      if (isRecord(parsed) && parsed.type === "status" && parsed.state === "Ready") {
        clearTimeout(timer)
        resolve(performance.now() - start)
      }
    })
    void exit.then(() => {
      clearTimeout(timer)
      resolve(undefined)
    })
  })
  const readyMs = await ready
  child.kill("SIGTERM")
  const killed = setTimeout(() => child.kill("SIGKILL"), 10_000)
  const status = await exit
  clearTimeout(killed)
  lines.close()
  if (readyMs === undefined) throw new Error(`toolvisor run: no Ready line (exit ${JSON.stringify(status)})\n${err}`)
  if (status.code !== 0) throw new Error(`toolvisor run: exit ${JSON.stringify(status)} after SIGTERM\n${err}`)
  return readyMs
}

/** The fixture server alone: spawn + `initialize` through a raw SDK client. */
const fixtureColdStart = async () => {
  const start = performance.now()
  const fixture = await connectFixture()
  const ms = performance.now() - start
  await fixture.client.close()
  return ms
}

/** `toolvisor --version`: loading the CLI's modules, nothing started. */
const cliVersion = async () => {
  const start = performance.now()
  const child = NodeChild.spawn(process.execPath, [...cliArgs, "--version"], {
    cwd: root,
    stdio: "ignore"
  })
  await exited(child)
  return performance.now() - start
}

const coldStart = async (configPath: string) => {
  const cli: Array<number> = []
  const fixture: Array<number> = []
  const version: Array<number> = []
  // One untimed run of each first (file-system caches), then the timed ones interleaved.
  await cliColdStart(configPath)
  await fixtureColdStart()
  for (let i = 0; i < COLD_RUNS; i++) {
    cli.push(await cliColdStart(configPath))
    fixture.push(await fixtureColdStart())
    version.push(await cliVersion())
  }
  return { cli, fixture, version }
}

// ---- backend killed ----------------------------------------------------------------------------

/** How long a gateway gets to answer again after its backend was SIGKILLed. */
const RECOVERY_WAIT_MS = 10_000

/** The backend server a gateway process spawned: its fixture child. */
const backendOf = (gateway: number) =>
  ourProcesses().find((p) => p.cmd.includes(fixtureServer) && Procfs.stat(p.pid)?.ppid === gateway)?.pid

/**
 * SIGKILLs the backend behind a gateway, then calls `fx_echo` every 50 ms until one answers right
 * or RECOVERY_WAIT_MS pass: when it answered again (undefined: never), and how many calls failed.
 */
const afterBackendKill = async (gateway: Connected) => {
  const backend = gateway.pid === undefined ? undefined : backendOf(gateway.pid)
  if (backend === undefined) throw new Error("no backend process found under the gateway")
  process.kill(backend, "SIGKILL")
  const killed = performance.now()
  let failed = 0
  while (performance.now() - killed < RECOVERY_WAIT_MS) {
    const answered = await gateway.client
      .callTool({ name: "fx_echo", arguments: echoArgs }, undefined, { timeout: 2_000 })
      .then(
        (result) => result.isError !== true && textOf(result) === echoArgs.message,
        () => false
      )
    if (answered) return { recoveredMs: performance.now() - killed, failed }
    failed += 1
    await sleep(50)
  }
  return { recoveredMs: undefined, failed }
}

/** The proxy and serve, each on a fixture of its own that is SIGKILLed under it. */
const backendKilled = async (configPath: string) => {
  const gateway = await connectStdio([...cliArgs, "serve", configPath], root)
  const sdkProxy = await connectStdio([...thisFile, "--proxy", marker], root)
  try {
    await waitForTool(gateway, "fx_echo")
    await sdkProxy.client.listTools()
    return { proxy: await afterBackendKill(sdkProxy), serve: await afterBackendKill(gateway) }
  } finally {
    await Promise.all([gateway.close(), sdkProxy.close()])
  }
}

// ---- run ---------------------------------------------------------------------------------------

const writeConfig = (name: string, toolset: ReadonlyArray<string>) => {
  const path = NodePath.join(tempDir, name)
  NodeFs.writeFileSync(
    path,
    ["agents:", "  root:", "    toolsets:", "      - type: mcp", "        name: fx", ...toolset, ""].join("\n")
  )
  return path
}

const main = async () => {
  const started = performance.now()
  await buildBundle()
  const stdioConfig = writeConfig("agent.yaml", [
    `        command: ${JSON.stringify(process.execPath)}`,
    `        args: ${JSON.stringify(fixtureArgs)}`
  ])
  const sdkPackage: unknown = JSON.parse(
    NodeFs.readFileSync(NodePath.join(root, "node_modules/@modelcontextprotocol/sdk/package.json"), "utf8")
  )
  const sdkVersion = isRecord(sdkPackage) && typeof sdkPackage.version === "string" ? sdkPackage.version : "?"
  const node = NodePath.basename(process.execPath)
  const local = (path: string) => NodePath.relative(root, path)

  console.log(
    "toolvisor serve benchmark: direct vs a bare SDK proxy vs the CLI gateway, on a stdio and an HTTP backend"
  )
  console.log(
    [
      `  Node ${process.version} (${process.platform}/${process.arch}, ${NodeOs.availableParallelism()} CPUs), @modelcontextprotocol/sdk ${sdkVersion}`,
      `  serve:  ${node} ${local(cliMain)} serve <tmp>/agent.yaml (the bundled CLI; toolset fx, tool fx_echo)`,
      `  stdio backend: ${node} ${local(fixtureServer)} (tool echo)`,
      `  http backend:  ${node} ${local(import.meta.filename)} --http-backend (SDK Server + StreamableHTTPServerTransport on 127.0.0.1, tool echo)`
    ].join("\n")
  )

  let missed = false
  let backend: Awaited<ReturnType<typeof startHttpBackend>> | undefined
  try {
    const ratios: Array<ReadonlyArray<string>> = []
    /** Runs one overhead series set, reports it and keeps its p50 ratio for the summary. */
    const measured = async (title: string, backend: Backend, configPath: string, method: Method) => {
      const o = await overhead(backend, configPath, method)
      missed = report(title, o) || missed
      ratios.push([method.name, backend._tag, fmt(o.proxy.p50), fmt(o.serve.p50), fmt(servePerProxy(o).ratio)])
      return o
    }
    await measured(
      "1. Backend on stdio (the fixture server)",
      { _tag: "stdio", local: false },
      stdioConfig,
      methods.call
    )
    console.log(
      [
        "  * a plain SDK Server → SDK Client pass-through process (no registry, no Effect): the floor for any gateway",
        "    in a second process",
        "  † registry.callTool on the same config in this process: registry + McpToolset + the stdio hop to the fixture",
        "  ‡ Gateway.connect on that registry, an SDK Client over an in-memory transport: the gateway without its process",
        "  ¶ process.cpuUsage() of this process over the series (for † and ‡ it includes the toolset's side)",
        `  § /proc utime+stime of the process the client talks to: the fixture, the proxy, the CLI (${TICK_MS} ms ticks);`,
        "    over HTTP, direct talks to the backend, which the proxy and serve also call",
        `  closing the serve client (stdin end → CLI stopped its toolset and exited): ${fmt(closeMs.get("serve") ?? Number.NaN, 0)} ms`
      ].join("\n")
    )

    backend = await startHttpBackend()
    const httpConfig = writeConfig("agent-http.yaml", ["        remote:", `          url: ${backend.url}`])
    const http: Backend = { _tag: "http", url: backend.url, pid: backend.pid }
    await measured("2. Backend over streamable HTTP (a remote server on loopback)", http, httpConfig, methods.call)
    console.log(
      "  the direct client, the proxy's upstream and serve's toolset each hold their own HTTP session with the backend"
    )
    const localConfig = writeConfig("agent-local.yaml", [
      `        command: ${JSON.stringify(process.execPath)}`,
      `        args: ${JSON.stringify(stdioBackendArgs)}`
    ])
    const local: Backend = { _tag: "stdio", local: true }
    for (const [n, method] of [methods.prompt, methods.read].entries()) {
      const section = `3${"ab"[n]}`
      await measured(`${section}. ${method.name}, backend on stdio (this file's backend)`, local, localConfig, method)
      await measured(`${section}. ${method.name}, backend over streamable HTTP`, http, httpConfig, method)
    }
    console.log("\nSummary: p50 ms per request, serve (CLI) against the bare SDK proxy*")
    console.log(renderTable(["method", "backend", "SDK proxy*", "serve (CLI)", "serve/proxy"], ratios))
    await backend.stop()
    backend = undefined

    const k = await backendKilled(stdioConfig)
    const recovered = (r: { readonly recoveredMs: number | undefined; readonly failed: number }) => [
      r.recoveredMs === undefined ? `never (${RECOVERY_WAIT_MS / 1_000} s)` : `${fmt(r.recoveredMs, 0)} ms`,
      String(r.failed)
    ]
    console.log("\n4. The stdio backend SIGKILLed under each gateway, then a call every 50 ms")
    console.log(
      renderTable(
        ["gateway", "answers again after", "calls that failed meanwhile"],
        [
          ["SDK proxy*", ...recovered(k.proxy)],
          ["serve (CLI)", ...recovered(k.serve)]
        ]
      )
    )

    const c = await coldStart(stdioConfig)
    const summary = (values: ReadonlyArray<number>) => {
      const sorted = ascending(values)
      return [fmt(median(sorted), 0), fmt(sorted[0] ?? Number.NaN, 0), fmt(sorted.at(-1) ?? Number.NaN, 0)]
    }
    console.log(
      `\n5. Cold start, ${COLD_RUNS} runs each (after one untimed run), interleaved; every run exited 0 on SIGTERM`
    )
    console.log(
      renderTable(
        ["ms", "median", "min", "max"],
        [
          ["toolvisor run --json: spawn → first Ready line", ...summary(c.cli)],
          ["context: fixture server alone, spawn → initialize", ...summary(c.fixture)],
          ["context: toolvisor --version, spawn → exit", ...summary(c.version)]
        ]
      )
    )
    console.log(
      `  run → Ready beyond loading the CLI (minus --version, medians): ${fmt(median(c.cli) - median(c.version), 0)} ms`
    )
  } finally {
    await backend?.stop()
    // Everything is closed by now; give exiting processes a moment, then nothing of this run may be left.
    let left = ourProcesses()
    for (let i = 0; i < 50 && left.length > 0; i++) {
      await sleep(100)
      left = ourProcesses()
    }
    console.log(
      `\nProcesses of this run alive after close: ${left.length === 0 ? "none" : left.map((p) => `${p.pid} (${p.cmd})`).join("; ")}`
    )
    for (const p of left) process.kill(p.pid, "SIGKILL")
    if (left.length > 0) process.exitCode = 1
    NodeFs.rmSync(tempDir, { recursive: true, force: true })
    console.log(`total ${fmt((performance.now() - started) / 1000, 1)} s`)
  }
  if (missed) console.log(`TARGET MISSED: serve's p50 is above ${TARGET}× the bare SDK proxy's`)
}

if (mode === "proxy") await proxy(process.argv[4])
else if (mode === "http-backend") await httpBackend()
else if (mode === "stdio-backend") await stdioBackend()
else await main()
