/**
 * The `toolvisor` entry point. Ctrl-C, SIGTERM and SIGHUP (the terminal or ssh session closed)
 * interrupt the command, whose scope stops
 * every toolset, and then the process exits 0; failures become one clear line on stderr and an
 * exit code: 2 for usage and config errors, 1 for everything else. A config error is no log
 * line: it is the command's result, printed whole (every problem on its own line) whatever the
 * log level.
 */
import { NodeServices } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import { CliOutput, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as ConfigProblems from "./ConfigProblems.ts"
import { toolvisor } from "./commands.ts"
import * as Log from "./Log.ts"
import * as SignalExit from "./SignalExit.ts"

const version = "0.1.0"

/** Errors the CLI words itself print as they are; anything else is prefixed with its tag. */
const worded = new Set(["UsageError", "Failure", "ConfigError", "GatewayError"])

const messageOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null || !("message" in error) || typeof error.message !== "string") {
    return String(error)
  }
  const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : undefined
  return tag === undefined || worded.has(tag) ? error.message : `${tag}: ${error.message}${databaseSaid(error)}`
}

/**
 * What PostgreSQL said under a SQL error's words: the driver's "Query failed" alone did not say
 * "permission denied for schema public" (the error's reason, then the server's own error).
 */
const databaseSaid = (error: object): string => {
  const said =
    "_tag" in error && error._tag === "SqlError" && "cause" in error ? (error.cause as Error)?.cause : undefined
  return said instanceof Error ? `: ${said.message}` : ""
}

const cli = Command.runWith(toolvisor, { version })

type Failed = Effect.Error<ReturnType<typeof cli>>

const exitCodeOf = (error: Failed): number => {
  if (!("_tag" in error)) return 1
  switch (error._tag) {
    case "Shown":
      return error.exitCode
    case "UsageError":
    case "ConfigError":
    case "ShowHelp":
    case "UnknownAgent":
      return 2
    default:
      return 1
  }
}

/** How a failure is shown: not at all when it was shown already, a config error whole, else one log line. */
const report = (error: Failed): Effect.Effect<void> => {
  if (!("_tag" in error)) return Effect.logError(messageOf(error))
  switch (error._tag) {
    // effect/cli has already printed the usage and the problem for its own errors.
    case "ShowHelp":
    case "Shown":
      return Effect.void
    case "ConfigError":
      // effect/Config's ConfigError (a missing environment variable) has the same tag and no issues.
      return "issues" in error ? Console.error(ConfigProblems.text(error)) : Effect.logError(messageOf(error))
    default:
      return Effect.logError(messageOf(error))
  }
}

/**
 * Runs the CLI on `argv`; the exit code is the effect's value. A failure is one log line (the
 * same format as every other line on stderr), or a config error's report; a defect is one log
 * line too, never a stack trace.
 */
const main = (argv: ReadonlyArray<string>) =>
  cli(argv).pipe(
    Effect.scoped,
    Effect.as(0),
    Effect.catch((error) => Effect.as(report(error), exitCodeOf(error))),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.as(Effect.logError(Log.causeText(cause)), 1)
    )
  )

/**
 * A usage error's help goes to stderr with the error, as asked-for help does not: stdout is a
 * result's, and `serve`'s the MCP protocol's, where a host would read the help as messages.
 */
const UsageOnStderr = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.consoleWith((console) =>
          Effect.provideService(
            CliOutput.defaultPresenter.present(event),
            Console.Console,
            Object.assign(Object.create(console), { log: (...args: ReadonlyArray<unknown>) => console.error(...args) })
          )
        )
      : CliOutput.defaultPresenter.present(event)
})

/** Logs go to stderr: stdout belongs to results, JSON lines and the MCP protocol. */
const Services = Layer.mergeAll(NodeServices.layer, Log.layer, UsageOnStderr)

/**
 * Exits once stdout and stderr have handed what they hold to the OS. Written to a pipe, output is
 * queued past the pipe's 64 KiB, and `process.exit` drops the queue: `tools --json | slow-reader`
 * got its first 64 KiB and exit code 0. A reader that goes away ends the wait with its error. The
 * wait is a reader's, never a signal's: a SIGINT or SIGTERM meanwhile exits at once, and a
 * shutdown a signal asked for waits at most `signalledFlushMillis` for a reader that is behind.
 */
const exitFlushed = (code: number, signalled: boolean): void => {
  const pending = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0)
  const leave = () => process.exit(code)
  if (pending.length === 0) leave()
  for (const signal of shutdownSignals) process.once(signal, leave)
  if (signalled) setTimeout(leave, signalledFlushMillis)
  let left = pending.length
  for (const stream of pending) {
    const settle = () => {
      stream.off("drain", settle).off("error", settle).off("close", settle)
      left -= 1
      if (left === 0) leave()
    }
    stream.on("drain", settle).on("error", settle).on("close", settle)
  }
}

/**
 * The signals that end a command gracefully. SIGHUP is a closed terminal or ssh session: left to
 * Node it killed the process at once, with no answer to calls in flight and no stop of its servers.
 */
const shutdownSignals: ReadonlyArray<NodeJS.Signals> = ["SIGINT", "SIGTERM", "SIGHUP"]

/** How long a shutdown a signal asked for waits for a reader to take what is left of the output. */
const signalledFlushMillis = 1_000

/**
 * Like NodeRuntime.runMain, but a signal-driven shutdown that completed cleanly exits as
 * `SignalExit` says: 0 for a command that runs until a signal, 128 + the signal's number for one
 * it cut short.
 */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  let signalled: NodeJS.Signals | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    signalled = signal
    fiber.interruptUnsafe(fiber.id)
  }
  for (const signal of shutdownSignals) process.on(signal, onSignal)
  fiber.addObserver((exit) => {
    for (const signal of shutdownSignals) process.off(signal, onSignal)
    if (signalled !== undefined && Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) {
      const { code, message } = SignalExit.outcome(signalled)
      if (message !== undefined) process.stderr.write(`${Log.plain("WARN", message)}\n`)
      return exitFlushed(code, true)
    }
    // Everything is closed by now; leave with the code the command chose (process.exitCode).
    teardown(exit, (code) => exitFlushed(code === 0 ? Number(process.exitCode ?? 0) : code, signalled !== undefined))
  })
})

runMain(
  main(process.argv.slice(2)).pipe(
    Effect.flatMap((code) => Effect.sync(() => (process.exitCode = code))),
    Effect.provide(Services)
  )
)
