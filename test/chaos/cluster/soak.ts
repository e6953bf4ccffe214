/**
 * The cluster soak (`npm run chaos:cluster`, `npm run chaos:cluster:short`): a real PostgreSQL,
 * three `toolvisor runner` processes, a gateway (`serve --cluster --http`) and a client process
 * (Effect callers, and an MCP caller through the gateway) calling a journal tool that is not
 * idempotent, while a seeded injector SIGKILLs, SIGTERMs and pauses runners, SIGKILLs servers,
 * restarts and SIGKILLs PostgreSQL, and SIGKILLs the client and the gateway — one fault at a
 * time. Then it holds the run to its checks (`checks.ts`), prints a summary and exits 1 if one
 * failed. Everything it starts is stopped at the end, on failure and on Ctrl-C.
 *
 * `--duration` is how long faults are injected, once the cluster is up and the client calling;
 * every kind is injected once whatever it says (about 70 s on the fast timers), so 0 is one of each.
 *
 *   node --conditions=@toolvisor/source test/chaos/cluster/soak.ts [--duration 600] [--seed N]
 *     [--timers default|fast] [--failover-margin 2] [--base-port 26401] [--report FILE] [--keep]
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { parseArgs } from "node:util"
import { ConfigLoader } from "@toolvisor/config"
import { Owner, type State } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import buildBundle from "../../../apps/cli/test/bundle.setup.ts"
import * as ClusterClient from "../../../packages/cluster/src/ClusterClient.ts"
import * as ClusterRegistry from "../../../packages/cluster/src/ClusterRegistry.ts"
import * as ClusterRunner from "../../../packages/cluster/src/ClusterRunner.ts"
import * as Orphans from "../../../packages/cluster/src/internal/orphans.ts"
import * as Postgres from "../../../packages/cluster/test/Postgres.ts"
import { seededRandom } from "../../bench/stats.ts"
import * as Procs from "../procs.ts"
import * as Checks from "./checks.ts"
import * as Setup from "./setup.ts"

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "600" },
    seed: { type: "string" },
    timers: { type: "string", default: "default" },
    "failover-margin": { type: "string", default: "2" },
    "base-port": { type: "string", default: "26401" },
    report: { type: "string" },
    keep: { type: "boolean", default: false }
  }
})
const durationMs = Math.max(0, Number(flags.duration)) * 1000
const seed = flags.seed === undefined ? Date.now() % 1_000_000 : Number(flags.seed)
const profile = flags.timers === "fast" ? Setup.profiles.fast : Setup.profiles.default
const failoverBoundMs = profile.leaseMs + Number(flags["failover-margin"]) * 1000
const basePort = Number(flags["base-port"])
const random = seededRandom(seed)
const run = `ccs${process.pid}`
const files = Setup.files(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cluster-soak-")))
const t0 = Date.now()
const log = (line: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`)
/** How often a resumed runner checks whom its shards belong to, and how often the soak looks. */
const fenceMs = 500
const sampleMs = 250

// ---------------------------------------------------------------------------------------------
// Processes: runners, the gateway and the client, each tagged; a sweep ends them all.
// ---------------------------------------------------------------------------------------------

const runners = new Map<number, Procs.Child>()
let gateway: Procs.Child | undefined
let client: Procs.Child | undefined
let clientGeneration = 0
let clientCrashes = 0
const gatewayPort = basePort + 10
const gatewayUrl = `http://127.0.0.1:${gatewayPort}/mcp`
const runnerPorts = [basePort, basePort + 1, basePort + 2]
const runnerId = (port: number) => `127.0.0.1:${port}`

const sweep = () => {
  for (const p of Procs.tagged(`${run}:`)) Procs.killHard(p.pid)
  for (const child of Procs.started) {
    Procs.signal(-child.pid, "SIGKILL")
    Procs.killHard(child.pid)
  }
}
process.on("exit", sweep)
process.on("SIGINT", () => {
  console.error(`\nSIGINT: stopping everything the soak started; files in ${files.dir}`)
  sweep()
  process.exit(130)
})

const env = (tag: string) => ({ ...process.env, CHAOS_TAG: `${run}:${tag}` })
const cli = (args: ReadonlyArray<string>) => [Setup.main, ...args]

