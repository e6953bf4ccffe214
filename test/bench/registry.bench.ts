/**
 * Registry benchmark (issue 5): `ToolsetRegistry.make` over N real stdio MCP servers (the MCP fixture
 * server, run with this Node), in one process with the real clock:
 *   1. start of N = 1, 10, 50: `ToolsetRegistry.make(config)` + `registry.start`, wall time until all
 *      Ready, against the cold start of one server alone (spawn + initialize + tools/list) through the
 *      registry with N = 1 and through a raw SDK `Client` + `StdioClientTransport`, measured in the
 *      same run; each N in a fresh scope that is closed, after which no server pid may be alive;
 *   2. `registry.catalog()` latency with 50 toolsets Ready (p50/p99 of 200 sequential calls);
 *   3. memory with 50 Ready: RSS and heapUsed of this process (GC forced first), and the summed
 *      VmRSS of the 50 server processes.
 * CPU time (this process, and each server's utime + stime from /proc) is reported next to the start
 * times, to tell the registry's own cost from CPU contention between the servers.
 *
 * Run: cd /work/main && npm run bench:registry   (needs node --expose-gc, set in the npm script)
 */

import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ServerProcess } from "@toolvisor/core"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { config, fixtureEntry, fixtureServer } from "../support/Registry.ts"
import {
  ascending,
  formatter,
  gc,
  max,
  median,
  min,
  percentile,
  processCpuMs,
  renderTable,
  sum,
  TICK_MS
} from "./stats.ts"

const SIZES = [1, 10, 50]
/** Cold starts of one server, per kind (registry N = 1, raw SDK), alternated; after one warm-up each. */
const SINGLES = 5
const CATALOG_WARMUP = 20
const CATALOG_CALLS = 200
const CORES = NodeOs.availableParallelism()
/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on Linux). */

/** Every server pid this run saw; none may be alive at the end. */
const pids = new Set<number>()

// ---- helpers -----------------------------------------------------------------------------------

const fmt = formatter(0)
const mib = (bytes: number) => fmt(bytes / 1024 / 1024, 1)

/** Resident set size (bytes) of a process, from /proc/<pid>/status; NaN if unreadable. */
const processRss = (pid: number): number => {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match?.[1] === undefined ? Number.NaN : Number(match[1]) * 1024
  } catch {
    return Number.NaN
  }
}

/** CPU time (ms) the whole machine spent busy so far (all processes, all cores), from /proc/stat. */
const machineBusyMs = (): number => {
  try {
    const fields = (NodeFs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1, 9)
    const ticks = fields.map(Number)
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    return (sum(ticks) - (ticks[3] ?? 0) - (ticks[4] ?? 0)) * TICK_MS
  } catch {
    return Number.NaN
  }
}

