/**
 * The call path's own cost, in one process: a raw SDK `Client`, `registry.callTool` (the Effect API,
 * through `ToolsetRegistry.layerFile`) and `registry.callToolNow` (the gateway's path) calling
 * `server-everything`'s `echo`. Two transports:
 *   - stdio, where the path's cost shows (a call is a fraction of a millisecond): each series has
 *     a server of its own (the raw client's started through `setsid`, as a toolset's is: a session
 *     leader), so each server is idle between its series' calls alike, and every round starts new
 *     ones (`round` says why);
 *   - streamable HTTP on loopback: all three on one server, the same socket stack.
 * The series take turns call by call, in a rotated order, inside one fiber: whatever the machine
 * does meanwhile (another process, a collection, a frequency change) falls on every series alike,
 * where blocks of a thousand calls per series let it fall on one (block-interleaved runs of one
 * build put `registry.callTool` anywhere from 0.86× to 1.21× raw). Each call is timed around the
 * call alone: a promise inside its own step, an Effect as `yield*` runs it in a generator (what an
 * Effect program pays). A series' p50 is the median of its rounds' p50s; its ratio is taken
 * against the raw client's p50 in each round. Next to it, the CPU time this process spent per
 * call (`process.cpuUsage` around each call; the median, to the µs). Each round warms each series
 * up first (its servers are new).
 * Where the machine has two CPUs or more and `taskset`, this process runs on the first and every
 * server on the second (`PIN=0` leaves them to the scheduler): each series' server otherwise
 * lands where the scheduler puts it, beside this process or not, and a round's ratios moved by
 * up to 15% with where that was (two unpinned runs of one build put `registry.callTool` at 1.026×
 * and 1.078× raw; pinned, 1.037× twice).
 * The raw client over HTTP is the SDK's stock transport: on a busy session it makes Node warn of
 * abort listeners piling up on its signal (`McpConnector.requestFetch` says why ours does not).
 *
 * Run: npm run bench:mcp (this runs after the stdio benchmark).
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Net from "../support/Net.ts"
import { ascending, formatter, median, percentile, renderTable, takeTurns } from "./stats.ts"

/** Over stdio a call is a fraction of a millisecond: many rounds, so that the servers' places even out. */
const ROUNDS = Number(process.env.ROUNDS ?? 10)
const CALLS = Number(process.env.CALLS ?? 2_000)
const WARMUP = Number(process.env.WARMUP ?? 1_000)
/** Over HTTP a call takes milliseconds, and all series share one server. */
const HTTP_ROUNDS = Number(process.env.HTTP_ROUNDS ?? 5)
const HTTP_CALLS = Number(process.env.HTTP_CALLS ?? 1_000)
const HTTP_WARMUP = Number(process.env.HTTP_WARMUP ?? 500)
const TARGET = 1.05