/** Waits until a child's log says `marker`, or fails when it exits first or `within` passes. */
const awaitLog = (child: Procs.Child, path: string, marker: string, within: number) =>
  Effect.promise(async () => {
    const ok = await Procs.until(
      () =>
        child.exitedAt !== undefined || (NodeFs.existsSync(path) && NodeFs.readFileSync(path, "utf8").includes(marker)),
      within,
      100
    )
    if (!ok || child.exitedAt !== undefined) throw new Error(`${path}: no "${marker}" (see the log)`)
  })

const startRunner = (postgres: string, port: number) =>
  Effect.gen(function* () {
    const path = NodePath.join(files.dir, `runner-${port}-${Date.now()}.log`)
    const child = Procs.spawn(
      process.execPath,
      cli(["runner", "--postgres", postgres, "--port", String(port), "--cluster-settings", files.settings]),
      { cwd: Setup.root, env: env(`runner:${port}`), log: path }
    )
    runners.set(port, child)
    yield* awaitLog(child, path, "is up", 90_000)
  })

const startGateway = (postgres: string) =>
  Effect.gen(function* () {
    const path = NodePath.join(files.dir, `gateway-${Date.now()}.log`)
    gateway = Procs.spawn(
      process.execPath,
      cli([
        "serve",
        files.config,
        "--cluster",
        postgres,
        "--cluster-settings",
        files.settings,
        "--http",
        String(gatewayPort)
      ]),
      { cwd: Setup.root, env: env("gateway"), log: path }
    )
    yield* Effect.promise(() => waitAccepting(gatewayPort, 90_000))
  })

const waitAccepting = async (port: number, within: number) => {
  const deadline = Date.now() + within
  while (Date.now() < deadline) {
    if (await Procs.accepts(port)) return
    await Procs.sleep(100)
  }
  throw new Error(`nothing listens on ${port} after ${within} ms`)
}

const startClient = (postgres: string) =>
  Effect.sync(() => {
    clientGeneration += 1
    client = Procs.spawn(
      process.execPath,
      [
        "--conditions=@toolvisor/source",
        Setup.clientScript,
        postgres,
        files.config,
        files.settings,
        files.outcomes,
        gatewayUrl,
        `c${clientGeneration}`,
        String(seed + clientGeneration)
      ],
      {
        cwd: Setup.root,
        env: env(`client:${clientGeneration}`),
        log: NodePath.join(files.dir, `client-${clientGeneration}.log`)
      }
    )
  })

// ---------------------------------------------------------------------------------------------
// What the soak watches: where each toolset's servers run, and who is alive.
// ---------------------------------------------------------------------------------------------

interface Server {
  readonly pid: number
  readonly toolset: string
  readonly runner: string | undefined
  /** The pid of the runner process that started it (its owner mark), which may be gone. */
  readonly owner: number | undefined
}

const servers = (): ReadonlyArray<Server> =>
  Procs.tagged(`${run}:j`).map((p) => ({
    pid: p.pid,
    toolset: p.tag.slice(`${run}:`.length),
    runner: Orphans.markOf(p.pid)?.runner,
    owner: Owner.decode(Procfs.environ(p.pid)?.get(Owner.envKey) ?? "")?.pid
  }))

/** A runner process that can serve: it exists and is not stopped. */
const serving = (pid: number | undefined): boolean => {
  const state = pid === undefined ? undefined : Procs.tagged(`${run}:runner:`).find((p) => p.pid === pid)?.state
  return state !== undefined && state !== "T"
}

/** The runner with this id can serve now. */
const liveRunner = (id: string | undefined): boolean => {
  const child = [...runners].find(([port]) => runnerId(port) === id)?.[1]
  return child !== undefined && child.exitedAt === undefined && serving(child.pid)
}

/** Per toolset: since when two runners serve it, and its longest such stretch (when, on which runners). */
const overlaps = new Map<string, { since: number; longest: number; at: number; runners: string }>()
/** Which server process runs for each toolset, and since when that has not changed. */
const placement = { shown: "", since: Date.now() }
const orphans = new Map<number, { since: number; toolset: string }>()
const orphanLifetimes: Array<number> = []
const rss = new Map<string, Array<{ readonly at: number; readonly mib: number }>>()

