/**
 * `toolvisor serve` benchmark (issue 6), on the MCP fixture server over stdio, in one run:
 *   1. gateway overhead: p50/p99 of sequential `tools/call` of the fixture's `echo` through the real
 *      CLI process (`toolvisor serve config.yaml`, a raw SDK `Client` + `StdioClientTransport` on its
 *      stdio, tool `fx_echo`) against a raw SDK Client on the fixture server itself (tool `echo`);
 *      100 warm-up calls each, then 1,000 per series in ABBA blocks. Three diagnostic series ride in
 *      the middle of each block, to tell where the time goes: a plain SDK pass-through proxy process
 *      (this file run with `--proxy`: the floor for any gateway in a second process), the same
 *      config's registry in this process (`registry.callTool`), and `Gateway.connect` on that
 *      registry over an in-memory transport (the gateway without a second process);
 *   2. cold start: `toolvisor run config.yaml --json` spawned until its first `"state":"Ready"` line
 *      (SIGTERM after each; exit code 0 expected), next to what the fixture server alone needs to
 *      answer `initialize` through a raw SDK client, and to what the CLI takes for `--version`.
 * At the end no CLI or fixture-server process of this run may be alive (checked in /proc).
 *
 * Run: cd /work/main && npm run bench:serve   (needs node --expose-gc, set in the npm script)
 */

import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeReadline from "node:readline"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { ConfigLoader } from "@toolvisor/config"
import { LocalRegistry, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Gateway from "../../apps/cli/src/Gateway.ts"
import { ascending, formatter, gc, median, percentile, processCpuMs, renderTable, sum, TICK_MS } from "./stats.ts"

const WARMUP = 100
const CALLS = 1_000
/** Blocks per series, run in ABBA order (gateway, raw, raw, gateway, …) so drift falls on both alike. */
const BLOCKS = 4
const BLOCK = CALLS / BLOCKS
const TARGET = 1.15
const COLD_RUNS = 5
const READY_TIMEOUT_MS = 30_000
/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on Linux). */

const root = NodePath.resolve(import.meta.dirname, "../..")
const cliMain = NodePath.join(root, "apps/cli/src/main.ts")
const fixtureServer = NodePath.join(root, "packages/mcp/test/fixtures/fixture-server.mjs")
const cliArgs = ["--conditions=@toolvisor/source", cliMain]

/** Run as `serve.bench.ts --proxy <marker>`, this file is the plain SDK proxy (see `proxy` below). */
const proxyMode = process.argv[2] === "--proxy"
/** Every process of this run carries this string in its command line (the temp dir's name). */
const tempDir = proxyMode ? "" : NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-serve-bench-"))
const marker = proxyMode ? (process.argv[3] ?? "") : NodePath.basename(tempDir)
/** An extra argument the fixture server ignores, so its processes can be found in /proc. */
const fixtureArgs = [fixtureServer, `--bench=${marker}`]
const configPath = NodePath.join(tempDir, "agent.yaml")
const proxyArgs = ["--conditions=@toolvisor/source", import.meta.filename, "--proxy", marker]

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
  readonly transport: StdioClientTransport
  readonly pid: number
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
  return { client, transport, pid, stderr: () => err }
}

const connectFixture = () => connectStdio(fixtureArgs)
const connectGateway = () => connectStdio([...cliArgs, "serve", configPath], root)
const connectProxy = () => connectStdio(proxyArgs, root)

/**
 * The floor for a gateway in a second process: an SDK `Server` on stdio that forwards tools/list
 * and tools/call to an SDK `Client` of the fixture server, prefixing names as serve does. No
 * registry and no Effect on the call path. Exits when its stdin ends.
 */
const proxy = async () => {
  const upstream = await connectFixture()
  const server = new Server({ name: "bench-proxy", version: "0.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const { tools } = await upstream.client.listTools()
    return { tools: tools.map((tool) => ({ ...tool, name: `fx_${tool.name}` })) }
  })
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    upstream.client.callTool({ ...request.params, name: request.params.name.replace(/^fx_/, "") })
  )
  process.stdin.once("end", () => {
    void upstream.client.close().finally(() => process.exit(0))
  })
  await server.connect(new StdioServerTransport())
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

