/**
 * The Effect API in a few lines: one Layer gives a started registry of supervised toolsets.
 * This program waits until every toolset has settled, lists the agent's tools, calls one, and
 * prints status changes until it is stopped with Ctrl-C.
 *
 *   npx node --conditions=@toolvisor/source examples/registry.ts [examples/agent.yaml]
 */
import * as NodePath from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

const config = process.argv[2] ?? NodePath.join(import.meta.dirname, "agent.yaml")

const program = Effect.gen(function* () {
  const registry = yield* ToolsetRegistry.ToolsetRegistry
  const catalog = yield* registry.catalog()
  console.log(
    `${catalog.tools.length} tools${catalog.complete ? "" : ` (not ready: ${catalog.missing.map((m) => m.toolset).join(", ")})`}`
  )
  for (const tool of catalog.tools) console.log(`  ${tool.name.padEnd(32)} ${tool.toolset}`)
  const echo = catalog.tools.find((t) => t.name.endsWith("echo"))
  if (echo !== undefined) {
    const result = yield* registry.callTool(echo.name, { message: "hello from Effect" })
    console.log(`${echo.name} →`, JSON.stringify(result.content))
  }
  console.log("status changes (Ctrl-C to stop):")
  yield* registry.events.pipe(
    Stream.runForEach((e) =>
      Effect.sync(() =>
        console.log(
          `  ${e.toolset}: ${e.from} → ${e.snapshot.state}${e.snapshot.lastError ? ` (${e.snapshot.lastError.message})` : ""}`
        )
      )
    )
  )
})

// runMain turns Ctrl-C into interruption, so every toolset is stopped and no server outlives us.
NodeRuntime.runMain(program.pipe(Effect.provide(ToolsetRegistry.layerFile(config))))
