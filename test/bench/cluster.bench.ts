/**
 * Cluster benchmark (issue 7), all on 127.0.0.1 with a throwaway PostgreSQL server and the
 * journal MCP server (a real stdio process) as the toolset:
 *   1. call latency, p50/p99 of sequential calls of a read-only tool (`echo`), in the same run:
 *      the in-process registry (no cluster) vs a cluster registry in a process that is itself the
 *      only runner (same-runner) vs a client-only process calling a runner process (cross-runner);
 *   2. the call ledger: the same cross-runner path and the same echo, once annotated read-only
 *      (no ledger) and once not (`echo_unmarked`: one SQL insert per call), interleaved;
 *   3. throughput with 16 concurrent callers, in-process vs cross-runner, with the CPU each process
 *      spent per call; beside them a bare effect/cluster round trip (`cluster-bare.ts`: the same
 *      `CallTool` RPC, answered at once by an entity on a runner of its own cluster), the floor
 *      of what a call through the cluster's RPC costs before any of Toolvisor's own work: calls
 *      take the runner's call lane instead (`LaneServer`), and this row shows what that saves;
 *   4. failover with two runner processes and the test timers (4 s lease): from SIGKILL (and from
 *      SIGTERM) of the runner hosting the toolset until the registry shows it Ready on the other,
 *      three times each.
 *
 * Run: cd /work/main && npm run bench:cluster
 */
import * as ChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import * as Procfs from "@toolvisor/core/internal/procfs"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as SqlClient from "effect/sql/SqlClient"
import buildBundle from "../../apps/cli/test/bundle.setup.ts"
import * as ClusterClient from "../../packages/cluster/src/ClusterClient.ts"
import * as ClusterRegistry from "../../packages/cluster/src/ClusterRegistry.ts"
import * as ClusterRunner from "../../packages/cluster/src/ClusterRunner.ts"
import * as Orphans from "../../packages/cluster/src/internal/orphans.ts"
import { config, journalEntry } from "../../packages/cluster/test/helpers.ts"
import * as Postgres from "../../packages/cluster/test/Postgres.ts"
import { type RunnerProcess, startRunner, stopRunner, timers } from "../../packages/cluster/test/Runners.ts"
import { BareEntity } from "./cluster-bare.ts"
import { ascending, formatter, median, percentile, renderTable } from "./stats.ts"

const calls = 2_000
const warmup = 200
const concurrentCallers = 16
const concurrentCalls = 4_000
const failovers = 3
const ms = formatter(3)
const journals = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-bench-cluster-"))
const entry = journalEntry("bench", { env: { JOURNAL_FILE: NodePath.join(journals, "journal") } })
const setup = config([entry])

/** Latencies (ms) of `n` sequential calls, after a warm-up. */
const latencies = (registry: ToolsetRegistry.Registry, tool: string, n: number) =>
  Effect.gen(function* () {
    const args = { message: "x" }
    for (let i = 0; i < warmup; i++) yield* registry.callTool(tool, args)
    const out: Array<number> = []
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      yield* registry.callTool(tool, args)
      out.push(performance.now() - started)
    }
    return ascending(out)
  })

/** CPU time (ms) a process has spent so far; this process's own when `pid` is not given. */
const cpuMs = (pid?: number): number => {
  if (pid === undefined) {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  const stat = Procfs.stat(pid)
  // Clock ticks of 10 ms (USER_HZ 100).
  return stat === undefined ? Number.NaN : (stat.utime + stat.stime) * 10
}

/**
 * Calls per second with `callers` concurrent callers sharing `total` calls, and the CPU time (ms)
 * per call of this process and of each of `pids`.
 */
const throughput = (
  call: Effect.Effect<unknown, unknown>,
  callers: number,
  total: number,
  pids: ReadonlyArray<number | undefined> = []
) =>
  Effect.gen(function* () {
    const before = [cpuMs(), ...pids.map(cpuMs)]
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: callers }),
      () =>
        Effect.gen(function* () {
          for (let i = 0; i < total / callers; i++) yield* call
        }),
      { concurrency: "unbounded", discard: true }
    )
    const rate = total / ((performance.now() - started) / 1000)
    const after = [cpuMs(), ...pids.map(cpuMs)]
    return { rate, cpu: after.map((ms, i) => (ms - (before[i] ?? 0)) / total) }
  })

const echo = (registry: ToolsetRegistry.Registry) => registry.callTool("bench_echo", { message: "x" })