/** CPU time (ms) this process used since `before`, over all its threads. */
const cpuSince = (before: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

// ---- N servers through the registry, or through raw SDK clients -------------------------------

interface ColdStart {
  readonly wall: number
  /** CPU of this process over the start. */
  readonly runtimeCpu: number
  /** CPU the server(s) used up to Ready, summed. */
  readonly serverCpu: number
  /** CPU the rest of the machine (other processes) used over the start. */
  readonly otherCpu: number
}

interface Run extends ColdStart {
  readonly kind: "registry" | "raw SDK"
  readonly n: number
  /** Per server: ms from the start of `make` until it entered Ready (Clock millis). */
  readonly readyAt: ReadonlyArray<number>
  readonly serverCpus: ReadonlyArray<number>
  readonly toolCount: number
  readonly close: number
  readonly alive: ReadonlyArray<number>
}

/** What is measured while the N servers are Ready, before the scope closes. */
type WhileReady<A> = (registry: ToolsetRegistry.Registry, pids: ReadonlyArray<number>) => Effect.Effect<A>

const registryRun = <A>(n: number, whileReady: WhileReady<A>) =>
  Effect.gen(function* () {
    const entries = Array.from({ length: n }, (_, i) => fixtureEntry(`s${i}`, { prefix: `s${i}` }))
    const value = config(entries)
    // A child of the program's scope: closed here, or by the program if something fails first.
    const scope = yield* Scope.fork(yield* Effect.scope)
    gc("bench:registry")
    const busy = machineBusyMs()
    const before = process.cpuUsage()
    const epoch = Date.now()
    const start = performance.now()
    const registry = yield* ToolsetRegistry.make(value).pipe(Scope.provide(scope))
    yield* registry.start
    const wall = performance.now() - start
    const runtimeCpu = cpuSince(before)

    const board = yield* registry.snapshot
    const notReady = board.filter((s) => s.state !== "Ready")
    if (board.length !== n || notReady.length > 0) {
      return yield* Effect.die(new Error(`N=${n}: not all Ready: ${notReady.map((s) => `${s.name} ${s.state}`)}`))
    }
    const running = board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
    if (running.length !== n) return yield* Effect.die(new Error(`N=${n}: ${running.length} pids on the board`))
    for (const pid of running) pids.add(pid)
    const serverCpus = running.map(processCpuMs)
    const otherCpu = machineBusyMs() - busy - runtimeCpu - sum(serverCpus)
    const readyAt = board.map((s) => s.since - epoch)
    const toolCount = board[0]?.toolCount ?? 0

    const extra = yield* whileReady(registry, running)

    const closing = performance.now()
    yield* Scope.close(scope, Exit.void)
    const close = performance.now() - closing
    const alive = running.filter((pid) => ServerProcess.isAlive(pid))
    const run: Run = {
      kind: "registry",
      n,
      wall,
      runtimeCpu,
      serverCpu: sum(serverCpus),
      otherCpu,
      readyAt,
      serverCpus,
      toolCount,
      close,
      alive
    }
    return { run, extra }
  })

const nothing: WhileReady<void> = () => Effect.void

/**
 * N raw SDK `Client`s + `StdioClientTransport`s started at once (spawn + `initialize` +
 * `tools/list` each), then closed: what the same work costs with no registry or supervision.
 */
const rawRun = (n: number) =>
  Effect.promise(async (): Promise<Run> => {
    gc("bench:registry")
    const busy = machineBusyMs()
    const before = process.cpuUsage()
    const start = performance.now()
    const clients = await Promise.all(
      Array.from({ length: n }, async () => {
        const client = new Client({ name: "bench-raw", version: "0.0.0" }, { capabilities: {} })
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [fixtureServer],
          stderr: "ignore"
        })
        await client.connect(transport)
        const pid = transport.pid
        if (pid !== null) pids.add(pid)
        const { tools } = await client.listTools()
        return { client, pid, readyAt: performance.now() - start, toolCount: tools.length }
      })
    )
    const wall = performance.now() - start
    const runtimeCpu = cpuSince(before)
    const running = clients.flatMap((c) => (c.pid === null ? [] : [c.pid]))
    if (running.length !== n) throw new Error(`raw N=${n}: ${running.length} pids`)
    const serverCpus = running.map(processCpuMs)
    const otherCpu = machineBusyMs() - busy - runtimeCpu - sum(serverCpus)
    const closing = performance.now()
    await Promise.all(clients.map((c) => c.client.close()))
    const close = performance.now() - closing
    const alive = running.filter((pid) => ServerProcess.isAlive(pid))
    return {
      kind: "raw SDK",
      n,
      wall,
      runtimeCpu,
      serverCpu: sum(serverCpus),
      otherCpu,
      readyAt: clients.map((c) => c.readyAt),
      serverCpus,
      toolCount: clients[0]?.toolCount ?? 0,
      close,
      alive
    }
  })

// ---- 2. catalog latency, 3. memory (with the 50 Ready) -------------------------------------------

const catalogLatency = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    for (let i = 0; i < CATALOG_WARMUP; i++) yield* Effect.orDie(registry.catalog())
    const samples: Array<number> = []
    let tools = 0
    for (let i = 0; i < CATALOG_CALLS; i++) {
      const start = performance.now()
      const catalog = yield* Effect.orDie(registry.catalog())
      samples.push(performance.now() - start)
      if (!catalog.complete) return yield* Effect.die(new Error("the catalog is incomplete with every toolset Ready"))
      tools = catalog.tools.length
    }
    return { samples, tools }
  })

