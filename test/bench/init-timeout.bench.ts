/**
 * Start-up deadline benchmark: a real MCP server that never answers `initialize` (the fixture in
 * `FIXTURE_MODE=hang`, over stdio) must fail with `InitTimeout` at `startup_timeout`, not after the
 * kill of the stuck process (a stdin grace and a SIGTERM grace, up to 4 s). For a required toolset
 * (its first start fails and stays Stopped) and an optional one (its first start fails and the
 * Supervisor goes on retrying), each started RUNS times in a fresh scope, it measures:
 *   1. start → InitTimeout, minus `startup_timeout` (target ≤ 50 ms);
 *   2. what closing the scope then takes, and that the stuck process is gone afterwards (checked
 *      in /proc: the kill runs in the background, but the scope still waits for it).
 *
 * Run: cd /work/main && npm run bench:init
 */

import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Policy, ServerProcess } from "@toolvisor/core"
import { McpSpec, McpToolset } from "@toolvisor/mcp"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { formatter, max, median, renderTable } from "./stats.ts"

const RUNS = 10
const STARTUP_TIMEOUT_MS = 1_000
const TARGET_MS = 50

const root = NodePath.resolve(import.meta.dirname, "../..")
const fixture = NodePath.join(root, "test/support/fixture-server.mjs")
const tempDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-init-bench-"))

const fmt = formatter(1)

interface Run {
  readonly lateMs: number
  readonly closeMs: number
  readonly tag: string
  readonly pidGone: boolean
}

/** One start of a hanging server in its own scope: when the start fails, and what closing costs. */
const once = (label: string, lifecycle: unknown, run: number) =>
  Effect.gen(function* () {
    const pidFile = NodePath.join(tempDir, `${label}-${run}.pid`)
    const scope = yield* Scope.make()
    const toolset = yield* McpToolset.make({
      name: `hang-${label}`,
      spec: new McpSpec.Stdio({
        command: process.execPath,
        args: [fixture],
        env: { FIXTURE_MODE: "hang", FIXTURE_PID_FILE: pidFile }
      }),
      policy: Policy.fromLifecycleUnknownSync(lifecycle)
    }).pipe(Scope.provide(scope))
    const started = performance.now()
    const exit = yield* Effect.exit(toolset.start)
    const lateMs = performance.now() - started - STARTUP_TIMEOUT_MS
    const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
    const tag = error === undefined ? "Ready" : error._tag === "Some" ? error.value._tag : "Defect"
    const closing = performance.now()
    yield* Scope.close(scope, Exit.void)
    const closeMs = performance.now() - closing
    const pid = Number(NodeFs.readFileSync(pidFile, "utf8"))
    return { lateMs, closeMs, tag, pidGone: !ServerProcess.isAlive(pid) } satisfies Run
  })

const series = (label: string, lifecycle: unknown) =>
  Effect.forEach(
    Array.from({ length: RUNS }, (_, i) => i),
    (i) => once(label, lifecycle, i)
  )

const program = Effect.gen(function* () {
  yield* Console.log(
    `Start-up deadline: a stdio MCP server that never answers initialize, startup_timeout ${STARTUP_TIMEOUT_MS} ms, ${RUNS} starts each, Node ${process.version}`
  )
  const timeout = `${STARTUP_TIMEOUT_MS}ms`
  const required = yield* series("required", { startup_timeout: timeout, required: true })
  const optional = yield* series("optional", { startup_timeout: timeout, backoff: { initial: "10s" } })
  const row = (label: string, runs: ReadonlyArray<Run>) => [
    label,
    fmt(median(runs.map((r) => r.lateMs))),
    fmt(max(runs.map((r) => r.lateMs))),
    fmt(median(runs.map((r) => r.closeMs))),
    [...new Set(runs.map((r) => r.tag))].join(", "),
    `${runs.filter((r) => r.pidGone).length}/${runs.length}`
  ]
  yield* Console.log(
    renderTable(
      ["toolset", "late ms, median", "late ms, max", "close ms, median", "error", "server gone after close"],
      [row("required (stays Stopped)", required), row("optional (goes on retrying)", optional)]
    )
  )
  const all = [...required, ...optional]
  const worst = max(all.map((r) => r.lateMs))
  const ok = worst <= TARGET_MS && all.every((r) => r.tag === "InitTimeout" && r.pidGone)
  yield* Console.log(
    `error at startup_timeout + ${fmt(worst)} ms at worst (target <= ${TARGET_MS} ms), every server gone after close: ${ok ? "ok" : "MISSED"}`
  )
  if (!ok) process.exitCode = 1
})

Effect.runPromise(program).finally(() => NodeFs.rmSync(tempDir, { recursive: true, force: true }))