/** The bare round trip's runner (`cluster-bare.ts`), from the sources. */
const startBare = (postgres: string, port: number) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess.ChildProcess, Error>((resume) => {
      const child = ChildProcess.spawn(
        process.execPath,
        [
          "--conditions=@toolvisor/source",
          NodePath.join(import.meta.dirname, "cluster-bare.ts"),
          postgres,
          String(port)
        ],
        { stdio: ["ignore", "pipe", "pipe"] }
      )
      let stderr = ""
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-4000)
      })
      child.stdout?.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("is up")) resume(Effect.succeed(child))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`bare runner exited ${code}: ${stderr}`))))
    }),
    (child) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** p50 (ms) of `n` sequential calls after a warm-up, and the throughput of `callers` callers, for the bare round trip. */
const bareRoundTrip = (url: string, port: number) =>
  Effect.scoped(
    Effect.gen(function* () {
      const admin = yield* Layer.build(ClusterClient.database(url))
      const database = "bench_bare"
      yield* SqlClient.SqlClient.pipe(
        Effect.flatMap((sql) => sql.unsafe(`CREATE DATABASE ${database}`)),
        Effect.provideContext(admin)
      )
      const bareUrl = url.replace(/\/[^/]*$/, `/${database}`)
      const runner = yield* startBare(bareUrl, port)
      const context = yield* Layer.build(ClusterClient.layer({ postgres: bareUrl, timers }))
      const client = yield* BareEntity.client.pipe(Effect.provideContext(context))
      const entity = client("bare")
      const call = Effect.suspend(() =>
        entity.CallTool({ tool: "echo", args: { message: "x" }, callId: crypto.randomUUID(), sentAt: Date.now() })
      )
      // Taking its shards first, as for the toolset's runner.
      yield* Effect.sleep("5 seconds")
      for (let i = 0; i < warmup; i++) yield* call
      const out: Array<number> = []
      for (let i = 0; i < calls; i++) {
        const started = performance.now()
        yield* call
        out.push(performance.now() - started)
      }
      return { latency: ascending(out), ...(yield* throughput(call, concurrentCallers, concurrentCalls, [runner.pid])) }
    })
  )

const started = (registry: ToolsetRegistry.Registry) =>
  Effect.andThen(
    registry.start,
    registry.snapshot.pipe(
      Effect.repeat({
        schedule: Schedule.spaced("100 millis"),
        until: (board) => board.every((s) => s.state === "Ready")
      })
    )
  )

const row = (name: string, sorted: ReadonlyArray<number>, baseline?: ReadonlyArray<number>) => [
  name,
  ms(percentile(sorted, 0.5)),
  ms(percentile(sorted, 0.99)),
  baseline === undefined ? "1.00" : formatter(2)(percentile(sorted, 0.5) / percentile(baseline, 0.5))
]

const runnerOf = (pid: number | undefined): string | undefined =>
  pid === undefined ? undefined : Orphans.markOf(pid)?.runner

/** Seconds from `act` until the toolset is Ready with a new server, started by another runner than `from`. */
const failover = (registry: ToolsetRegistry.Registry, from: string, act: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const before = new Set((yield* registry.snapshot).map((s) => s.pid))
    const t0 = performance.now()
    yield* act
    yield* registry.snapshot.pipe(
      Effect.repeat({
        schedule: Schedule.spaced("20 millis"),
        until: (board) =>
          board.every((s) => {
            const host = runnerOf(s.pid)
            return s.state === "Ready" && !before.has(s.pid) && host !== undefined && host !== from
          })
      })
    )
    return (performance.now() - t0) / 1000
  })