/** Latencies of one series, the CPU this process spent on it, and that of one other process. */
interface Series {
  readonly samples: Array<number>
  cpuMs: number
  otherCpuMs: number
}

const makeSeries = (): Series => ({ samples: [], cpuMs: 0, otherCpuMs: 0 })

/** Runs `n` calls of `call`, one at a time, timing each; `other` is a pid whose CPU is also counted. */
const runSeries = async (series: Series, n: number, call: () => Promise<unknown>, other?: number) => {
  const before = process.cpuUsage()
  const otherBefore = other === undefined ? 0 : processCpuMs(other)
  for (let i = 0; i < n; i++) {
    const start = performance.now()
    await call()
    series.samples.push(performance.now() - start)
  }
  const used = process.cpuUsage(before)
  series.cpuMs += (used.user + used.system) / 1000
  if (other !== undefined) series.otherCpuMs += processCpuMs(other) - otherBefore
}

/** `n` timed calls of an Effect, in one Effect run (no runPromise per call). */
const effectSeries = <A, E>(series: Series, n: number, call: Effect.Effect<A, E>) => {
  const before = process.cpuUsage()
  return Effect.runPromise(
    Effect.gen(function* () {
      for (let i = 0; i < n; i++) {
        const start = performance.now()
        yield* call
        series.samples.push(performance.now() - start)
      }
      const used = process.cpuUsage(before)
      series.cpuMs += (used.user + used.system) / 1000
    })
  )
}

const stats = (series: Series) => {
  const sorted = ascending(series.samples)
  const n = series.samples.length
  return {
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    mean: sum(series.samples) / n,
    cpu: series.cpuMs / n,
    otherCpu: series.otherCpuMs / n
  }
}

// ---- 1. gateway overhead -----------------------------------------------------------------------

/** How long closing each stdio client took (stdin end → the process exited), by what it talks to. */
const closeMs = new Map<string, number>()

const overhead = async () => {
  const opened = new Map<string, Connected>()
  const open = async (label: string, connect: () => Promise<Connected>) => {
    const connected = await connect()
    opened.set(label, connected)
    return connected
  }
  // The in-process diagnostics: the same config's registry here, and the gateway on it in memory.
  const scope = Effect.runSync(Scope.make())
  try {
    const raw = await open("fixture", connectFixture)
    const gateway = await open("serve", connectGateway)
    const sdkProxy = await open("proxy", connectProxy)
    await waitForTool(gateway, "fx_echo")
    const config = await Effect.runPromise(ConfigLoader.load(configPath))
    const registry: ToolsetRegistry.Registry = await Effect.runPromise(
      LocalRegistry.make(config).pipe(Scope.provide(scope))
    )
    await Effect.runPromise(registry.start)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await Effect.runPromise(Gateway.connect(registry, serverSide).pipe(Scope.provide(scope)))
    const memory = new Client({ name: "bench-serve-memory", version: "0.0.0" }, { capabilities: {} })
    await memory.connect(clientSide)
    // The clients list first, as an agent would (the SDK Client then knows each tool's output schema).
    await Promise.all([raw.client.listTools(), sdkProxy.client.listTools(), memory.listTools()])

    const viaGateway = () => gateway.client.callTool({ name: "fx_echo", arguments: echoArgs })
    const viaRaw = () => raw.client.callTool({ name: "echo", arguments: echoArgs })
    const viaProxy = () => sdkProxy.client.callTool({ name: "fx_echo", arguments: echoArgs })
    const viaMemory = () => memory.callTool({ name: "fx_echo", arguments: echoArgs })
    const viaRegistry = registry.callTool("fx_echo", echoArgs)

    // Every path answers the echo.
    const answers = [
      textOf(await viaGateway()),
      textOf(await viaRaw()),
      textOf(await viaProxy()),
      textOf(await viaMemory()),
      textOf(await Effect.runPromise(viaRegistry))
    ]
    if (answers.some((a) => a !== echoArgs.message)) throw new Error(`unexpected echo answers: ${answers.join(", ")}`)

    const g = makeSeries()
    const r = makeSeries()
    const p = makeSeries()
    const reg = makeSeries()
    const m = makeSeries()
    /** One block of every series: the measured pair first and last, the diagnostics in between. */
    const blocks = (n: number, measure: boolean) => [
      () => runSeries(measure ? g : makeSeries(), n, viaGateway, gateway.pid),
      () => runSeries(measure ? p : makeSeries(), n, viaProxy, sdkProxy.pid),
      () => effectSeries(measure ? reg : makeSeries(), n, viaRegistry),
      () => runSeries(measure ? m : makeSeries(), n, viaMemory),
      () => runSeries(measure ? r : makeSeries(), n, viaRaw, raw.pid)
    ]
    for (const run of blocks(WARMUP, false)) await run()
    const started = performance.now()
    for (let block = 0; block < BLOCKS; block++) {
      // ABBA for the measured pair: gateway … raw, raw … gateway, gateway … raw, raw … gateway.
      const order = block % 2 === 0 ? blocks(BLOCK, true) : blocks(BLOCK, true).reverse()
      for (const run of order) {
        gc("bench:serve")
        await run()
      }
    }
    const elapsed = performance.now() - started
    await memory.close()
    return { g: stats(g), r: stats(r), p: stats(p), reg: stats(reg), m: stats(m), elapsed }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const [label, connected] of opened) {
      const start = performance.now()
      await connected.client.close()
      closeMs.set(label, performance.now() - start)
    }
  }
}

