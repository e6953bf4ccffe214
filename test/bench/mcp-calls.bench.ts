/**
 * MCP call benchmark: a supervised `McpToolset` against a raw SDK `Client` + `StdioClientTransport`,
 * both on `@modelcontextprotocol/server-everything` over stdio, measured in the same run:
 *   1. call overhead: p50/p99 of sequential `echo` calls, the two series alternated in ABBA blocks;
 *   2. throughput with 32 calls in flight: 32 workers on each side, each calling in a loop (async
 *      functions for the raw client, fibers for the toolset), alternated in rounds, median of rounds;
 *   3. crash recovery: SIGKILL the server, time until Ready with a new pid (via `changes`), minus
 *      the configured backoff; next to it, what a fresh SDK client needs to spawn and initialize.
 * A third, diagnostic series calls the toolset's own SDK client directly (its PipeTransport,
 * no supervision), to tell transport cost from supervision cost.
 *
 * Both servers are the same kind of process: the toolset spawns its server as the leader of a
 * session of its own (so that closing reaches its whole group), and the raw client's server is
 * started through `setsid` with the same environment. Under the kernel's autogroup scheduling a
 * session leader gets a CPU share of its own, so spawning only one of them that way would measure
 * the scheduler rather than the code.
 *
 * Run: cd /work/main && npm run bench:mcp   (needs node --expose-gc, set in the npm script)
 */

import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Policy, ServerProcess, type State } from "@toolvisor/core"
import { McpSpec, McpToolset } from "@toolvisor/mcp"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { ascending, formatter, gc, median, percentile, renderTable, sum } from "./stats.ts"

const SEQ_WARMUP = 200
const SEQ_BLOCK = 500
/** Blocks per series; run in ABBA order so drift falls on both alike. */
const SEQ_BLOCKS = 4
const CONCURRENCY = 32
/** Long enough (about half a second) that a round is not one scheduler hiccup on a shared machine. */
const CONC_CALLS = 10_000
const CONC_WARMUP = 2_000
/** Odd, for a true median; alternated so drift falls on every series alike. */
const CONC_ROUNDS = 7
const CRASHES = 10
const FRESH_SPAWNS = 5
const BACKOFF_MS = 100
const RECOVERY_TIMEOUT = "20 seconds"

const root = NodePath.resolve(import.meta.dirname, "../..")
const everythingDir = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything")
const everythingBin = NodePath.join(everythingDir, "dist/index.js")
const serverArgs = [everythingBin, "stdio"]
/** The toolset's server inherits this process's environment; the raw one gets the same. */
const serverEnv = Object.fromEntries(
  Object.entries(process.env).flatMap(([key, value]) => (value === undefined ? [] : [[key, value]]))
)

const PackageJson = Schema.Struct({ version: Schema.String })
const packageVersion = (dir: string) =>
  Schema.decodeUnknownSync(PackageJson)(JSON.parse(NodeFs.readFileSync(NodePath.join(dir, "package.json"), "utf8")))
    .version

const policy = Policy.fromLifecycleUnknownSync({
  backoff: { initial: `${BACKOFF_MS}ms`, max: `${BACKOFF_MS}ms` },
  max_restarts: -1
})

const echoArgs = { message: "x" }

/** Every server pid this run saw; none may be alive at the end. */
const pids = new Set<number>()

// ---- helpers -----------------------------------------------------------------------------------

const fmt = formatter(3)

const verdict = (ok: boolean) => (ok ? "ok" : "MISSED")

// ---- the raw SDK baseline -----------------------------------------------------------------------

interface Raw {
  readonly client: Client
  readonly pid: number
}

/** Spawns the server and runs `initialize` with the SDK's own stdio transport, as a Promise. */
const connectRawPromise = async (): Promise<Raw> => {
  const client = new Client({ name: "bench-raw", version: "0.0.0" }, { capabilities: {} })
  // `setsid` execs the server in place (same pid), as the leader of its own session, as the toolset's is.
  const transport = new StdioClientTransport({
    command: "setsid",
    args: [process.execPath, ...serverArgs],
    env: { ...serverEnv },
    stderr: "ignore"
  })
  await client.connect(transport)
  const pid = transport.pid
  if (pid === null) throw new Error("the SDK transport has no pid")
  pids.add(pid)
  return { client, pid }
}