/** One look: live owners per toolset, orphans, where the servers run, and (every eighth look) memory. */
const sample = (n: number) => {
  const now = Date.now()
  const byToolset = new Map<string, Set<string>>()
  const seen = new Set<number>()
  const running = servers()
  const shown = running
    .map((s) => `${s.toolset}:${s.pid}`)
    .sort()
    .join(" ")
  if (shown !== placement.shown) Object.assign(placement, { shown, since: now })
  for (const s of running) {
    // Judged by the process that started it: a runner restarted at the same address is not it.
    if (serving(s.owner)) {
      const owners = byToolset.get(s.toolset) ?? new Set<string>()
      owners.add(s.runner ?? "?")
      byToolset.set(s.toolset, owners)
    } else if (s.owner === undefined || !Procs.isAlive(s.owner)) {
      seen.add(s.pid)
      if (!orphans.has(s.pid)) orphans.set(s.pid, { since: now, toolset: s.toolset })
    }
  }
  for (const [pid, o] of orphans) {
    if (!seen.has(pid)) {
      orphanLifetimes.push(now - o.since)
      orphans.delete(pid)
    }
  }
  for (const t of Setup.toolsets) {
    const o = overlaps.get(t) ?? { since: 0, longest: 0, at: 0, runners: "" }
    const owners = byToolset.get(t) ?? new Set<string>()
    if (owners.size > 1) {
      if (o.since === 0) o.since = now
      if (now - o.since >= o.longest) {
        Object.assign(o, { longest: now - o.since, at: o.since, runners: [...owners].sort().join(" and ") })
      }
    } else o.since = 0
    overlaps.set(t, o)
  }
  if (n % 8 === 0) {
    const watched: Array<[string, Procs.Child | undefined]> = [
      ...[...runners].map(([port, c]): [string, Procs.Child] => [`runner ${port}`, c]),
      ["gateway", gateway],
      ["client", client]
    ]
    for (const [name, child] of watched) {
      const usage = child === undefined || child.exitedAt !== undefined ? undefined : Procs.usage(child.pid)
      if (usage === undefined) continue
      const key = `${name} (pid ${child?.pid})`
      rss.set(key, [...(rss.get(key) ?? []), { at: now, mib: usage.rssMiB }])
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------------------------

/**
 * Every kind, in the order of a run's first pass: the store faults before the runner faults, since
 * a store fault waits for a placement that stayed put (see `inject`), and every runner fault moves
 * toolsets twice (away, and back to the returning runner once its cooldown is over).
 */
const kinds = [
  "server-sigkill",
  "client-sigkill",
  "pg-restart",
  "gateway-sigkill",
  "pg-sigkill",
  "runner-sigkill",
  "runner-pause",
  "runner-sigterm"
] as const
type Kind = (typeof kinds)[number]

const runnerOf = (pid: number | undefined) => (pid === undefined ? undefined : Orphans.markOf(pid)?.runner)

const snapshot = (registry: ToolsetRegistry.Registry) => registry.snapshot

/** Polls the observer's board until `done`, at most `within` ms; the time it took, or undefined. */
const until = (
  registry: ToolsetRegistry.Registry,
  within: number,
  done: (board: ReadonlyArray<State.StatusSnapshot>) => boolean
) =>
  Effect.gen(function* () {
    const start = Date.now()
    while (Date.now() - start < within) {
      if (done(yield* snapshot(registry))) return Date.now() - start
      yield* Effect.sleep("50 millis")
    }
    return undefined
  })

/** Waits until every toolset is Ready and no server process has changed for `forMs`, at most `within` ms. */
const stable = (registry: ToolsetRegistry.Registry, forMs: number, within: number) =>
  Effect.gen(function* () {
    const start = Date.now()
    while (Date.now() - start < within) {
      if (Date.now() - placement.since >= forMs && allReady(yield* snapshot(registry))) return
      yield* Effect.sleep("250 millis")
    }
  })

const allReady = (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.length === Setup.toolsets.length && board.every((s) => s.state === "Ready")

/** The runner hosting the most toolsets now, and those toolsets. */
const busiest = (board: ReadonlyArray<State.StatusSnapshot>) => {
  const hosted = new Map<string, Array<State.StatusSnapshot>>()
  for (const s of board) {
    const r = runnerOf(s.pid)
    if (r !== undefined) hosted.set(r, [...(hosted.get(r) ?? []), s])
  }
  const choices = [...hosted].filter(([id]) => liveRunner(id))
  return choices[Math.floor(random() * choices.length)]
}

const movedAway =
  (victim: string, moved: ReadonlyArray<State.StatusSnapshot>) => (board: ReadonlyArray<State.StatusSnapshot>) =>
    moved.every((m) => {
      const now = board.find((s) => s.name === m.name)
      return now?.state === "Ready" && now.pid !== m.pid && runnerOf(now.pid) !== victim
    })

const portOf = (id: string) => Number(id.split(":")[1])

const inject = (kind: Kind, registry: ToolsetRegistry.Registry, pg: Postgres.Server) =>
  Effect.gen(function* () {
    const board = yield* snapshot(registry)
    const at = Date.now()
    const fault: Checks.Fault = { kind, target: "", at, endedAt: at }
    switch (kind) {
      case "runner-sigkill":
      case "runner-sigterm":
      case "runner-pause": {
        const [victim, moved] = busiest(board) ?? []
        if (victim === undefined || moved === undefined) break
        const port = portOf(victim)
        const child = runners.get(port)
        if (child === undefined) break
        Object.assign(fault, { target: victim })
        if (kind === "runner-pause") {
          Procs.signal(child.pid, "SIGSTOP")
          fault.recoveredMs = yield* until(registry, profile.leaseMs + 30_000, movedAway(victim, moved))
          yield* Effect.sleep("2 seconds")
          Procs.signal(child.pid, "SIGCONT")
          const resumed = Date.now()
          const stale = moved.flatMap((m) => (m.pid === undefined ? [] : [m.pid]))
          yield* Effect.promise(() => Procs.until(() => stale.every((pid) => !Procs.isAlive(pid)), 10_000))
          fault.note = `resumed runner stopped its copies ${Date.now() - resumed} ms after SIGCONT`
          break
        }
        Procs.signal(child.pid, kind === "runner-sigkill" ? "SIGKILL" : "SIGTERM")
        fault.recoveredMs = yield* until(registry, profile.leaseMs + 30_000, movedAway(victim, moved))
        const sent = Date.now()
        yield* Effect.promise(() => child.exited)
        if (kind === "runner-sigterm") {
          fault.exitMs = (child.exitedAt ?? sent) - at
          fault.note = `exited ${(fault.exitMs / 1000).toFixed(1)} s after SIGTERM`
        }
        yield* startRunner(pg.url, port)
        break
      }
      case "server-sigkill": {
        const target = servers().filter((s) => liveRunner(s.runner))[Math.floor(random() * Setup.toolsets.length)]
        if (target === undefined) break
        Object.assign(fault, { target: `${target.toolset} (pid ${target.pid})` })
        Procs.killHard(target.pid)
        fault.recoveredMs = yield* until(registry, 60_000, (now) => {
          const s = now.find((x) => x.name === target.toolset)
          return s?.state === "Ready" && s.pid !== target.pid
        })
        break
      }
      case "pg-restart":
      case "pg-sigkill": {
        Object.assign(fault, { target: "PostgreSQL" })
        // A runner that came back recently gets toolsets after the cooldown, and moves take a
        // while: wait for a placement that has not changed for a cooldown and a lease, so that a
        // move is not taken for the outage's doing.
        yield* stable(registry, profile.cooldownMs + profile.leaseMs, 90_000)
        Object.assign(fault, { at: Date.now() })
        const before = (yield* snapshot(registry)).map((s) => ({ name: s.name, pid: s.pid, runner: runnerOf(s.pid) }))
        yield* pg.down(kind === "pg-restart" ? "fast" : "kill")
        yield* Effect.sleep(`${1000 + Math.floor(random() * 3000)} millis`)
        yield* pg.up
        fault.recoveredMs = Date.now() - fault.at
        yield* Effect.sleep(`${profile.leaseMs + 2000} millis`)
        yield* until(registry, profile.leaseMs + 30_000, allReady)
        const after = (yield* snapshot(registry)).map((s) => ({ name: s.name, pid: s.pid, runner: runnerOf(s.pid) }))
        // Restarted where it ran is the outage's doing; moved elsewhere, a rebalance's.
        const changed = after.filter((s) => before.find((b) => b.name === s.name)?.pid !== s.pid)
        const restarted = changed.filter((s) => s.runner === before.find((b) => b.name === s.name)?.runner)
        fault.note =
          restarted.length === 0
            ? `no server restarted${changed.length === 0 ? "" : ` (${changed.length} moved by a rebalance)`}`
            : `servers restarted where they ran: ${restarted
                .map((s) => `${s.name} on ${s.runner} (pid ${before.find((b) => b.name === s.name)?.pid} -> ${s.pid})`)
                .join(", ")}`
        break
      }
      case "client-sigkill": {
        Object.assign(fault, { target: `client ${clientGeneration}` })
        if (client !== undefined) Procs.killHard(client.pid)
        yield* startClient(pg.url)
        break
      }
      case "gateway-sigkill": {
        Object.assign(fault, { target: "gateway" })
        if (gateway !== undefined) {
          Procs.signal(-gateway.pid, "SIGKILL")
          const g = gateway
          yield* Effect.promise(() => g.exited)
        }
        yield* startGateway(pg.url)
        fault.recoveredMs = Date.now() - at
        break
      }
    }
    fault.endedAt = Date.now()
    return fault
  })

/** The faults of a run: every kind once, then in seeded random order while time remains. */
const schedule = (): Array<Kind> => [
  ...kinds,
  ...Array.from({ length: 200 }, () => kinds[Math.floor(random() * kinds.length)] ?? "runner-sigkill")
]

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

const soak = Effect.gen(function* () {
  const pg = yield* Postgres.Postgres
  Setup.write(run, files, profile)
  log(
    `seed ${seed}, ${durationMs / 1000} s, ${flags.timers} timers (lease ${profile.leaseMs / 1000} s), files in ${files.dir}`
  )
  yield* Effect.forEach(runnerPorts, (port) => startRunner(pg.url, port), { concurrency: "unbounded", discard: true })
  const config = yield* ConfigLoader.load(files.config)
  const context = yield* Layer.build(ClusterClient.layer({ postgres: pg.url, settingsFile: files.settings }))
  const registry = yield* ClusterRegistry.make(config).pipe(Effect.provideContext(context))
  yield* registry.start
  const ready = yield* until(registry, 120_000, allReady)
  if (ready === undefined) return yield* Effect.die(new Error("the toolsets were not all Ready within 120 s"))
  log(`3 runners up, ${Setup.toolsets.length} toolsets Ready`)
  yield* startGateway(pg.url)
  yield* startClient(pg.url)
  const calling = yield* Effect.promise(() => Procs.until(() => Checks.readOutcomes(files).length > 0, 120_000, 250))
  if (!calling) return yield* Effect.die(new Error("the client made no call within 120 s"))
  log("the client is calling")

  let looks = 0
  const watcher = yield* Effect.sync(() => sample(looks++)).pipe(
    Effect.andThen(Effect.sleep(`${sampleMs} millis`)),
    Effect.forever,
    Effect.forkChild
  )

  const faults: Array<Checks.Fault> = []
  const faultsFrom = Date.now()
  for (const [i, kind] of schedule().entries()) {
    if (i >= kinds.length && Date.now() - faultsFrom > durationMs) break
    // Long enough for calls to be flowing when the fault hits (the client calls every 30 ms).
    yield* Effect.sleep(`${500 + Math.floor(random() * 1000)} millis`)
    // A client that left on its own (it must not) is counted, and replaced.
    if (client?.exitedAt !== undefined) {
      clientCrashes += 1
      yield* startClient(pg.url)
    }
    const fault = yield* inject(kind, registry, pg)
    faults.push(fault)
    const recovered = fault.recoveredMs === undefined ? "" : ` recovered in ${(fault.recoveredMs / 1000).toFixed(2)} s`
    log(`${kind} ${fault.target}:${recovered}${fault.note === undefined ? "" : `; ${fault.note}`}`)
    const settled = yield* until(registry, profile.leaseMs + 60_000, allReady)
    if (settled === undefined) log("not every toolset Ready again within a lease and a minute")
  }

  // The end: the client finishes its calls, then the gateway and the runners stop.
  log("stopping the client, the gateway and the runners")
  const clientStop = Date.now()
  if (client !== undefined) yield* Effect.promise(() => Procs.stop(client as Procs.Child, Setup.hangMs))
  const clientStopMs = Date.now() - clientStop
  if (gateway !== undefined) yield* Effect.promise(() => Procs.stop(gateway as Procs.Child, 15_000))
  yield* Fiber.interrupt(watcher)
  // All at once, as a deployment's shutdown would: each must exit within its grace anyway.
  const exits = yield* Effect.forEach(
    [...runners.values()],
    (child) =>
      Effect.promise(async () => {
        const sent = Date.now()
        await Procs.stop(child, 60_000)
        return Date.now() - sent
      }),
    { concurrency: "unbounded" }
  )
  yield* Effect.promise(() => Procs.until(() => servers().length === 0, 10_000))
  const leftover = servers()
  return { faults, clientStopMs, exits, leftover }
})

const report = (result: Effect.Success<typeof soak>) => {
  const outcomes = Checks.readOutcomes(files)
  const ran = Checks.runs(files, Setup.toolsets)
  const kill = result.faults.filter((f) => f.kind === "runner-sigkill")
  const slowFailovers = kill.filter((f) => (f.recoveredMs ?? Number.POSITIVE_INFINITY) > failoverBoundMs)
  const [overlapped, longest] = [...overlaps].reduce<[string, { longest: number; at: number; runners: string }]>(
    (most, [t, o]) => (o.longest > most[1].longest ? [t, o] : most),
    ["", { longest: 0, at: 0, runners: "" }]
  )
  const longestOverlap = longest.longest
  const overlapBoundMs = fenceMs + 2 * sampleMs + 1000
  const longestOrphan = Math.max(0, ...orphanLifetimes, ...[...orphans.values()].map((o) => Date.now() - o.since))
  const pgFaults = result.faults.filter((f) => f.kind.startsWith("pg-"))
  const readsDuringOutages = outcomes.filter(
    (o) => o.via === "effect-read" && o.outcome !== "ok" && pgFaults.some((f) => o.at >= f.at && o.at <= f.endedAt)
  )
  const restartedByStore = pgFaults.filter((f) => !(f.note ?? "").startsWith("no server restarted"))
  // The grace, the runner's own margin past it, and 3 s for a loaded machine.
  const shutdownBoundMs = profile.shutdownGraceMs + Duration.toMillis(ClusterRunner.shutdownMargin) + 3000
  const slowExits = result.faults.filter((f) => (f.exitMs ?? 0) > shutdownBoundMs)
  // Processes watched for 40 s or more (a short run's survivors too), from a quarter in (warm) to the end.
  const longLived = [...rss].filter(([, samples]) => (samples.at(-1)?.at ?? 0) - (samples[0]?.at ?? 0) >= 40_000)
  const grown = longLived.flatMap(([name, samples]) => {
    const first = samples[Math.floor(samples.length / 4)]
    const last = samples.at(-1)
    if (first === undefined || last === undefined) return []
    return last.mib > first.mib * 1.5 + 40 ? [`${name}: ${first.mib.toFixed(0)} -> ${last.mib.toFixed(0)} MiB`] : []
  })
  const checks: Array<Checks.Check> = [
    ...Checks.truth(outcomes, ran),
    Checks.hangs(outcomes, Setup.hangMs),
    {
      name: `the client finished its calls within their deadline after SIGTERM`,
      ok: result.clientStopMs <= Setup.hangMs,
      detail: `${(result.clientStopMs / 1000).toFixed(1)} s`
    },
    {
      name: `failover after a runner's SIGKILL within the lease + ${flags["failover-margin"]} s (${failoverBoundMs / 1000} s)`,
      ok: slowFailovers.length === 0 && kill.length > 0,
      detail:
        kill.length === 0
          ? "no runner was SIGKILLed"
          : `${kill.map((f) => ((f.recoveredMs ?? Number.NaN) / 1000).toFixed(1)).join(", ")} s`
    },
    {
      name: `never two live owners of a toolset for longer than a fence check (${overlapBoundMs} ms with sampling)`,
      ok: longestOverlap <= overlapBoundMs,
      detail:
        longestOverlap === 0
          ? "longest 0 ms"
          : `longest ${longestOverlap} ms (${overlapped} on ${longest.runners}, at ${((longest.at - t0) / 1000).toFixed(1)} s)`
    },
    {
      name: "no orphan outlives the sweep (15 s), none left at the end",
      ok: longestOrphan <= 15_000 && result.leftover.length === 0,
      detail: `longest ${(longestOrphan / 1000).toFixed(1)} s; left: ${result.leftover.map((s) => s.pid).join(", ") || "none"}`
    },
    {
      name: "read-only calls kept flowing through PostgreSQL outages, and nothing restarted",
      ok: readsDuringOutages.length === 0 && restartedByStore.length === 0,
      detail: `${pgFaults.length} outages; failed reads: ${readsDuringOutages.length}; ${restartedByStore.map((f) => f.note).join("; ") || "no restart"}`
    },
    {
      name: `SIGTERM ends a runner within its grace and a margin (${shutdownBoundMs / 1000} s)`,
      ok: slowExits.length === 0 && result.exits.every((ms) => ms <= shutdownBoundMs),
      detail: `at the end: ${result.exits.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s`
    },
    {
      name: "memory stays flat (processes watched for 40 s or more)",
      ok: longLived.length > 0 && grown.length === 0,
      detail: grown.join("; ") || `flat in ${longLived.length} processes`
    },
    { name: "the client never left on its own", ok: clientCrashes === 0, detail: `${clientCrashes} times` }
  ]

  const calls = outcomes.length
  log(`done: ${calls} calls, ${result.faults.length} faults, files in ${files.dir}`)
  Checks.print("Outcomes (calls by way in and class)", [
    ["via", "ok", "NotRun", "Answered", "MayHaveRun"],
    ...[...Checks.byClass(outcomes)].map(([via, row]) => [
      via,
      ...["ok", "NotRun", "Answered", "MayHaveRun"].map((c) => String(row.get(c) ?? 0))
    ])
  ])
  Checks.print("Faults (recovery: failover, restart or outage length, s)", [
    ["fault", "count", "median", "max"],
    ...Checks.recoveries(result.faults).map((r) => [r.kind, String(r.count), r.median.toFixed(2), r.max.toFixed(2)]),
    ...kinds
      .filter((k) => !result.faults.some((f) => f.kind === k && f.recoveredMs !== undefined))
      .map((k) => [k, String(result.faults.filter((f) => f.kind === k).length), "-", "-"])
  ])
  Checks.print(
    "Checks",
    checks.map((c) => [c.ok ? "ok  " : "FAIL", c.name, c.detail])
  )
  if (flags.report !== undefined) {
    NodeFs.writeFileSync(
      flags.report,
      JSON.stringify(
        {
          seed,
          timers: flags.timers,
          calls,
          faults: result.faults,
          checks,
          outcomes: [...Checks.byClass(outcomes)].map(([via, row]) => [via, Object.fromEntries(row)])
        },
        null,
        2
      )
    )
  }
  return checks.every((c) => c.ok)
}

const watchdog = setTimeout(() => {
  console.error("the cluster soak overran its time limit: stopping everything")
  sweep()
  process.exit(3)
}, durationMs + 600_000)
watchdog.unref()

// Runners and gateways run the CLI's bundle: rebuilt first if a source is newer.
await buildBundle()
Effect.runPromise(soak.pipe(Effect.scoped, Effect.provide(Postgres.layer)))
  .then((result) => {
    const ok = report(result)
    if (ok && !flags.keep) NodeFs.rmSync(files.dir, { recursive: true, force: true })
    process.exit(ok ? 0 : 1)
  })
  .catch((error) => {
    console.error(
      `the cluster soak failed: ${error instanceof Error ? error.stack : String(error)}; files in ${files.dir}`
    )
    sweep()
    process.exit(1)
  })
