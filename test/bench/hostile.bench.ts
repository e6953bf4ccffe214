/**
 * What a hostile server costs the process that supervises it, and its neighbours:
 *   1. stderr flood: a server writes one 20 MiB stderr line, then 1 KiB lines as fast as the pipe
 *      takes them; this process's RSS (sampled each second) and the p50/p99 of sequential `echo`
 *      calls on another toolset (server-everything), before and during the flood;
 *   2. oversized answer: a server answers a call with one 20 MiB line; how long the call takes to
 *      fail (a `call_timeout` of 30 s bounds it), and whether the next call on that session works;
 *   3. deep answer: the same with a result nested 100 000 arrays deep.
 *
 * Run: npm run bench:hostile   (FLOOD_SECONDS=45 by default)
 */
import * as NodePath from "node:path"
import { Policy, type Toolset } from "@toolvisor/core"
import { McpSpec, McpToolset } from "@toolvisor/mcp"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { ascending, formatter, percentile, renderTable } from "./stats.ts"

const FLOOD_SECONDS = Number(process.env.FLOOD_SECONDS ?? 45)
const BASELINE_SECONDS = 5

const root = NodePath.resolve(import.meta.dirname, "../..")
const hostile = (script: string, env: Record<string, string> = {}) =>
  McpSpec.Stdio.make({ command: process.execPath, args: [NodePath.join(root, "test/fixtures/hostile", script)], env })
const everything = McpSpec.Stdio.make({
  command: process.execPath,
  args: [NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
})

const policy = Policy.fromLifecycleUnknownSync({ call_timeout: "30s", startup_timeout: "30s" })

const fmt = formatter(1)
const ms = formatter(3)
const mb = (bytes: number) => fmt(bytes / 1e6)

const started = (name: string, spec: McpSpec.McpSpec) =>
  Effect.gen(function* () {
    const toolset = yield* McpToolset.make({ name, spec, policy })
    yield* toolset.start
    return toolset
  })

/** Sequential echo calls for `seconds`, their latencies in ms. */
const echoFor = (toolset: Toolset.Toolset, seconds: number) =>
  Effect.gen(function* () {
    const samples: Array<number> = []
    const until = Date.now() + seconds * 1000
    while (Date.now() < until) {
      const start = performance.now()
      yield* toolset.callTool("echo", { message: "x" })
      samples.push(performance.now() - start)
    }
    return ascending(samples)
  })

/** The highest RSS seen while `effect` runs, sampled each second, and the RSS when it ends. */
const peakRss = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    let peak = process.memoryUsage().rss
    const sampler = yield* Effect.forkChild(
      Effect.forever(
        Effect.sleep("1 second").pipe(
          Effect.andThen(Effect.sync(() => (peak = Math.max(peak, process.memoryUsage().rss))))
        )
      )
    )
    const result = yield* effect
    yield* Fiber.interrupt(sampler)
    const end = process.memoryUsage().rss
    return { result, rss: { peak: Math.max(peak, end), end } }
  })

const row = (label: string, samples: ReadonlyArray<number>, rss: { readonly peak: number; readonly end: number }) => [
  label,
  String(samples.length),
  ms(percentile(samples, 0.5)),
  ms(percentile(samples, 0.99)),
  mb(rss.peak),
  mb(rss.end)
]

/** How long one call takes to fail (or succeed), and what the next call on the session gets. */
const timed = (toolset: Toolset.Toolset, tool: string) =>
  Effect.gen(function* () {
    const start = performance.now()
    const exit = yield* Effect.exit(toolset.callTool(tool, {}))
    const took = performance.now() - start
    const next = yield* Effect.exit(toolset.callTool("echo", { message: "after" }))
    const outcome = Exit.match(exit, {
      onSuccess: () => "succeeded",
      onFailure: (cause) => String(cause).split("\n")[0]?.slice(0, 160) ?? ""
    })
    return [tool, fmt(took), outcome, Exit.isSuccess(next) ? "ok" : "failed"]
  })

const program = Effect.gen(function* () {
  const other = yield* started("other", everything)
  const { result: quiet, rss: quietRss } = yield* peakRss(echoFor(other, BASELINE_SECONDS))
  yield* started("flood", hostile("stderr-flood.mjs"))
  const { result: flooded, rss: floodRss } = yield* peakRss(echoFor(other, FLOOD_SECONDS))
  yield* Console.log(`stderr flood (${FLOOD_SECONDS} s), echo on another toolset, ms:`)
  yield* Console.log(
    renderTable(
      ["phase", "calls", "p50", "p99", "peak RSS MB", "RSS at end MB"],
      [row("before the flood", quiet, quietRss), row("during the flood", flooded, floodRss)]
    )
  )

  const huge = yield* started("huge", hostile("huge-answer.mjs"))
  const deep = yield* started("deep", hostile("deep-answer.mjs"))
  const answers = [yield* timed(huge, "huge"), yield* timed(deep, "deep")]
  yield* Console.log("\nhostile answers (call_timeout 30 s):")
  yield* Console.log(renderTable(["call", "ms to end", "outcome", "next call"], answers))
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
