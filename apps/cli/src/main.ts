/**
 * The `toolvisor` entry point. Ctrl-C and SIGTERM interrupt the command, whose scope stops
 * every toolset, and then the process exits 0; failures become one clear line on stderr and an
 * exit code: 2 for usage and config errors, 1 for everything else.
 */
import { NodeServices } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import { toolvisor } from "./commands.ts"
import * as Log from "./Log.ts"

const version = "0.1.0"

const exitCodeOf = (error: unknown): number => {
  if (typeof error !== "object" || error === null || !("_tag" in error)) return 1
  switch (error._tag) {
    case "UsageError":
    case "ConfigError":
    case "ShowHelp":
    case "UnknownAgent":
      return 2
    default:
      return 1
  }
}

/** Errors the CLI words itself print as they are; anything else is prefixed with its tag. */
const worded = new Set(["UsageError", "Failure", "ConfigError", "GatewayError"])

const messageOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null || !("message" in error) || typeof error.message !== "string") {
    return String(error)
  }
  const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : undefined
  return tag === undefined || worded.has(tag) ? error.message : `${tag}: ${error.message}`
}

/**
 * Runs the CLI on `argv`; the exit code is the effect's value. A failure is one log line (the
 * same format as every other line on stderr); a defect too, never a stack trace.
 */
const main = (argv: ReadonlyArray<string>) =>
  Command.runWith(toolvisor, { version })(argv).pipe(
    Effect.scoped,
    Effect.as(0),
    Effect.catch((error) => {
      const code = exitCodeOf(error)
      // effect/cli has already printed the usage and the problem for its own errors.
      const printed = error !== null && typeof error === "object" && "_tag" in error && error._tag === "ShowHelp"
      return printed ? Effect.succeed(code) : Effect.as(Effect.logError(messageOf(error)), code)
    }),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.as(Effect.logError(Log.causeText(cause)), 1)
    )
  )

/** Logs go to stderr: stdout belongs to results, JSON lines and the MCP protocol. */
const Services = Layer.merge(NodeServices.layer, Log.layer)

/** Like NodeRuntime.runMain, but a signal-driven shutdown that completed cleanly exits 0. */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  let signalled = false
  const onSignal = () => {
    signalled = true
    fiber.interruptUnsafe(fiber.id)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    process.off("SIGINT", onSignal)
    process.off("SIGTERM", onSignal)
    if (signalled && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) process.exit(0)
    // Everything is closed by now; leave with the code the command chose (process.exitCode).
    teardown(exit, (code) => process.exit(code === 0 ? (process.exitCode ?? 0) : code))
  })
})

runMain(
  main(process.argv.slice(2)).pipe(
    Effect.flatMap((code) => Effect.sync(() => (process.exitCode = code))),
    Effect.provide(Services)
  )
)