/** A raw client for the whole run, closed with the program's scope. */
const rawClient = Effect.acquireRelease(Effect.promise(connectRawPromise), (raw) =>
  Effect.promise(() => raw.client.close())
)

/** Latencies of one series, and the CPU this process spent on it (all threads: JS, GC, I/O). */
interface Series {
  readonly samples: Array<number>
  cpuMicros: number
}

const makeSeries = (): Series => ({ samples: [], cpuMicros: 0 })

const withCpu = <A, E, R>(series: Series, effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const before = process.cpuUsage()
    return Effect.ensuring(
      effect,
      Effect.sync(() => {
        const used = process.cpuUsage(before)
        series.cpuMicros += used.user + used.system
      })
    )
  })

/** Sequential calls, timed one by one, in plain async code (no Effect on the baseline's path). */
const promiseSeries = (client: Client, n: number, series: Series) =>
  withCpu(
    series,
    Effect.promise(async () => {
      for (let i = 0; i < n; i++) {
        const start = performance.now()
        await client.callTool({ name: "echo", arguments: echoArgs })
        series.samples.push(performance.now() - start)
      }
    })
  )

/** One concurrent round: how long it took, and the CPU this process spent on it. */
interface Round {
  readonly ms: number
  readonly cpuMicros: number
}

const timedRound = <E, R>(effect: Effect.Effect<void, E, R>): Effect.Effect<Round, E, R> =>
  Effect.suspend(() => {
    const cpu = process.cpuUsage()
    const start = performance.now()
    return Effect.map(effect, () => {
      const ms = performance.now() - start
      const used = process.cpuUsage(cpu)
      return { ms, cpuMicros: used.user + used.system }
    })
  })

/** `total` calls by `CONCURRENCY` async workers, each calling in a loop (no Effect on the baseline's path). */
const promiseConcurrent = (client: Client, total: number) =>
  timedRound(
    Effect.promise(async () => {
      let issued = 0
      const worker = async () => {
        while (issued < total) {
          issued += 1
          await client.callTool({ name: "echo", arguments: echoArgs })
        }
      }
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    })
  )

/** A fresh SDK client: spawn + `initialize`, then `tools/list`; closed before returning. */
const freshSpawn = Effect.promise(async () => {
  const start = performance.now()
  const spawned = await connectRawPromise()
  const connected = performance.now()
  await spawned.client.listTools()
  const listed = performance.now()
  await spawned.client.close()
  return { connect: connected - start, list: listed - start }
})

// ---- the toolset --------------------------------------------------------------------------------

const toolsetSeries = (toolset: McpToolset.McpToolset, n: number, series: Series) =>
  withCpu(
    series,
    Effect.gen(function* () {
      for (let i = 0; i < n; i++) {
        const start = performance.now()
        yield* toolset.callTool("echo", echoArgs)
        series.samples.push(performance.now() - start)
      }
    })
  )

/**
 * `total` calls by `CONCURRENCY` fibers, each calling in a loop: the same shape as the raw
 * workers. (`Effect.forEach` with `concurrency` would fork a fiber per call, a cost of the
 * caller's loop rather than of the toolset.)
 */
const toolsetConcurrent = (toolset: McpToolset.McpToolset, total: number) =>
  timedRound(
    Effect.suspend(() => {
      let issued = 0
      const worker = Effect.whileLoop({
        while: () => issued < total,
        body: () => {
          issued += 1
          return toolset.callTool("echo", echoArgs)
        },
        step: () => {}
      })
      return Effect.all(
        Array.from({ length: CONCURRENCY }, () => worker),
        { concurrency: "unbounded", discard: true }
      )
    })
  )

/** The live session's own SDK client (PipeTransport, no supervision): a diagnostic series. */
const sessionClient = (toolset: McpToolset.McpToolset) =>
  toolset.supervisor.use((session) => Effect.succeed(session.client))

const isNewReady = (old: number) => (s: State.StatusSnapshot) =>
  s.state === "Ready" && s.pid !== undefined && s.pid !== old

