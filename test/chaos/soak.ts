/**
 * The fault-injection soak (`npm run chaos`, `npm run chaos:short`): the real CLI gateway
 * (`toolvisor serve --http`) over several real servers, steady concurrent calls through it, and a
 * seeded fault injector; then SIGTERM and SIGKILL + restart of the gateway, with an orphan scan
 * after each. Prints a summary table and exits 1 when a check fails. Everything it starts is
 * stopped when it ends, on a failure, and on Ctrl-C.
 *
 *   node --conditions=@toolvisor/source test/chaos/soak.ts [--duration 600] [--seed N] [--callers 4] [--keep]
 *     [--report FILE]   also write the checks and figures as JSON to FILE
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { parseArgs } from "node:util"
import { seededRandom } from "../bench/stats.ts"
import * as Config from "./config.ts"
import * as Faults from "./faults.ts"
import * as Procs from "./procs.ts"
import * as Report from "./report.ts"
import * as Traffic from "./traffic.ts"

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "600" },
    seed: { type: "string" },
    callers: { type: "string", default: "4" },
    keep: { type: "boolean", default: false },
    report: { type: "string" }
  }
})
const durationS = Math.max(20, Number(flags.duration))
const seed = flags.seed === undefined ? Date.now() % 1_000_000 : Number(flags.seed)
const callerCount = Math.max(1, Math.min(16, Number(flags.callers)))
const run = `chaos${process.pid}`
const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-chaos-"))
const files = Config.files(dir)
const t0 = Date.now()
const log = (line: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`)

// ---------------------------------------------------------------------------------------------
// Cleanup: whatever happens, nothing the soak started outlives it.
// ---------------------------------------------------------------------------------------------

const gateways: Array<Procs.Child> = []
let http: Faults.HttpServer | undefined

/** Kills every process carrying the run's tag, and every child the soak started. Synchronous. */
const sweep = (): number => {
  const left = Procs.tagged(`${run}:`)
  for (const p of left) Procs.killHard(p.pid)
  for (const child of Procs.started) {
    Procs.signal(-child.pid, "SIGKILL")
    Procs.killHard(child.pid)
  }
  return left.length
}

let cleaning: Promise<void> | undefined
/** Stops the gateways (SIGTERM, so they stop their servers), the HTTP server, then sweeps. */
const cleanup = () => {
  cleaning ??= (async () => {
    await Promise.all(gateways.map((g) => Procs.stop(g, 8_000)))
    await http?.kill()
    await Procs.sleep(200)
    sweep()
  })()
  return cleaning
}

let interrupted = false
const onSignal = (signal: NodeJS.Signals) => {
  if (interrupted) {
    sweep()
    process.exit(130)
  }
  interrupted = true
  console.error(`\n${signal}: stopping everything the soak started (again to kill at once); logs in ${dir}`)
  void cleanup().then(() => process.exit(130))
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", onSignal)
process.on("exit", () => {
  sweep()
})
// A run that overstays its time by far is stopped, whatever it is waiting for.
const watchdog = setTimeout(
  () => {
    console.error("the soak overran its time limit: stopping everything")
    void cleanup().then(() => process.exit(3))
  },
  (durationS + 180) * 1_000
)
watchdog.unref()

// ---------------------------------------------------------------------------------------------
// The gateway
// ---------------------------------------------------------------------------------------------

const gatewayLog = (n: number) => NodePath.join(dir, `gateway-${n}.log`)

const { CHAOS_TAG: _tag, ...gatewayEnv } = process.env

const startGateway = async (configPath: string, port: number): Promise<Procs.Child> => {
  const n = gateways.length + 1
  const child = Procs.spawn(
    process.execPath,
    ["--conditions=@toolvisor/source", Config.main, "serve", configPath, "--http", String(port)],
    { cwd: Config.root, env: gatewayEnv, log: gatewayLog(n) }
  )
  gateways.push(child)
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitedAt !== undefined) throw new Error(`gateway ${n} exited at start; see ${gatewayLog(n)}`)
    if (await Procs.accepts(port)) return child
    await Procs.sleep(50)
  }
  throw new Error(`gateway ${n} did not listen within 60 s; see ${gatewayLog(n)}`)
}

const expectedTools = ["ev_echo", "mem_create_entities", "fx_increment", "http_echo", "ts_lsp_hover"]

/** Waits until the gateway lists a tool of every soaked toolset; returns how long that took. */
const awaitTools = async (url: string, within: number): Promise<number> => {
  const start = Date.now()
  const { client } = await Traffic.connect(url, "chaos-setup")
  try {
    let names: ReadonlyArray<string> = []
    while (Date.now() - start < within) {
      names = (await client.listTools()).tools.map((t) => t.name)
      if (expectedTools.every((t) => names.includes(t))) return Date.now() - start
      await Procs.sleep(250)
    }
    throw new Error(`tools missing after ${within} ms: ${expectedTools.filter((t) => !names.includes(t)).join(", ")}`)
  } finally {
    await client.close().catch(() => undefined)
  }
}