// ---- 2. cold start -----------------------------------------------------------------------------

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
const cliColdStart = async () => {
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

const coldStart = async () => {
  const cli: Array<number> = []
  const fixture: Array<number> = []
  const version: Array<number> = []
  // One untimed run of each first (file-system caches), then the timed ones interleaved.
  await cliColdStart()
  await fixtureColdStart()
  for (let i = 0; i < COLD_RUNS; i++) {
    cli.push(await cliColdStart())
    fixture.push(await fixtureColdStart())
    version.push(await cliVersion())
  }
  return { cli, fixture, version }
}

// ---- run ---------------------------------------------------------------------------------------

const main = async () => {
  const started = performance.now()
  NodeFs.writeFileSync(
    configPath,
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: fx",
      `        command: ${JSON.stringify(process.execPath)}`,
      `        args: ${JSON.stringify(fixtureArgs)}`,
      ""
    ].join("\n")
  )
  const sdkPackage: unknown = JSON.parse(
    NodeFs.readFileSync(NodePath.join(root, "node_modules/@modelcontextprotocol/sdk/package.json"), "utf8")
  )
  const sdkVersion = isRecord(sdkPackage) && typeof sdkPackage.version === "string" ? sdkPackage.version : "?"
  const node = NodePath.basename(process.execPath)
  const local = (path: string) => NodePath.relative(root, path)

  console.log("toolvisor serve benchmark: the CLI gateway vs a raw SDK Client, MCP fixture server over stdio")
  console.log(
    [
      `  Node ${process.version} (${process.platform}/${process.arch}, ${NodeOs.availableParallelism()} CPUs), @modelcontextprotocol/sdk ${sdkVersion}`,
      `  serve: ${node} --conditions=@toolvisor/source ${local(cliMain)} serve <tmp>/agent.yaml (toolset fx, tool fx_echo)`,
      `  raw:   ${node} ${local(fixtureServer)} (tool echo)`
    ].join("\n")
  )

  let missed = false
  try {
    const o = await overhead()
    const ratio = o.g.p50 / o.r.p50
    missed = ratio > TARGET
    console.log(
      `\n1. Sequential echo calls: ${BLOCKS} × ${BLOCK} per series after ${WARMUP} warm-up, ABBA blocks (${fmt(o.elapsed / 1000, 1)} s)`
    )
    type Stats = ReturnType<typeof stats>
    const row = (label: string, pick: (s: Stats) => number, target = "", verdict = "") => [
      label,
      fmt(pick(o.g)),
      fmt(pick(o.r)),
      fmt(pick(o.g) / pick(o.r)),
      fmt(pick(o.g) - pick(o.r)),
      target,
      verdict,
      fmt(pick(o.p)),
      fmt(pick(o.reg)),
      fmt(pick(o.m))
    ]
    const peer = (pick: (s: Stats) => number) => {
      const cells = row("CPU ms/call, server§", pick)
      return [...cells.slice(0, -2), "", ""]
    }
    console.log(
      renderTable(
        [
          "ms per call",
          "serve (CLI)",
          "raw SDK",
          "ratio",
          "Δ ms",
          "target",
          "",
          "SDK proxy*",
          "registry†",
          "in-memory‡"
        ],
        [
          row("p50", (s) => s.p50, `<= ${TARGET}`, missed ? "MISSED" : "ok"),
          row("p90", (s) => s.p90),
          row("p99", (s) => s.p99),
          row("mean", (s) => s.mean),
          row("CPU ms/call, bench¶", (s) => s.cpu),
          peer((s) => s.otherCpu)
        ]
      )
    )
    console.log(
      [
        "  diagnostics (not targets):",
        "  * a plain SDK Server → SDK Client pass-through process (no registry, no Effect): the floor for any gateway",
        "    in a second process",
        "  † registry.callTool on the same config in this process: registry + McpToolset + the stdio hop to the fixture",
        "  ‡ Gateway.connect on that registry, an SDK Client over an in-memory transport: the gateway without its process",
        "  ¶ process.cpuUsage() of this process over the series (for † and ‡ it includes the toolset's side)",
        `  § /proc utime+stime of the process the client talks to: the CLI, the fixture, the proxy (${TICK_MS} ms ticks)`
      ].join("\n")
    )
    const step = (label: string, ms: number) => `    ${label.padEnd(58)} ${ms >= 0 ? "+" : ""}${fmt(ms)} ms`
    console.log(
      [
        `  where serve's p50 goes (differences of medians, so only roughly additive):`,
        `    ${"raw SDK Client → fixture".padEnd(58)}  ${fmt(o.r.p50)} ms`,
        step("registry + McpToolset in process (registry† − raw)", o.reg.p50 - o.r.p50),
        step("SDK Server + in-memory hop (in-memory‡ − registry†)", o.m.p50 - o.reg.p50),
        step("a second process and stdio hop (serve − in-memory‡)", o.g.p50 - o.m.p50),
        `    floor: the plain SDK proxy* alone is ${fmt(o.p.p50 / o.r.p50, 2)}× raw (+${fmt(o.p.p50 - o.r.p50)} ms); serve is ${fmt(o.g.p50 / o.p.p50, 2)}× the proxy`,
        `  p50 ratio serve / raw: ${fmt(ratio)} (target <= ${TARGET}): ${missed ? "MISSED" : "ok"}`,
        `  closing the serve client (stdin end → CLI stopped its toolset and exited): ${fmt(closeMs.get("serve") ?? Number.NaN, 0)} ms`
      ].join("\n")
    )

    const c = await coldStart()
    const summary = (values: ReadonlyArray<number>) => {
      const sorted = ascending(values)
      return [fmt(median(sorted), 0), fmt(sorted[0] ?? Number.NaN, 0), fmt(sorted.at(-1) ?? Number.NaN, 0)]
    }
    console.log(
      `\n2. Cold start, ${COLD_RUNS} runs each (after one untimed run), interleaved; every run exited 0 on SIGTERM`
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
  if (missed) console.log(`TARGET MISSED: serve's p50 is above ${TARGET}× the raw SDK's`)
}

if (proxyMode) await proxy()
else await main()