const memory = (running: ReadonlyArray<number>) =>
  Effect.sync(() => {
    gc("bench:registry")
    const usage = process.memoryUsage()
    const servers = running.map(processRss)
    return { rss: usage.rss, heapUsed: usage.heapUsed, servers }
  })

// ---- the program --------------------------------------------------------------------------------

const program = Effect.gen(function* () {
  yield* Console.log("Registry benchmark: ToolsetRegistry.make over N stdio MCP fixture servers (real processes)")
  yield* Console.log(
    `  Node ${process.version} (${process.platform}/${process.arch}, ${CORES} CPUs, ${NodeOs.cpus()[0]?.model ?? "?"})`
  )

  // ---- single cold starts, alternated, after a warm-up of each (file cache, JIT) ------------------
  yield* registryRun(1, nothing)
  yield* rawRun(1)
  const singles: Array<Run> = []
  const raws: Array<Run> = []
  for (let i = 0; i < SINGLES; i++) {
    if (i % 2 === 0) {
      singles.push((yield* registryRun(1, nothing)).run)
      raws.push(yield* rawRun(1))
    } else {
      raws.push(yield* rawRun(1))
      singles.push((yield* registryRun(1, nothing)).run)
    }
  }
  const slowest = max(singles.map((s) => s.wall))
  const typical = median(singles.map((s) => s.wall))
  /** The single cold starts of the same kind as a run (registry or raw SDK). */
  const singlesOf = (run: Run) => (run.kind === "registry" ? singles : raws).map((s) => s.wall)
  const singleServerCpu = median(singles.map((s) => s.serverCpu))

  // ---- 1. start of N -----------------------------------------------------------------------------
  // Each N through the registry, then the same N started at once with raw SDK clients (context).
  const runs: Array<Run> = []
  const context: Array<Run> = []
  for (const n of SIZES.filter((n) => n !== 50)) {
    runs.push((yield* registryRun(n, nothing)).run)
    if (n > 1) context.push(yield* rawRun(n))
  }
  gc("bench:registry")
  const baseline = process.memoryUsage()
  const big = yield* registryRun(50, (registry, running) =>
    Effect.gen(function* () {
      const mem = yield* memory(running)
      const catalog = yield* catalogLatency(registry)
      return { mem, catalog }
    })
  )
  runs.push(big.run)
  context.push(yield* rawRun(50))

  yield* Console.log(
    `\n1a. Cold start of one server (spawn + initialize + tools/list), ${SINGLES} each, alternated, after 1 warm-up`
  )
  const coldRow = (label: string, xs: ReadonlyArray<ColdStart>) => [
    label,
    fmt(median(xs.map((x) => x.wall))),
    fmt(min(xs.map((x) => x.wall))),
    fmt(max(xs.map((x) => x.wall))),
    fmt(median(xs.map((x) => x.runtimeCpu))),
    fmt(median(xs.map((x) => x.serverCpu))),
    fmt(median(xs.map((x) => x.otherCpu)))
  ]
  yield* Console.log(
    renderTable(
      ["ms", "median", "min", "max", "runtime CPU*", "server CPU†", "other CPU§"],
      [coldRow("registry, N = 1 (make + start)", singles), coldRow("raw SDK Client + StdioClientTransport", raws)]
    )
  )

  yield* Console.log(
    "\n1b. Start of N servers: ToolsetRegistry.make + registry.start until all Ready (fresh scope per N, closed after)"
  )
  yield* Console.log(
    renderTable(
      [
        "start of",
        "wall ms",
        "÷ slowest single",
        "÷ median single",
        "first Ready",
        "median Ready",
        "last Ready",
        "runtime CPU*",
        "servers CPU†",
        "CPU floor‡",
        "other CPU§",
        "close ms",
        "alive after close"
      ],
      [...runs, ...context].map((r) => [
        `${r.kind}, N = ${r.n}`,
        fmt(r.wall),
        fmt(r.wall / max(singlesOf(r)), 2),
        fmt(r.wall / median(singlesOf(r)), 2),
        fmt(min(r.readyAt)),
        fmt(median(r.readyAt)),
        fmt(max(r.readyAt)),
        fmt(r.runtimeCpu),
        fmt(r.serverCpu),
        fmt((r.runtimeCpu + r.serverCpu) / CORES),
        fmt(r.otherCpu),
        fmt(r.close),
        r.alive.length === 0 ? "none" : r.alive.join(",")
      ])
    )
  )
  yield* Console.log(
    [
      `  ÷ single: against the single cold starts of 1a of the same kind; registry: slowest ${fmt(slowest)} ms, median ${fmt(typical)} ms`,
      "  first/median/last Ready: ms from the start until each server entered Ready (registry: snapshot `since`;",
      "  raw SDK: its tools/list answered). The raw SDK rows are context: the same N started at once with no registry",
      "  * process.cpuUsage() of this process over the start (all its threads: JS, GC, libuv)",
      `  † utime + stime of the server process(es) up to Ready, from /proc/<pid>/stat (${TICK_MS} ms ticks), summed`,
      `  ‡ (runtime CPU + servers CPU) / ${CORES} cores: the wall time the CPU work alone needs on this machine`,
      "  § CPU ms the rest of the machine (other processes) used over the start, from /proc/stat: noise if far above 0",
      `  per-server CPU to Ready: ${fmt(singleServerCpu)} ms alone (median of 1a), ${fmt(median(big.run.serverCpus))} ms each among 50 (median)`
    ].join("\n")
  )

  // ---- 2. catalog ---------------------------------------------------------------------------------
  const cat = ascending(big.extra.catalog.samples)
  yield* Console.log(
    `\n2. registry.catalog() with 50 toolsets Ready: ${CATALOG_CALLS} sequential calls after ${CATALOG_WARMUP} warm-up (${big.extra.catalog.tools} tools, ${big.run.toolCount} per toolset)`
  )
  yield* Console.log(
    renderTable(
      ["ms per call", "p50", "p90", "p99", "max", "mean"],
      [
        [
          "catalog()",
          fmt(percentile(cat, 0.5), 3),
          fmt(percentile(cat, 0.9), 3),
          fmt(percentile(cat, 0.99), 3),
          fmt(max(cat), 3),
          fmt(sum(cat) / cat.length, 3)
        ]
      ]
    )
  )

  // ---- 3. memory ----------------------------------------------------------------------------------
  const mem = big.extra.mem
  yield* Console.log("\n3. Memory with 50 toolsets Ready (GC forced before each reading)")
  yield* Console.log(
    renderTable(
      ["MiB", "RSS", "heapUsed"],
      [
        ["this process, before the 50 started", mib(baseline.rss), mib(baseline.heapUsed)],
        ["this process, 50 Ready", mib(mem.rss), mib(mem.heapUsed)],
        ["  difference", mib(mem.rss - baseline.rss), mib(mem.heapUsed - baseline.heapUsed)],
        ["  difference per toolset", mib((mem.rss - baseline.rss) / 50), mib((mem.heapUsed - baseline.heapUsed) / 50)],
        ["50 server processes, VmRSS summed", mib(sum(mem.servers)), ""],
        [
          "  per server: median (min–max)",
          `${mib(median(mem.servers))} (${mib(min(mem.servers))}–${mib(max(mem.servers))})`,
          ""
        ]
      ]
    )
  )

  return { leaked: [...singles, ...raws, ...runs, ...context].flatMap((r) => r.alive) }
})

// ---- run ----------------------------------------------------------------------------------------

const started = performance.now()
const result = await Effect.runPromise(Effect.scoped(program))
// Everything is closed now: no server this run saw may be left.
const alive = [...pids].filter((pid) => ServerProcess.isAlive(pid))
console.log(
  `\nServer processes seen: ${pids.size}; alive right after each close: ${result.leaked.length === 0 ? "none" : result.leaked.join(", ")}; alive at the end: ${alive.length === 0 ? "none" : alive.join(", ")}`
)
console.log(`total ${fmt((performance.now() - started) / 1000, 1)} s`)
if (alive.length > 0 || result.leaked.length > 0) {
  for (const pid of alive) process.kill(pid, "SIGKILL")
  process.exitCode = 1
}
