import { NodeRuntime } from "@effect/platform-node"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

const program = Effect.gen(function* () {
  const registry = yield* ToolsetRegistry.ToolsetRegistry // started, supervised toolsets
  const catalog = yield* registry.catalog() // says whether it is complete, and why not
  console.log(`${catalog.tools.length} tools; missing: ${catalog.missing.map((m) => m.toolset).join(", ") || "none"}`)
  const result = yield* registry.callTool("everything_echo", { message: "hi" })
  console.log(result.content)
  // The status board now, then after every change; take the first one and end.
  yield* registry.status.pipe(
    Stream.take(1),
    Stream.runForEach((board) => Effect.sync(() => console.log(board.map((s) => `${s.name}: ${s.state}`).join("\n"))))
  )
})

// Closing the Layer (the program's end, Ctrl-C or SIGTERM) stops every toolset.
NodeRuntime.runMain(program.pipe(Effect.provide(ToolsetRegistry.layerFile(process.argv[2] ?? "agent.yaml"))))