/** SIGKILLs the server and times the way back to Ready with a new pid, through `changes`. */
const crashOnce = (toolset: McpToolset.McpToolset) =>
  Effect.gen(function* () {
    const before = yield* toolset.state
    const old = before.pid
    if (before.state !== "Ready" || old === undefined) return yield* Effect.die(new Error("toolset not Ready"))
    let restartingAt: number | undefined
    let readySeenAt: number | undefined
    // Subscribed before the kill: `changes` replays the current snapshot, then every change.
    const watcher = yield* toolset.changes.pipe(
      Stream.tap((s) =>
        Effect.sync(() => {
          if (s.state === "Restarting" && restartingAt === undefined) restartingAt = performance.now()
          if (isNewReady(old)(s) && readySeenAt === undefined) readySeenAt = performance.now()
        })
      ),
      Stream.filter(isNewReady(old)),
      Stream.runHead,
      Effect.timeoutOrElse({
        duration: RECOVERY_TIMEOUT,
        orElse: () => Effect.die(new Error(`no Ready with a new pid within ${RECOVERY_TIMEOUT}`))
      }),
      Effect.forkChild({ startImmediately: true })
    )
    const killedAt = performance.now()
    process.kill(old, "SIGKILL")
    // A call that arrives during the restart: it waits for the new session and answers there.
    yield* toolset.changes.pipe(
      Stream.filter((s) => s.state === "Restarting"),
      Stream.runHead
    )
    yield* toolset.callTool("echo", echoArgs)
    const answeredAt = performance.now()
    const ready = yield* Fiber.join(watcher)
    const readyAt = readySeenAt ?? performance.now()
    const pid = ready._tag === "Some" ? ready.value.pid : undefined
    if (pid !== undefined) pids.add(pid)
    // The new session answers.
    yield* toolset.callTool("echo", echoArgs)
    return {
      total: readyAt - killedAt,
      answered: answeredAt - killedAt,
      detect: (restartingAt ?? readyAt) - killedAt,
      reconnect: readyAt - (restartingAt ?? readyAt)
    }
  })

// ---- the program --------------------------------------------------------------------------------