/** The tagged processes of the gateway's servers (the soak's own HTTP server excluded). */
const serverProcs = () => Procs.tagged(`${run}:`).filter((p) => !p.tag.endsWith(":http-server"))

const lines = (path: string) =>
  NodeFs.existsSync(path)
    ? NodeFs.readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : []

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

const soak = async (): Promise<Report.Record> => {
  log(`seed ${seed}, ${durationS} s, ${callerCount} callers, files in ${dir}`)
  const httpPort = await Procs.freePort()
  const gatewayPort = await Procs.freePort()
  const url = `http://127.0.0.1:${gatewayPort}/mcp`
  http = new Faults.HttpServer(httpPort, run, dir)
  await http.start()
  const configPath = Config.write(run, httpPort, files)

  const outcomes: Array<Traffic.Outcome> = []
  const faults: Array<Faults.Fault> = []
  const samples: Array<Report.Sample> = []
  /** When each toolset's recent successful calls started: the injector waits for one after its fault. */
  const successes = new Map<string, Array<number>>()
  const record = (o: Traffic.Outcome) => {
    outcomes.push(o)
    if (o.verdict === "ok" || o.verdict === "empty")
      successes.set(o.toolset, [...(successes.get(o.toolset) ?? []).slice(-50), o.start])
  }

  let gateway = await startGateway(configPath, gatewayPort)
  log(`gateway pid ${gateway.pid} listening on ${url}`)

  // The crash-looping `loop` toolset gets calls from the moment the gateway listens: a read-only
  // call that is in flight when the server dies is what drives today's resend path.
  let loopStop = Number.POSITIVE_INFINITY
  const loopCaller = Traffic.loop({
    url,
    run,
    caller: 0,
    random: seededRandom(seed + 1000),
    choose: [
      () => ({
        toolset: "loop",
        tool: "loop_slow_read",
        args: { ms: 400 },
        judge: (text) => ({ verdict: text === "read after 400" ? "ok" : "wrong" })
      })
    ],
    stopAt: () => (interrupted ? 0 : loopStop),
    maxCalls: 20_000,
    pauseMs: 40,
    record
  })

  const toolsMs = await awaitTools(url, 90_000)
  log(`every soaked toolset listed its tools after ${toolsMs} ms`)

  const start = Date.now()
  const callersStopAt = start + durationS * 1_000
  const injectUntil = callersStopAt - Math.min(15_000, (durationS * 1_000) / 4)
  let stopped = false
  const stopAt = () => (stopped || interrupted ? 0 : callersStopAt)
  // A crash loop whose budget holds is over within seconds; its caller stops with the others.
  loopStop = callersStopAt

  const sampler = (async () => {
    while (Date.now() < stopAt()) {
      const use = Procs.usage(gateway.pid)
      if (use !== undefined) samples.push({ t: Date.now(), ...use, servers: serverProcs().length })
      if (samples.length % 30 === 0 && use !== undefined) {
        const failed = outcomes.filter((o) => o.verdict !== "ok" && o.verdict !== "empty").length
        log(
          `${outcomes.length} calls (${failed} not ok), ${faults.length} faults, gateway ${use.rssMiB.toFixed(0)} MiB, ${use.fds} fds`
        )
      }
      await Procs.sleep(1_000)
    }
  })()

  const memLock = Traffic.mutex()
  const callers = Array.from({ length: callerCount }, (_, i) =>
    Traffic.loop({
      url,
      run,
      caller: i + 1,
      random: seededRandom(seed + i + 1),
      choose: Traffic.ops,
      stopAt,
      maxCalls: durationS * 40,
      pauseMs: 80,
      record,
      exclusive: (toolset) => (toolset === "mem" ? memLock : undefined)
    })
  )

  const injector = Faults.inject({
    run,
    random: seededRandom(seed),
    gateway: () => gateway.pid,
    http,
    recovered: (toolset, since) => (successes.get(toolset) ?? []).some((t) => t >= since),
    stopAt: injectUntil,
    callersStopAt,
    record: (fault) => faults.push(fault),
    log
  })

  await injector
  log("faults stopped; calls go on until the end")
  await Promise.all([...callers.map((c) => c.done), loopCaller.done, sampler])
  stopped = true
  log(`${outcomes.length} calls done`)
  if (interrupted) throw new Error("interrupted")

  // Each soaked toolset must answer once more, now that the faults are over.
  const finalCalls: Array<{ toolset: string; ok: boolean; detail: string }> = []
  const { client } = await Traffic.connect(url, "chaos-final")
  for (const toolset of Config.soaked) {
    let last: Traffic.Outcome | undefined
    const deadline = Date.now() + 30_000
    for (let n = 0; n < 60 && Date.now() < deadline; n++) {
      const op = Traffic.ops.find((make) => make("probe", Math.random).toolset === toolset)
      if (op === undefined) break
      const id = Traffic.idFor(run, 99, n)
      last = await Traffic.call(client, 99, op(id, seededRandom(n)), id)
      if (last.verdict === "ok" || last.verdict === "empty") break
      await Procs.sleep(500)
    }
    const ok = last !== undefined && (last.verdict === "ok" || last.verdict === "empty")
    finalCalls.push({ toolset, ok, detail: last?.detail ?? "" })
  }
  await client.close().catch(() => undefined)

  // The restart budget: how often each crash-looping fixture started, and whether it gave up.
  const gatewayText = NodeFs.readFileSync(gatewayLog(1), "utf8")
  const budgetOf = (name: "loop" | "loopq"): Report.Budget => {
    const starts = lines(files.starts[name]).map((line) => Number(line.split(" ")[1]))
    return {
      starts: starts.length,
      failedLogged: new RegExp(`message="${name} failed\\b`).test(gatewayText),
      quietS: Math.max(0, callersStopAt - Math.max(0, ...starts)) / 1_000
    }
  }
  const budget = { loop: budgetOf("loop"), loopq: budgetOf("loopq") }

  // SIGTERM with one server stopped: nothing may survive, and shutdown must stay bounded.
  const stoppedServer = Faults.serverOf(run, "fx", gateway.pid)
  if (stoppedServer !== undefined) Procs.signal(stoppedServer, "SIGSTOP")
  const termAt = Date.now()
  await Procs.stop(gateway, 30_000)
  const shutdownMs = (gateway.exitedAt ?? Date.now()) - termAt
  await Procs.sleep(500)
  const termOrphans = serverProcs()
  log(`SIGTERM: gateway gone after ${shutdownMs} ms, ${termOrphans.length} orphan(s)`)
  for (const p of termOrphans) Procs.killHard(p.pid)

  // SIGKILL with servers running (one stopped), then a new gateway on the same config.
  gateway = await startGateway(configPath, gatewayPort)
  await awaitTools(url, 90_000)
  const victim = Faults.serverOf(run, "fx", gateway.pid)
  if (victim !== undefined) Procs.signal(victim, "SIGSTOP")
  const before = serverProcs()
  Procs.signal(gateway.pid, "SIGKILL")
  await gateway.exited
  log(`SIGKILL: gateway ${gateway.pid} killed with ${before.length} server process(es) running`)
  gateway = await startGateway(configPath, gatewayPort)
  await awaitTools(url, 90_000)
  await Procs.sleep(3_000)
  const survivors = new Set(before.map((p) => p.pid))
  const killOrphans = serverProcs().filter((p) => survivors.has(p.pid))
  log(`after the restart: ${killOrphans.length} of them still alive`)
  for (const p of killOrphans) Procs.killHard(p.pid)
  await Procs.stop(gateway, 30_000)

  const executions = new Map<string, number>()
  for (const line of lines(files.ledger)) {
    const id = line.split(" ")[0] ?? ""
    executions.set(id, (executions.get(id) ?? 0) + 1)
  }
  return {
    seed,
    durationS,
    outcomes,
    faults,
    samples,
    executions,
    budget,
    finalCalls,
    sigterm: { shutdownMs, orphans: termOrphans },
    sigkill: { orphans: killOrphans, checked: before.length },
    listChanged: [...callers, loopCaller].reduce((n, c) => n + c.heard.listChanged, 0)
  }
}