const program = Effect.gen(function* () {
  const { url } = yield* Postgres.Postgres
  yield* Console.log(
    `cluster benchmark: ${calls} sequential calls, ${concurrentCallers} callers, ${failovers} failovers`
  )

  // 1. In-process registry, no cluster.
  const local = yield* Effect.scoped(
    Effect.gen(function* () {
      const registry = yield* ToolsetRegistry.make(setup)
      yield* started(registry)
      return {
        echo: yield* latencies(registry, "bench_echo", calls),
        rate: yield* throughput(echo(registry), concurrentCallers, concurrentCalls, [
          (yield* registry.snapshot)[0]?.pid
        ])
      }
    })
  )

  // 2. This process is the only runner: the entity is local, reached through Sharding.
  const sameRunner = yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(ClusterRunner.layer({ postgres: url, host: "127.0.0.1", port: 24481, timers }))
      const registry = yield* ClusterRegistry.make(setup).pipe(Effect.provideContext(context))
      yield* started(registry)
      const echo = yield* latencies(registry, "bench_echo", calls)
      yield* registry.stopToolset("bench")
      return echo
    })
  )

  // 3. A client-only process and runner processes.
  const runners = new Map<string, RunnerProcess>()
  yield* Effect.addFinalizer(() => Effect.forEach([...runners.values()], stopRunner, { discard: true }))
  const first = yield* startRunner(url, 34482)
  runners.set(first.id, first)
  const context = yield* Layer.build(ClusterClient.layer({ postgres: url, timers }))
  const registry = yield* ClusterRegistry.make(setup).pipe(Effect.provideContext(context))
  yield* started(registry)
  // A runner that has just started is still taking its shards; measured at once, calls are 2-3× slower.
  yield* Effect.sleep("5 seconds")
  const ledger: Array<number> = []
  const readOnly: Array<number> = []
  for (let round = 0; round < 4; round++) {
    readOnly.push(...(yield* latencies(registry, "bench_echo", calls / 4)))
    ledger.push(...(yield* latencies(registry, "bench_echo_unmarked", calls / 4)))
  }
  const cross = ascending(readOnly)
  const rate = yield* throughput(echo(registry), concurrentCallers, concurrentCalls, [
    first.child.pid,
    (yield* registry.snapshot)[0]?.pid
  ])
  const bare = yield* bareRoundTrip(url, 34484)

  yield* Console.log("\ncall latency (ms), read-only tool")
  yield* Console.log(
    renderTable(
      ["path", "p50", "p99", "p50 ratio"],
      [
        row("in-process registry", local.echo),
        row("cluster, same runner", sameRunner, local.echo),
        row("cluster, cross-runner (client → runner process)", cross, local.echo),
        row("bare effect/cluster round trip (no toolset)", bare.latency, local.echo)
      ]
    )
  )
  yield* Console.log("\ncall ledger: cross-runner, interleaved rounds (the read-only rounds are the row above)")
  yield* Console.log(
    renderTable(
      ["tool", "p50", "p99", "p50 ratio"],
      [
        row("echo (read-only: no ledger)", ascending(readOnly)),
        row("echo_unmarked (same work, one SQL insert)", ascending(ledger), ascending(readOnly))
      ]
    )
  )
  yield* Console.log(
    `  ledger cost per call: p50 +${ms(percentile(ascending(ledger), 0.5) - percentile(ascending(readOnly), 0.5))} ms`
  )
  const cpu = (per: ReadonlyArray<number>, i: number) => (per[i] === undefined ? "-" : ms(per[i] ?? Number.NaN))
  yield* Console.log(
    `\nthroughput with ${concurrentCallers} concurrent callers (calls/s), and CPU ms per call by process`
  )
  yield* Console.log(
    renderTable(
      ["path", "calls/s", "ratio", "caller", "runner", "server"],
      [
        [
          "in-process registry",
          formatter(0)(local.rate.rate),
          "1.00",
          cpu(local.rate.cpu, 0),
          "-",
          cpu(local.rate.cpu, 1)
        ],
        [
          "cluster, cross-runner",
          formatter(0)(rate.rate),
          formatter(2)(rate.rate / local.rate.rate),
          cpu(rate.cpu, 0),
          cpu(rate.cpu, 1),
          cpu(rate.cpu, 2)
        ],
        [
          "bare effect/cluster round trip",
          formatter(0)(bare.rate),
          formatter(2)(bare.rate / local.rate.rate),
          cpu(bare.cpu, 0),
          cpu(bare.cpu, 1),
          "-"
        ]
      ]
    )
  )

  // 4. Failover between two runner processes.
  const second = yield* startRunner(url, 34483)
  runners.set(second.id, second)
  const kills: Array<number> = []
  const terms: Array<number> = []
  for (let i = 0; i < failovers * 2; i++) {
    const [status] = yield* registry.snapshot
    const host = runnerOf(status?.pid) ?? ""
    const victim = runners.get(host)
    if (victim === undefined) return yield* Effect.die(new Error(`no runner ${host}`))
    const signal = i % 2 === 0 ? "SIGKILL" : "SIGTERM"
    const seconds = yield* failover(
      registry,
      host,
      Effect.sync(() => victim.child.kill(signal))
    )
    ;(signal === "SIGKILL" ? kills : terms).push(seconds)
    yield* Effect.promise(() => victim.exited)
    runners.delete(host)
    const port = Number(host.split(":")[1])
    const back = yield* startRunner(url, port)
    runners.set(back.id, back)
    // Let the shards settle back before the next round.
    yield* started(registry)
    yield* Effect.sleep("3 seconds")
    yield* started(registry)
  }
  yield* registry.stopToolset("bench")
  yield* Console.log(`\nfailover, 4 s lease: until Ready on the other runner (s)`)
  yield* Console.log(
    renderTable(
      ["event", "runs", "median", "all"],
      [
        ["SIGKILL", String(kills.length), formatter(2)(median(kills)), kills.map((s) => formatter(2)(s)).join(" ")],
        ["SIGTERM", String(terms.length), formatter(2)(median(terms)), terms.map((s) => formatter(2)(s)).join(" ")]
      ]
    )
  )
}).pipe(Effect.scoped, Effect.provide(Postgres.layer))

// The runner processes run the CLI's bundle: rebuilt first if a source is newer.
await buildBundle()
NodeRuntime.runMain(program)
