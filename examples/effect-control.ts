import { NodeRuntime } from "@effect/platform-node"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

const program = Effect.gen(function* () {
  const registry = yield* ToolsetRegistry.ToolsetRegistry
  // Every transition of every toolset from now on, in order, none lost, until the program ends
  // (started at once, so it sees the stop below).
  yield* registry.events.pipe(
    Stream.runForEach((event) => Console.log(`${event.toolset}: ${event.from} -> ${event.snapshot.state}`)),
    Effect.forkScoped({ startImmediately: true })
  )
  yield* registry.stopToolset("everything") // Stopped: nothing restarts it, its tools fail at once
  yield* registry
    .callTool("everything_echo", { message: "hi" })
    .pipe(Effect.catchTag("NotStarted", (error) => Console.log(`while stopped: ${error.message}`)))
  yield* registry.restartToolset("everything") // Ready again, or fails with why it could not start
  const report = yield* registry.reprobe // retries now every toolset down on a transient error
  yield* Console.log(`reprobe: ${report.recovered.length} recovered, ${report.failing.length} failing`)
  // Every failure is a tagged error: catch by tag the ones you handle, let the others through.
  const answer = yield* registry.callTool("everything_ecco", { message: "hi" }).pipe(
    Effect.map((result) => JSON.stringify(result.content)),
    Effect.catchTag("UnknownTool", (error) => Effect.succeed(`no such tool; near: ${error.near.join(", ")}`)),
    Effect.catchTag("CallTimeout", (error) => Effect.succeed(`gave up: ${error.message}`))
  )
  yield* Console.log(answer)
})

NodeRuntime.runMain(
  program.pipe(Effect.scoped, Effect.provide(ToolsetRegistry.layerFile(process.argv[2] ?? "agent.yaml")))
)