/** Whether servers run on a CPU of their own, this process moved to the first one. */
const pinned = ((): boolean => {
  if (process.env.PIN === "0" || NodeOs.availableParallelism() < 2) return false
  try {
    NodeChildProcess.execFileSync("taskset", ["-pc", "0", String(process.pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()
/** The command and arguments that run Node with `args` as a server: on the second CPU when pinned. */
const serverCommand = (args: ReadonlyArray<string>): readonly [string, ReadonlyArray<string>] =>
  pinned ? ["taskset", ["-c", "1", process.execPath, ...args]] : [process.execPath, args]

const root = NodePath.resolve(import.meta.dirname, "../..")
const everything = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const echo = { name: "echo", arguments: { message: "x" } }
const fmt = formatter(3)

/** One series: a call, and what its calls took (ms) and cost this process (CPU µs). */
interface Series {
  readonly label: string
  readonly call: { readonly promise: () => Promise<unknown> } | { readonly effect: Effect.Effect<unknown, unknown> }
  readonly times: Array<number>
  readonly cpu: Array<number>
}

const series = (label: string, call: Series["call"]): Series => ({ label, call, times: [], cpu: [] })

/**
 * One call of `s`, timed around the call alone: a promise inside its own `Effect.promise` step, an
 * Effect as `yield*` in a generator runs it.
 */
const timed = (s: Series) =>
  Effect.gen(function* () {
    const before = process.cpuUsage()
    const t0 = performance.now()
    if ("effect" in s.call) {
      yield* s.call.effect
      s.times.push(performance.now() - t0)
    } else {
      const { promise } = s.call
      const took = yield* Effect.promise(async () => {
        const start = performance.now()
        await promise()
        return performance.now() - start
      })
      s.times.push(took)
    }
    const used = process.cpuUsage(before)
    s.cpu.push(used.user + used.system)
  })

/** How a transport is measured: rounds, and calls per series in each (after a warm-up of its own). */
interface Plan {
  readonly rounds: number
  readonly calls: number
  readonly warmup: number
}

/** What one round opens: the raw client (a new one each round), and the registry's config and tools. */
interface Setup {
  readonly raw: () => Promise<Client>
  readonly config: string
  readonly tools: { readonly callTool: string; readonly callToolNow: string }
}

/** What a round measured, per series in order: p50 (ms) and median CPU per call (µs). */
interface Round {
  readonly p50: ReadonlyArray<number>
  readonly cpu: ReadonlyArray<number>
}

/**
 * One round on processes of its own: the raw client and the registry are opened (in the order
 * `rawFirst` says), each series warmed up, measured, and everything closed. A server's place on the
 * machine (its CPU, what shares it) weighs on every call of its series: with the same processes for
 * a whole run, one build measured `registry.callToolNow` anywhere from 0.98× to 1.19× raw from run
 * to run, and the raw client's server answered 20% faster to a second series taking its calls. A
 * round's processes are new, so no series keeps a lucky or unlucky server for the whole run.
 */
const round = async (setup: Setup, plan: Plan, rawFirst: boolean): Promise<Round> => {
  const runtime = ManagedRuntime.make(ToolsetRegistry.layerFile(setup.config))
  let raw: Client | undefined
  try {
    if (rawFirst) raw = await setup.raw()
    const registry = await runtime.runPromise(Effect.service(ToolsetRegistry.ToolsetRegistry))
    await runtime.runPromise(registry.start)
    if (raw === undefined) raw = await setup.raw()
    const client = raw
    const all = [
      series("raw SDK Client", { promise: () => client.callTool(echo) }),
      series("registry.callTool", { effect: registry.callTool(setup.tools.callTool, echo.arguments) }),
      series("registry.callToolNow", {
        promise: async () => {
          const sent = registry.callToolNow(setup.tools.callToolNow, echo.arguments)
          if (sent === undefined) throw new Error("callToolNow: no fast route")
          const exit = await sent
          if (exit._tag !== "Success") throw new Error("callToolNow failed")
        }
      })
    ]
    await runtime.runPromise(takeTurns(all, plan.warmup, timed))
    for (const s of all) {
      s.times.length = 0
      s.cpu.length = 0
    }
    await runtime.runPromise(takeTurns(all, plan.calls, timed))
    return { p50: all.map((s) => percentile(ascending(s.times), 0.5)), cpu: all.map((s) => median(s.cpu)) }
  } finally {
    await raw?.close()
    await runtime.dispose()
  }
}

const labels = ["raw SDK Client", "registry.callTool", "registry.callToolNow"]

/**
 * The three series over `plan.rounds` rounds, the raw client's server started first in every other
 * one; a series' p50 is the median of its rounds' p50s, its ratio the median of its per-round
 * ratios to the raw client's p50. Returns `registry.callTool`'s ratio.
 */
const measure = async (title: string, setup: Setup, plan: Plan): Promise<number> => {
  const rounds: Array<Round> = []
  for (let i = 0; i < plan.rounds; i++) rounds.push(await round(setup, plan, i % 2 === 0))
  const p50s = labels.map((_, j) => rounds.map((r) => r.p50[j] ?? Number.NaN))
  const ratiosOf = (j: number) => rounds.map((r) => (r.p50[j] ?? Number.NaN) / (r.p50[0] ?? Number.NaN))
  console.log(
    `\n${title}: ${plan.rounds} rounds, each on new processes: ${plan.calls} sequential echo calls per series after ${plan.warmup} to warm up, taking turns call by call`
  )
  console.log(
    renderTable(
      ["series", "p50 ms", "ratio (median)", "ratio range", "cpu µs/call", "p50 per round"],
      labels.map((label, j) => {
        const ratios = ratiosOf(j)
        return [
          label,
          fmt(median(p50s[j] ?? [])),
          fmt(median(ratios)),
          `${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}`,
          fmt(median(rounds.map((r) => r.cpu[j] ?? Number.NaN)), 0),
          (p50s[j] ?? []).map((x) => fmt(x)).join(" ")
        ]
      })
    )
  )
  return median(ratiosOf(1))
}

/** A config of the toolsets `name → lines`. */
const toolsets = (entries: ReadonlyArray<readonly [string, ReadonlyArray<string>]>) =>
  [
    "agents:",
    "  root:",
    "    toolsets:",
    ...entries.flatMap(([name, lines]) => ["      - type: mcp", `        name: ${name}`, ...lines])
  ].join("\n")

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-call-path-"))
const write = (name: string, text: string) => {
  const path = NodePath.join(dir, name)
  NodeFs.writeFileSync(path, text)
  return path
}
const port = await Net.freePort()
const server = NodeChildProcess.spawn(...serverCommand([everything, "streamableHttp"]), {
  env: { ...process.env, PORT: String(port) },
  stdio: "ignore"
})
const url = `http://127.0.0.1:${port}/mcp`
/** A raw SDK client, connected on `transport`. */
const rawClient = async (transport: () => Transport) => {
  const client = new Client({ name: "bench-raw", version: "1.0.0" })
  await client.connect(transport())
  return client
}

console.log(
  pinned ? "this process on CPU 0, every server on CPU 1" : "servers and this process: where the scheduler puts them"
)
try {
  const [command, args] = serverCommand([everything, "stdio"])
  const local = [`        command: "${command}"`, `        args: ${JSON.stringify(args)}`]
  const stdio = await measure(
    "stdio (a server per series)",
    {
      // `setsid` execs the server in place, as the leader of its own session, as the toolset's is.
      raw: () =>
        rawClient(
          () =>
            new StdioClientTransport({
              command: "setsid",
              args: [command, ...args],
              stderr: "ignore"
            })
        ),
      config: write(
        "stdio.yaml",
        toolsets([
          ["effect", local],
          ["now", local]
        ])
      ),
      tools: { callTool: "effect_echo", callToolNow: "now_echo" }
    },
    { rounds: ROUNDS, calls: CALLS, warmup: WARMUP }
  )

  await Net.awaitListening(port)
  const http = await measure(
    "streamable HTTP (one server for all three)",
    {
      raw: () => rawClient(() => new StreamableHTTPClientTransport(new URL(url))),
      config: write("http.yaml", toolsets([["everything", ["        remote:", `          url: ${url}`]]])),
      tools: { callTool: "everything_echo", callToolNow: "everything_echo" }
    },
    { rounds: HTTP_ROUNDS, calls: HTTP_CALLS, warmup: HTTP_WARMUP }
  )
  for (const [label, ratio] of [
    ["stdio", stdio],
    ["streamable HTTP", http]
  ] as const) {
    console.log(
      `${ratio <= TARGET ? "OK" : "TARGET MISSED"}: ${label}: registry.callTool p50 ${fmt(ratio)}× raw (target <= ${TARGET})`
    )
  }
} finally {
  server.kill("SIGKILL")
  NodeFs.rmSync(dir, { recursive: true, force: true })
}