const program = Effect.gen(function* () {
  const raw = yield* rawClient
  yield* Effect.promise(() => raw.client.listTools()) // as the toolset does at connect
  const rawServer = raw.client.getServerVersion()

  const spec = McpSpec.Stdio.make({ command: process.execPath, args: serverArgs })
  const toolset = yield* McpToolset.make({ name: "everything", spec, policy })
  yield* toolset.start
  const status = yield* toolset.state
  if (status.pid !== undefined) pids.add(status.pid)
  const direct = yield* sessionClient(toolset)

  yield* Console.log("MCP call benchmark: McpToolset vs raw SDK Client, server-everything over stdio")
  const callTimeout = policy.callTimeout === undefined ? "none" : Duration.format(policy.callTimeout)
  yield* Console.log(
    [
      `  Node ${process.version} (${process.platform}/${process.arch}, ${NodeOs.availableParallelism()} CPUs)`,
      `  @modelcontextprotocol/sdk ${packageVersion(NodePath.join(root, "node_modules/@modelcontextprotocol/sdk"))}`,
      `  server: @modelcontextprotocol/server-everything ${packageVersion(everythingDir)}, serverInfo ${rawServer?.name ?? "?"} ${rawServer?.version ?? "?"} (the toolset sees ${status.server?.name ?? "?"} ${status.server?.version ?? "?"}, ${status.toolCount ?? "?"} tools)`,
      `  toolset policy: call_timeout ${callTimeout}, backoff ${BACKOFF_MS}ms fixed, max_restarts -1`
    ].join("\n")
  )

  // ---- 1. sequential call overhead ---------------------------------------------------------------
  yield* promiseSeries(raw.client, SEQ_WARMUP, makeSeries())
  yield* toolsetSeries(toolset, SEQ_WARMUP, makeSeries())
  yield* promiseSeries(direct, SEQ_WARMUP, makeSeries())

  const rawSeries = makeSeries()
  const toolsetSeriesData = makeSeries()
  const directSeries = makeSeries()
  const seqStart = performance.now()
  for (let block = 0; block < SEQ_BLOCKS; block++) {
    // ABBA: toolset, raw, raw, toolset, … (the direct series rides along in the middle)
    const toolsetFirst = block % 2 === 0
    gc("bench:mcp")
    if (toolsetFirst) yield* toolsetSeries(toolset, SEQ_BLOCK, toolsetSeriesData)
    else yield* promiseSeries(raw.client, SEQ_BLOCK, rawSeries)
    gc("bench:mcp")
    yield* promiseSeries(direct, SEQ_BLOCK, directSeries)
    gc("bench:mcp")
    if (toolsetFirst) yield* promiseSeries(raw.client, SEQ_BLOCK, rawSeries)
    else yield* toolsetSeries(toolset, SEQ_BLOCK, toolsetSeriesData)
  }
  const seqMs = performance.now() - seqStart

  const stats = ({ samples, cpuMicros }: Series) => {
    const sorted = ascending(samples)
    return {
      p50: percentile(sorted, 0.5),
      p90: percentile(sorted, 0.9),
      p99: percentile(sorted, 0.99),
      mean: sum(samples) / samples.length,
      cpu: cpuMicros / samples.length / 1000
    }
  }
  const t = stats(toolsetSeriesData)
  const r = stats(rawSeries)
  const d = stats(directSeries)
  const p50Ratio = t.p50 / r.p50

  yield* Console.log(
    `\n1. Sequential echo calls: ${SEQ_BLOCKS} × ${SEQ_BLOCK} per series after ${SEQ_WARMUP} warm-up, ABBA blocks (${fmt(seqMs / 1000, 1)} s)`
  )
  yield* Console.log(
    renderTable(
      ["ms per call", "toolset", "raw SDK", "ratio", "Δ ms", "target", "", "session client*"],
      [
        [
          "p50",
          fmt(t.p50),
          fmt(r.p50),
          fmt(p50Ratio),
          fmt(t.p50 - r.p50),
          "<= 1.05",
          verdict(p50Ratio <= 1.05),
          fmt(d.p50)
        ],
        ["p90", fmt(t.p90), fmt(r.p90), fmt(t.p90 / r.p90), fmt(t.p90 - r.p90), "", "", fmt(d.p90)],
        ["p99", fmt(t.p99), fmt(r.p99), fmt(t.p99 / r.p99), fmt(t.p99 - r.p99), "", "", fmt(d.p99)],
        ["mean", fmt(t.mean), fmt(r.mean), fmt(t.mean / r.mean), fmt(t.mean - r.mean), "", "", fmt(d.mean)],
        ["CPU ms/call†", fmt(t.cpu), fmt(r.cpu), fmt(t.cpu / r.cpu), fmt(t.cpu - r.cpu), "", "", fmt(d.cpu)]
      ]
    )
  )
  yield* Console.log(
    [
      "  * the toolset's own SDK Client over its PipeTransport, called directly (no supervision): a diagnostic",
      "  † process.cpuUsage() of this process over the series (all threads: JS, GC, libuv), per call"
    ].join("\n")
  )

  // ---- 2. concurrent throughput ------------------------------------------------------------------
  const concurrentSeries = [
    { label: "toolset", run: (n: number) => toolsetConcurrent(toolset, n) },
    { label: "raw SDK", run: (n: number) => promiseConcurrent(raw.client, n) },
    { label: "session client*", run: (n: number) => promiseConcurrent(direct, n) }
  ]
  for (const series of concurrentSeries) yield* series.run(CONC_WARMUP)
  const rounds = new Map<string, Array<Round>>(concurrentSeries.map((series) => [series.label, []]))
  const concStart = performance.now()
  for (let round = 0; round < CONC_ROUNDS; round++) {
    // ABBA over rounds: toolset, raw, session; session, raw, toolset; …
    const order = round % 2 === 0 ? concurrentSeries : [...concurrentSeries].reverse()
    for (const series of order) {
      gc("bench:mcp")
      rounds.get(series.label)?.push(yield* series.run(CONC_CALLS))
    }
  }
  const concSeconds = (performance.now() - concStart) / 1000
  const rates = (label: string) => (rounds.get(label) ?? []).map((r) => CONC_CALLS / (r.ms / 1000))
  const cpuPerCall = (label: string) => median((rounds.get(label) ?? []).map((r) => r.cpuMicros / CONC_CALLS))
  const tRate = median(rates("toolset"))
  const rRate = median(rates("raw SDK"))
  const dRate = median(rates("session client*"))
  const rateRatio = tRate / rRate

  yield* Console.log(
    `\n2. Concurrent echo calls: ${CONC_CALLS} per round, ${CONCURRENCY} workers in flight, ${CONC_ROUNDS} rounds per series after ${CONC_WARMUP} warm-up, alternated (${fmt(concSeconds, 1)} s)`
  )
  yield* Console.log(
    renderTable(
      ["calls/s", "toolset", "raw SDK", "ratio", "target", "", "session client*"],
      [
        ["median", fmt(tRate, 0), fmt(rRate, 0), fmt(rateRatio), ">= 0.95", verdict(rateRatio >= 0.95), fmt(dRate, 0)],
        [
          "CPU µs/call‡",
          fmt(cpuPerCall("toolset"), 1),
          fmt(cpuPerCall("raw SDK"), 1),
          fmt(cpuPerCall("toolset") / cpuPerCall("raw SDK")),
          "",
          "",
          fmt(cpuPerCall("session client*"), 1)
        ]
      ]
    )
  )
  yield* Console.log(
    concurrentSeries
      .map(
        ({ label }) =>
          `  rounds, ${label}: ${rates(label)
            .map((x) => fmt(x, 0))
            .join(" ")}`
      )
      .join("\n")
  )
  yield* Console.log(
    "  ‡ process.cpuUsage() of this process per call, median of rounds (the servers' CPU is not included)"
  )

  // ---- 3. crash recovery --------------------------------------------------------------------------
  // The fresh spawns are interleaved with the crashes, so both see the same machine.
  const recoveries: Array<{
    readonly total: number
    readonly answered: number
    readonly detect: number
    readonly reconnect: number
  }> = []
  const fresh: Array<{ readonly connect: number; readonly list: number }> = []
  const every = Math.max(1, Math.floor(CRASHES / FRESH_SPAWNS))
  for (let i = 0; i < CRASHES; i++) {
    recoveries.push(yield* crashOnce(toolset))
    if (i % every === every - 1 && fresh.length < FRESH_SPAWNS) fresh.push(yield* freshSpawn)
  }

  const after = (values: ReadonlyArray<number>) => values.map((v) => v - BACKOFF_MS)
  const summary = (values: ReadonlyArray<number>) => {
    const sorted = ascending(values)
    return [fmt(percentile(sorted, 0.5), 1), fmt(sorted[0] ?? Number.NaN, 1), fmt(sorted.at(-1) ?? Number.NaN, 1)]
  }
  const endStatus = yield* toolset.state

  yield* Console.log(
    `\n3. Crash recovery: SIGKILL the server pid, wait for Ready with a new pid (${CRASHES} crashes; restarts now ${endStatus.restarts})`
  )
  yield* Console.log(
    renderTable(
      ["ms", "median", "min", "max"],
      [
        [`kill → Ready, minus ${BACKOFF_MS} ms backoff`, ...summary(after(recoveries.map((x) => x.total)))],
        [
          `kill → answer of a call made while Restarting, minus ${BACKOFF_MS} ms`,
          ...summary(after(recoveries.map((x) => x.answered)))
        ],
        ["  kill → Restarting (detection)", ...summary(recoveries.map((x) => x.detect))],
        [`  Restarting → Ready, minus ${BACKOFF_MS} ms backoff`, ...summary(after(recoveries.map((x) => x.reconnect)))],
        ["kill → Ready, raw", ...summary(recoveries.map((x) => x.total))],
        [`context: fresh SDK Client spawn + initialize (${FRESH_SPAWNS}×)`, ...summary(fresh.map((x) => x.connect))],
        ["context: … + tools/list (the toolset lists at connect)", ...summary(fresh.map((x) => x.list))]
      ]
    )
  )
  const overhead = median(after(recoveries.map((x) => x.total))) - median(fresh.map((x) => x.list))
  yield* Console.log(`  recovery beyond a fresh spawn + initialize + tools/list (medians): ${fmt(overhead, 1)} ms`)

  return {
    ok: p50Ratio <= 1.05 && rateRatio >= 0.95,
    summary: `p50 ratio ${fmt(p50Ratio)} (target <= 1.05), throughput ratio ${fmt(rateRatio)} (target >= 0.95)`
  }
})

// ---- run ----------------------------------------------------------------------------------------

const started = performance.now()
const result = await Effect.runPromise(Effect.scoped(program))
// Everything is closed now: no server this run saw may be left.
const alive = [...pids].filter((pid) => ServerProcess.isAlive(pid))
console.log(
  `\nServer processes seen: ${pids.size}; alive after close: ${alive.length === 0 ? "none" : alive.join(", ")}`
)
console.log(`${result.ok ? "OK" : "TARGET MISSED"}: ${result.summary}`)
console.log(`total ${fmt((performance.now() - started) / 1000, 1)} s`)
if (alive.length > 0) {
  for (const pid of alive) process.kill(pid, "SIGKILL")
  process.exitCode = 1
}
