/**
 * Agent-stack adapter benchmark (issue 16), one process, one registry over one
 *   `@modelcontextprotocol/server-everything` stdio server:
 *   1. overhead per call: p50/p99 of sequential `echo` calls through `registry.callTool`, through the
 *      effect/ai handler this package binds (`RegistryToolkit.call`), through the whole effect/ai
 *      `toolkit.handle` (effect/ai's own parameter decoding, handler fiber, queue, stream and result
 *      encoding around that handler) and through the AI SDK tool's `execute`, interleaved call by
 *      call in a seeded random order so drift falls on all alike; each runs as a Promise, as an
 *      agent framework runs it. A fifth series, `toolkit.handle` of a tool whose handler answers at
 *      once, is effect/ai's fixed cost per call, which no toolkit built on it avoids;
 *   2. rebuild of a 500-tool catalog: `RegistryToolkit.fromCatalog` (an effect/ai toolkit with its
 *      handlers bound) and `AiSdk.fromCatalog` (a ToolSet of dynamicTools), p50/p95/max of 50 runs
 *      after 5 untimed ones, each after a forced GC;
 *   3–5. deferred tools: tokens per model call, search latency at 5,000 tools, recall@5 (`deferred-tools.ts`).
 *
 * Run: npm run bench:ai   (needs node --expose-gc, set in the npm script)
 */
import { AiSdk, RegistryToolkit, ToolOutput } from "@toolvisor/ai"
import { ServerProcess } from "@toolvisor/core"
import type { Catalog } from "@toolvisor/runtime"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { everything } from "../../packages/ai/test/helpers.ts"
import { config, open } from "../../packages/runtime/test/helpers.ts"
import * as DeferredTools from "./deferred-tools.ts"
import { ascending, formatter, gc, max, median, percentile, renderTable, seededRandom, shuffled } from "./stats.ts"

const WARMUP = 300
const CALLS = 3000
const REBUILDS = 50
const CATALOG_SIZE = 500

const fmt = formatter(1)
const echoArgs = { message: "bench" }

const { registry, close } = await Effect.runPromise(open(config([everything()])))
await Effect.runPromise(registry.start)
const serverPid = (await Effect.runPromise(registry.snapshot)).find((s) => s.name === "everything")?.pid

const toolkit = await Effect.runPromise(RegistryToolkit.make(registry))
const aiSdk = await AiSdk.toolvisorTools(registry)
const aiEcho = aiSdk.tools.everything_echo
if (aiEcho?.execute === undefined) throw new Error("everything_echo is not in the AI SDK tool set")
const execute = aiEcho.execute

/** A toolkit whose one tool answers at once: what effect/ai itself costs per call. */
const instant = Tool.dynamic("instant", {
  parameters: { type: "object" },
  success: ToolOutput.Result,
  failure: ToolOutput.ToolFailure,
  failureMode: "return"
})
const instantKit = Toolkit.make(instant)
const instantToolkit = await Effect.runPromise(
  Effect.flatMap(instantKit.toHandlers({ instant: () => Effect.succeed({ content: [] }) }), (context) =>
    Effect.provideContext(instantKit, context)
  )
)

const series = {
  "registry.callTool": () => Effect.runPromise(registry.callTool("everything_echo", echoArgs)),
  "effect/ai handler": () =>
    Effect.runPromise(Effect.result(RegistryToolkit.call(registry, "everything_echo", "everything_echo", echoArgs))),
  "effect/ai toolkit.handle": () =>
    Effect.runPromise(
      Effect.flatMap(toolkit.handle("everything_echo", echoArgs), (results) => Stream.runLast(results))
    ),
  "AI SDK tool.execute": () => Promise.resolve(execute(echoArgs, { toolCallId: "bench", messages: [], context: {} })),
  "effect/ai handle, instant tool": () =>
    Effect.runPromise(Effect.flatMap(instantToolkit.handle("instant", {}), (results) => Stream.runLast(results)))
} as const
const paths = Object.entries(series)

const timed = async (run: () => Promise<unknown>): Promise<number> => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

for (let i = 0; i < WARMUP; i++) for (const [, run] of paths) await timed(run)
gc("bench:ai")
const random = seededRandom(16)
const samples = new Map(paths.map(([name]) => [name, [] as number[]]))
for (let i = 0; i < CALLS; i++) {
  for (const [name, run] of shuffled(paths, random)) samples.get(name)?.push(await timed(run))
}

const baseline = median(samples.get("registry.callTool") ?? [])
console.log(`\n1. overhead per call (${CALLS} echo calls each, interleaved), µs`)
console.log(
  renderTable(
    ["path", "p50", "p99", "p50 ÷ callTool"],
    [...samples].map(([name, times]) => {
      const sorted = ascending(times)
      return [
        name,
        fmt(percentile(sorted, 0.5) * 1000, 0),
        fmt(percentile(sorted, 0.99) * 1000, 0),
        fmt(percentile(sorted, 0.5) / baseline, 3)
      ]
    })
  )
)

// A 500-tool catalog from the server's real tools, renamed so every name is distinct.
const listed = await Effect.runPromise(registry.catalog())
const big: Catalog.Catalog = {
  complete: true,
  missing: [],
  shadowed: [],
  offline: [],
  version: 1,
  tools: Array.from({ length: CATALOG_SIZE }, (_, i) => {
    const entry = listed.tools[i % listed.tools.length]!
    return { ...entry, name: `${entry.name}_${i}` }
  })
}
const rebuilds = {
  "RegistryToolkit.fromCatalog": () => Effect.runSync(RegistryToolkit.fromCatalog(registry, big)),
  "AiSdk.fromCatalog": () => AiSdk.fromCatalog(registry, big)
} as const
console.log(`\n2. rebuild for a ${CATALOG_SIZE}-tool catalog (${REBUILDS} runs each, interleaved), ms`)
// A few untimed runs first, so the figures are of warm code, as after an agent's first turn.
for (let i = 0; i < 5; i++) for (const build of Object.values(rebuilds)) build()
const rebuildTimes = new Map(Object.keys(rebuilds).map((name) => [name, [] as number[]]))
for (let i = 0; i < REBUILDS; i++) {
  for (const [name, build] of Object.entries(rebuilds)) {
    // A rebuild is rare (the tools moved); collect the previous runs' garbage so it is not billed here.
    gc("bench:ai")
    const started = performance.now()
    build()
    rebuildTimes.get(name)?.push(performance.now() - started)
  }
}
console.log(
  renderTable(
    ["builder", "p50", "p95", "max"],
    [...rebuildTimes].map(([name, times]) => [
      name,
      fmt(median(times), 2),
      fmt(percentile(ascending(times), 0.95), 2),
      fmt(max(times), 2)
    ])
  )
)

await aiSdk.close()
await Effect.runPromise(close)
if (serverPid !== undefined && ServerProcess.groupAlive(serverPid))
  throw new Error(`server ${serverPid} outlived the bench`)

await DeferredTools.run()
