/**
 * Cold start of the `toolvisor` CLI as people run it, in one run with its baselines, rounds
 * interleaved in a seeded random order so load on the machine falls on every series alike:
 *   1. `--version` through the installed bin (the bundle; target ≤ 150 ms), next to `node -e 0`
 *      and to the CLI run from its TypeScript sources;
 *   2. `status` on a config of 10 `mcp-server-everything` toolsets (start, wait until all are
 *      Ready, print the table, stop; target ≤ 1.1×) next to a raw-SDK script doing the same:
 *      10 SDK `Client`s over `StdioClientTransport` connected in parallel, `tools/list` on each, a
 *      line per server, then close.
 * Wall time from spawn to exit, median of ROUNDS. The bundle must be built (`npm ci` builds it).
 *
 * Run: npm run bench:start
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { formatter, median, renderTable, seededRandom } from "./stats.ts"

const ROUNDS = 15
const TOOLSETS = 10
const VERSION_TARGET_MS = 150
const STATUS_TARGET = 1.1

const root = NodePath.resolve(import.meta.dirname, "../..")
const everything = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const bin = NodePath.join(root, "apps/cli/bin/toolvisor.js")

/** Run as `cold-start.bench.ts --raw`, this file is the raw-SDK status script. */
const rawStatus = async () => {
  const started = await Promise.all(
    Array.from({ length: TOOLSETS }, async (_, i) => {
      const client = new Client({ name: "raw-status", version: "1.0.0" })
      await client.connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"] }))
      const { tools } = await client.listTools()
      return { client, line: `everything${i}  Ready  ${tools.length}` }
    })
  )
  for (const { line } of started) process.stdout.write(`${line}\n`)
  await Promise.all(started.map(({ client }) => client.close()))
}

const config = () => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cold-start-"))
  const path = NodePath.join(dir, "agent.yaml")
  const entries = Array.from({ length: TOOLSETS }, (_, i) =>
    [
      "      - type: mcp",
      `        name: everything${i}`,
      `        command: "${process.execPath}"`,
      `        args: ["${everything}", "stdio"]`
    ].join("\n")
  )
  NodeFs.writeFileSync(path, ["agents:", "  root:", "    toolsets:", ...entries].join("\n"))
  return path
}

/** Wall milliseconds from spawn to exit; fails on a non-zero exit. */
const timed = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve, reject) => {
    const began = performance.now()
    const child = NodeChild.spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("exit", (code) =>
      code === 0 ? resolve(performance.now() - began) : reject(new Error(`${args.join(" ")}: exit ${code}\n${stderr}`))
    )
  })

const main = async () => {
  if (!NodeFs.existsSync(NodePath.join(root, "apps/cli/bundle/main.js"))) {
    throw new Error("no bundle: run `npm run build -w toolvisor` (npm ci does it)")
  }
  const agent = config()
  const series: ReadonlyArray<{ readonly name: string; readonly args: ReadonlyArray<string> }> = [
    { name: "node -e 0", args: ["-e", "0"] },
    { name: "toolvisor --version (bundle)", args: [bin, "--version"] },
    {
      name: "toolvisor --version (sources)",
      args: ["--conditions=@toolvisor/source", NodePath.join(root, "apps/cli/src/main.ts"), "--version"]
    },
    { name: `raw SDK status, ${TOOLSETS} servers`, args: [import.meta.filename, "--raw"] },
    { name: `toolvisor status, ${TOOLSETS} toolsets`, args: [bin, "status", agent] }
  ]
  const times = new Map(series.map((s) => [s.name, [] as Array<number>]))
  // One unmeasured run each fills the page cache and Node's compile cache, as a second start would.
  for (const s of series) await timed(s.args)
  const random = seededRandom(15)
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...series].sort(() => random() - 0.5)
    for (const s of order) times.get(s.name)?.push(await timed(s.args))
  }
  const ms = formatter(0)
  const at = (name: string) => median(times.get(name) ?? [])
  console.log(`cold start, wall ms, median of ${ROUNDS} interleaved rounds (${NodeOs.cpus().length} cores)\n`)
  console.log(
    renderTable(
      ["series", "median", "min", "max"],
      series.map((s) => {
        const values = times.get(s.name) ?? []
        return [s.name, ms(at(s.name)), ms(Math.min(...values)), ms(Math.max(...values))]
      })
    )
  )
  const version = at("toolvisor --version (bundle)")
  const ratio = at(`toolvisor status, ${TOOLSETS} toolsets`) / at(`raw SDK status, ${TOOLSETS} servers`)
  console.log(
    `\n--version (bundle): ${ms(version)} ms (target ≤ ${VERSION_TARGET_MS}) ${version <= VERSION_TARGET_MS ? "ok" : "MISSED"}`
  )
  console.log(
    `status / raw SDK: ${formatter(2)(ratio)}× (target ≤ ${STATUS_TARGET}×) ${ratio <= STATUS_TARGET ? "ok" : "MISSED"}`
  )
}

await (process.argv[2] === "--raw" ? rawStatus() : main())
