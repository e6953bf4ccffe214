/**
 * The call path's own cost, interleaved in one process: a raw SDK `Client`, `registry.callTool`
 * (the Effect API, through `Runtime.layerFile`) and `registry.callToolNow` (the gateway's path)
 * calling `server-everything`'s `echo`. Two transports:
 *   - stdio, where the path's cost shows (a call is a fraction of a millisecond): the registry's
 *     two series share its toolset's server, the raw client has its own, started through `setsid`
 *     as the toolset's is (a session leader, so the kernel schedules both alike);
 *   - streamable HTTP on loopback: all three on one server, the same socket stack.
 * Each round runs a block of sequential calls per series, in a rotated order; a series' p50 is the
 * median of its rounds' p50s, and its ratio is taken against the raw client's p50 in each round.
 * Next to it, the CPU time this process spent per call (`process.cpuUsage`, median of rounds):
 * on a loaded machine it moves less than wall time, and it is where the call path's own cost shows.
 * No GC is forced between blocks: a forced full GC shrinks the young generation and drops
 * optimized code, so the first thousand or so calls of every block ran cold (their p50 up to
 * twice the steady one, and the collector's threads billed to the block's CPU time), which
 * weighed most on the series that allocates most. Collections fall where they fall, on every
 * series alike; each series is warmed up first (2,000 calls) so the JIT has settled.
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
import { Runtime, ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Net from "../support/Net.ts"
import { ascending, formatter, median, percentile, renderTable } from "./stats.ts"

const ROUNDS = 5
const CALLS = Number(process.env.CALLS ?? 2_000)
const WARMUP = Number(process.env.WARMUP ?? 2_000)
const TARGET = 1.05

const root = NodePath.resolve(import.meta.dirname, "../..")
const everything = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const echo = { name: "echo", arguments: { message: "x" } }
const fmt = formatter(3)

/** One series: `calls` sequential echo calls, each timed on its own. */
type Series = (calls: number, times: Array<number>) => Promise<void>

/** The three series against one toolset named `everything` in `config`, and `raw`. */
const measure = async (title: string, raw: Client, config: string): Promise<number> => {
  const runtime = ManagedRuntime.make(Runtime.layerFile(config))
  try {
    const registry = await runtime.runPromise(Effect.service(ToolsetRegistry.ToolsetRegistry))
    await runtime.runPromise(registry.start)
    const series: ReadonlyArray<readonly [string, Series]> = [
      [
        "raw SDK Client",
        async (calls, times) => {
          for (let i = 0; i < calls; i++) {
            const t0 = performance.now()
            await raw.callTool(echo)
            times.push(performance.now() - t0)
          }
        }
      ],
      [
        "registry.callTool",
        (calls, times) =>
          runtime.runPromise(
            Effect.gen(function* () {
              for (let i = 0; i < calls; i++) {
                const t0 = performance.now()
                yield* registry.callTool("everything_echo", echo.arguments)
                times.push(performance.now() - t0)
              }
            })
          )
      ],
      [
        "registry.callToolNow",
        async (calls, times) => {
          for (let i = 0; i < calls; i++) {
            const t0 = performance.now()
            const sent = registry.callToolNow("everything_echo", echo.arguments)
            if (sent === undefined) throw new Error("callToolNow: no fast route")
            const exit = await sent
            if (exit._tag !== "Success") throw new Error("callToolNow failed")
            times.push(performance.now() - t0)
          }
        }
      ]
    ]
    for (const [, run] of series) await run(WARMUP, [])
    const p50s = new Map<string, Array<number>>(series.map(([label]) => [label, []]))
    const cpus = new Map<string, Array<number>>(series.map(([label]) => [label, []]))
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < series.length; k++) {
        const entry = series[(round + k) % series.length]
        if (entry === undefined) continue
        const times: Array<number> = []
        const before = process.cpuUsage()
        await entry[1](CALLS, times)
        const cpu = process.cpuUsage(before)
        p50s.get(entry[0])?.push(percentile(ascending(times), 0.5))
        cpus.get(entry[0])?.push((cpu.user + cpu.system) / CALLS)
      }
    }
    const rawRounds = p50s.get("raw SDK Client") ?? []
    const ratiosOf = (label: string) => (p50s.get(label) ?? []).map((p50, i) => p50 / (rawRounds[i] ?? Number.NaN))
    console.log(`\n${title}: ${ROUNDS} rounds × ${CALLS} sequential echo calls per series, interleaved`)
    console.log(
      renderTable(
        ["series", "p50 ms", "ratio (median)", "ratio range", "cpu µs/call", "p50 per round"],
        series.map(([label]) => {
          const ratios = ratiosOf(label)
          return [
            label,
            fmt(median(p50s.get(label) ?? [])),
            fmt(median(ratios)),
            `${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}`,
            fmt(median(cpus.get(label) ?? []), 1),
            (p50s.get(label) ?? []).map((x) => fmt(x)).join(" ")
          ]
        })
      )
    )
    return median(ratiosOf("registry.callTool"))
  } finally {
    await runtime.dispose()
  }
}

const toolset = (lines: ReadonlyArray<string>) =>
  ["agents:", "  root:", "    toolsets:", "      - type: mcp", "        name: everything", ...lines].join("\n")

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
  const stdio = await measure(
    "stdio (the registry's server and the raw client's own)",
    stdioRaw,
    write("stdio.yaml", toolset([`        command: "${process.execPath}"`, `        args: ["${everything}", "stdio"]`]))
  )
  await stdioRaw.close()

  await Net.awaitListening(port)
  const httpRaw = new Client({ name: "bench-raw", version: "1.0.0" })
  await httpRaw.connect(new StreamableHTTPClientTransport(new URL(url)))
  const http = await measure(
    "streamable HTTP (one server for all three)",
    httpRaw,
    write("http.yaml", toolset(["        remote:", `          url: ${url}`]))
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
