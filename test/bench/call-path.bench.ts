/**
 * The call path's own cost, in one process: a raw SDK `Client`, `registry.callTool` (the Effect API,
 * through `ToolsetRegistry.layerFile`) and `registry.callToolNow` (the gateway's path) calling
 * `server-everything`'s `echo`. Two transports:
 *   - stdio, where the path's cost shows (a call is a fraction of a millisecond): each series has
 *     a server of its own (the raw client's started through `setsid`, as a toolset's is: a session
 *     leader), so each server is idle between its series' calls alike;
 *   - streamable HTTP on loopback: all three on one server, the same socket stack.
 * The series take turns call by call, in a rotated order, inside one fiber: whatever the machine
 * does meanwhile (another process, a collection, a frequency change) falls on every series alike,
 * where blocks of a thousand calls per series let it fall on one (block-interleaved runs of one
 * build put `registry.callTool` anywhere from 0.86× to 1.21× raw). Each call is timed around the
 * call alone: a promise inside its own step, an Effect as `yield*` runs it in a generator (what an
 * Effect program pays). A series' p50 is the median of its rounds' p50s; its ratio is taken
 * against the raw client's p50 in each round. Next to it, the CPU time this process spent per
 * call (`process.cpuUsage` around each call; the median, to the µs). Each series is warmed up
 * first (2,000 calls).
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
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Net from "../support/Net.ts"
import { ascending, formatter, median, percentile, renderTable, takeTurns } from "./stats.ts"

const ROUNDS = 5
const CALLS = Number(process.env.CALLS ?? 2_000)
const WARMUP = Number(process.env.WARMUP ?? 2_000)
const TARGET = 1.05

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

/**
 * The three series: the raw client, `registry.callTool` on the toolset `callTool` names and
 * `registry.callToolNow` on the one `callToolNow` names (the same toolset over HTTP).
 */
const measure = async (
  title: string,
  raw: Client,
  config: string,
  tools: { readonly callTool: string; readonly callToolNow: string }
): Promise<number> => {
  const runtime = ManagedRuntime.make(ToolsetRegistry.layerFile(config))
  try {
    const registry = await runtime.runPromise(Effect.service(ToolsetRegistry.ToolsetRegistry))
    await runtime.runPromise(registry.start)
    const all = [
      series("raw SDK Client", { promise: () => raw.callTool(echo) }),
      series("registry.callTool", { effect: registry.callTool(tools.callTool, echo.arguments) }),
      series("registry.callToolNow", {
        promise: async () => {
          const sent = registry.callToolNow(tools.callToolNow, echo.arguments)
          if (sent === undefined) throw new Error("callToolNow: no fast route")
          const exit = await sent
          if (exit._tag !== "Success") throw new Error("callToolNow failed")
        }
      })
    ]
    await runtime.runPromise(takeTurns(all, WARMUP, timed))
    const p50s = all.map((): Array<number> => [])
    const cpus = all.map((): Array<number> => [])
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of all) {
        s.times.length = 0
        s.cpu.length = 0
      }
      await runtime.runPromise(takeTurns(all, CALLS, timed))
      all.forEach((s, j) => {
        p50s[j]?.push(percentile(ascending(s.times), 0.5))
        cpus[j]?.push(median(s.cpu))
      })
    }
    const rawRounds = p50s[0] ?? []
    const ratiosOf = (j: number) => (p50s[j] ?? []).map((p50, i) => p50 / (rawRounds[i] ?? Number.NaN))
    console.log(`\n${title}: ${ROUNDS} rounds × ${CALLS} sequential echo calls per series, taking turns call by call`)
    console.log(
      renderTable(
        ["series", "p50 ms", "ratio (median)", "ratio range", "cpu µs/call", "p50 per round"],
        all.map((s, j) => {
          const ratios = ratiosOf(j)
          return [
            s.label,
            fmt(median(p50s[j] ?? [])),
            fmt(median(ratios)),
            `${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}`,
            fmt(median(cpus[j] ?? []), 0),
            (p50s[j] ?? []).map((x) => fmt(x)).join(" ")
          ]
        })
      )
    )
    return median(ratiosOf(1))
  } finally {
    await runtime.dispose()
  }
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
const server = NodeChildProcess.spawn(process.execPath, [everything, "streamableHttp"], {
  env: { ...process.env, PORT: String(port) },
  stdio: "ignore"
})
const url = `http://127.0.0.1:${port}/mcp`
try {
  const stdioRaw = new Client({ name: "bench-raw", version: "1.0.0" })
  // `setsid` execs the server in place, as the leader of its own session, as the toolset's is.
  await stdioRaw.connect(
    new StdioClientTransport({ command: "setsid", args: [process.execPath, everything, "stdio"], stderr: "ignore" })
  )
  const local = [`        command: "${process.execPath}"`, `        args: ["${everything}", "stdio"]`]
  const stdio = await measure(
    "stdio (a server per series)",
    stdioRaw,
    write(
      "stdio.yaml",
      toolsets([
        ["effect", local],
        ["now", local]
      ])
    ),
    { callTool: "effect_echo", callToolNow: "now_echo" }
  )
  await stdioRaw.close()

  await Net.awaitListening(port)
  const httpRaw = new Client({ name: "bench-raw", version: "1.0.0" })
  await httpRaw.connect(new StreamableHTTPClientTransport(new URL(url)))
  const http = await measure(
    "streamable HTTP (one server for all three)",
    httpRaw,
    write("http.yaml", toolsets([["everything", ["        remote:", `          url: ${url}`]]])),
    { callTool: "everything_echo", callToolNow: "everything_echo" }
  )
  await httpRaw.close()
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