const main = async () => {
  let code = 1
  try {
    const record = await soak()
    const list = Report.checks(record)
    console.log("\nCalls through `serve`, by toolset:")
    console.log(Report.trafficTable(record))
    console.log(
      "\nRecovery per fault kind (ms from the fault, or from its end for sigstop/http-restart, to the first successful call):"
    )
    console.log(Report.recoveryTable(record))
    console.log("\nGateway resources over time:")
    console.log(Report.resourceTable(record))
    console.log(`\ntools/list_changed heard by the callers: ${record.listChanged}`)
    console.log("\nFirst message of each kind of failed call:")
    console.log(Report.errorSamples(record) || "  (none)")
    console.log(`\nSummary (seed ${seed}, ${durationS} s; rerun with --seed ${seed}):`)
    console.log(Report.summaryTable(list))
    const failed = list.filter((c) => !c.pass).length
    console.log(`\n${list.length - failed} passed, ${failed} failed`)
    const json = JSON.stringify(
      {
        seed,
        durationS,
        checks: list,
        calls: record.outcomes.length,
        faults: record.faults,
        recoveries: Report.recoveries(record).map((r) => ({ kind: r.fault.kind, toolset: r.fault.toolset, ms: r.ms })),
        budget: record.budget,
        listChanged: record.listChanged
      },
      null,
      2
    )
    NodeFs.writeFileSync(NodePath.join(dir, "report.json"), json)
    if (flags.report !== undefined) NodeFs.writeFileSync(flags.report, json)
    code = failed === 0 ? 0 : 1
  } catch (error) {
    console.error(`the soak could not complete: ${error instanceof Error ? error.stack : String(error)}`)
    code = 2
  } finally {
    await cleanup()
    const left = sweep()
    if (left > 0) console.error(`killed ${left} process(es) left over by the run`)
  }
  if (code === 0 && !flags.keep) NodeFs.rmSync(dir, { recursive: true, force: true })
  else console.log(`logs and report: ${dir}`)
  clearTimeout(watchdog)
  process.exit(code)
}

await main()
