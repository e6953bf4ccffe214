/**
 * `run --json`: a line protocol for scripts and UIs. Stdout carries only JSON lines — a status
 * line on every transition, a tools line whenever the catalog changes, and one answer per
 * command read from stdin. Commands run concurrently (a call to a stalled server never holds up
 * a `status` or a `restart`), so an answer echoes the command's `id` when it had one. Logs go to
 * stderr. Stdin is a trust boundary: a line longer than `maxLine` or nested deeper than
 * `JsonLimits.maxDepth` is refused with an error line before it is parsed.
 *
 * When the run ends is a matter of what stdin is (`commandSource`). A pipe, a socket, a file or a
 * terminal carries commands, and its end ends the run — a script that closes its end of the pipe
 * is done. `/dev/null` (systemd's default, `docker run` without `-i`, `&` in a script) carries
 * none, and cannot close: the run goes on until SIGTERM or Ctrl-C, as a service does. Either way
 * one line on stderr says which.
 */
import * as NodeFs from "node:fs"
import * as NodeTty from "node:tty"
import { JsonLimits } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/**
 * Writes one line, and waits while the reader is behind: a reader that stops reading had every
 * line queued in this process (a restart loop's tools lines grew it past a gigabyte). Waiting
 * holds the streams that produce the lines, and the catalog is built only when its line can go.
 */
const write = (value: unknown) =>
  Effect.callback<void>((resume) => {
    if (process.stdout.write(`${Printable.json(value)}\n`)) return resume(Effect.void)
    void drained().then(() => resume(Effect.void))
  })

/** Settles once stdout has drained (or failed): one wait, shared by every line behind it. */
let draining: Promise<void> | undefined
const drained = () => {
  draining ??= new Promise<void>((resolve) => {
    const go = () => {
      process.stdout.off("drain", go).off("error", go).off("close", go)
      draining = undefined
      resolve()
    }
    process.stdout.on("drain", go).on("error", go).on("close", go)
  })
  return draining
}

/** What an answer carries of its command: the name, and the `id` when the command had one. */
interface Header {
  readonly cmd: string | null
  readonly id?: unknown
}

const error = (header: Header, tag: string, message: string) => write({ type: "error", ...header, tag, message })

/**
 * Calls run at once, at most: past it, stdin is not read on until one ends. With the writes
 * waiting on a reader that is behind, a client that sends calls faster than it reads holds no
 * more than this many answers here. Other commands take no place, so a `status` or a `restart`
 * sent before the call that finds the places taken is answered whatever the calls do.
 */
export const maxInFlight = 64

/** The longest command line read; what passes it is skipped to its end and refused (as the MCP transport bounds a message). */
export const maxLine = 16 * 1024 * 1024

/** A line from stdin, or the length of one that was too long to keep. */
type Input = { readonly _tag: "Line"; readonly text: string } | { readonly _tag: "TooLarge"; readonly length: number }

/**
 * Emits a tools line for the catalog once the start-up has run (so a listing of toolsets that
 * were simply not started yet is never sent), then each time the registry says it changed.
 */
const catalogLines = (registry: ToolsetRegistry.Registry, started: Effect.Effect<void>) =>
  Effect.andThen(
    started,
    registry.catalogChanges().pipe(
      Stream.runForEach((catalog) => write(Output.catalogJson(catalog))),
      Effect.catch((error) => Effect.logWarning(`no catalog: ${error.message}`))
    )
  )

/** A command line from stdin, parsed: a command, or the answer that refuses it. */
type Parsed =
  | { readonly _tag: "Command"; readonly cmd: string; readonly fields: { readonly [key: string]: unknown } }
  | { readonly _tag: "Refused"; readonly answer: Effect.Effect<void> }

const refused = (tag: string, message: string): Parsed => ({
  _tag: "Refused",
  answer: error({ cmd: null }, tag, message)
})

const parse = (line: string): Parsed => {
  if (JsonLimits.textDepth(line, JsonLimits.maxDepth) > JsonLimits.maxDepth) {
    return refused("TooDeep", `the command nests deeper than ${JsonLimits.maxDepth} levels`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return refused("BadCommand", `not JSON: ${Output.truncate(line, 80)}`)
  }
  return Predicate.isObject(parsed) && typeof parsed.cmd === "string"
    ? { _tag: "Command", cmd: parsed.cmd, fields: parsed }
    : refused("BadCommand", 'expected an object with a "cmd" field')
}

/** Handles one command and writes its answer. */
const command = (
  registry: ToolsetRegistry.Registry,
  { cmd, fields: parsed }: Extract<Parsed, { readonly _tag: "Command" }>
): Effect.Effect<void> => {
  const header: Header = parsed.id === undefined ? { cmd } : { cmd, id: parsed.id }
  const fail = (e: { readonly _tag: string; readonly message: string }) => error(header, e._tag, e.message)
  switch (cmd) {
    case "status":
      return Effect.flatMap(registry.snapshot, (board) =>
        write({ type: "result", ...header, toolsets: board.map((s) => Output.statusJson(s)) })
      )
    case "tools":
      return registry.catalog().pipe(
        Effect.flatMap((catalog) => write({ ...Output.catalogJson(catalog), type: "result", ...header })),
        Effect.catch(fail)
      )
    case "restart": {
      const toolset = parsed.toolset
      if (typeof toolset !== "string") return error(header, "BadCommand", 'restart needs "toolset": a name')
      return registry
        .restartToolset(toolset)
        .pipe(Effect.andThen(write({ type: "result", ...header, toolset })), Effect.catch(fail))
    }
    case "call": {
      const tool = parsed.tool
      const args = parsed.args ?? {}
      if (typeof tool !== "string") return error(header, "BadCommand", 'call needs "tool": a name')
      if (!Predicate.isObject(args)) return error(header, "BadCommand", '"args" must be an object')
      return registry.callTool(tool, args).pipe(
        Effect.flatMap((result) => write({ type: "result", ...header, tool, result })),
        Effect.catch(fail)
      )
    }
    default:
      return error(header, "BadCommand", `unknown command "${cmd}" (status, tools, restart, call)`)
  }
}

/**
 * Whether stdin can deliver commands: a terminal, a pipe, a socket or a file can; a device that is
 * no terminal (`/dev/null`, which Node also puts on a descriptor 0 it found closed) cannot.
 */
export const commandSource = (fd = 0): "stdin" | "none" => {
  try {
    return NodeFs.fstatSync(fd).isCharacterDevice() && !NodeTty.isatty(fd) ? "none" : "stdin"
  } catch {
    return "none"
  }
}

/**
 * Lines typed on stdin, until it closes. A line is kept only up to `maxLine` characters: past
 * that the rest of it is skipped and it arrives as `TooLarge`, so a flood without newlines costs
 * bounded memory.
 */
const stdinLines = Stream.callback<Input, Error>((queue) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let partial = ""
      let skipped = -1
      const take = (piece: string) => {
        if (skipped >= 0) skipped += piece.length
        else if (partial.length + piece.length > maxLine) {
          skipped = partial.length + piece.length
          partial = ""
        } else partial += piece
      }
      const end = () => {
        const input: Input =
          skipped >= 0 ? { _tag: "TooLarge", length: skipped } : { _tag: "Line", text: partial.replace(/\r$/, "") }
        partial = ""
        skipped = -1
        Queue.offerUnsafe(queue, input)
      }
      const onData = (chunk: string) => {
        const pieces = chunk.split("\n")
        pieces.forEach((piece, index) => {
          take(piece)
          if (index < pieces.length - 1) end()
        })
      }
      const onEnd = () => {
        if (partial !== "" || skipped >= 0) end()
        Queue.endUnsafe(queue)
      }
      // A stdin that cannot be read (a descriptor opened for writing only) fails the stream; the
      // run treats it as "no commands", not as an end.
      const onError = (error: Error) => Queue.failCauseUnsafe(queue, Cause.fail(error))
      process.stdin.setEncoding("utf8")
      process.stdin.on("data", onData)
      process.stdin.once("end", onEnd)
      process.stdin.once("error", onError)
      return { onData, onEnd, onError }
    }),
    ({ onData, onEnd, onError }) =>
      Effect.sync(() => {
        process.stdin.off("data", onData)
        process.stdin.off("end", onEnd)
        process.stdin.off("error", onError)
        process.stdin.pause()
      })
  )
)

/**
 * Runs the protocol: starts the registry, writes status and tools lines, and answers commands.
 * With commands on stdin, the run ends once stdin has ended and every answer is written (as
 * Ctrl-C would end it); without, it runs until interrupted.
 */
export const run = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    // A status line's `tools` counts what the agent is offered, after the toolset's `tools:` filter.
    yield* registry.events.pipe(
      Stream.runForEach((e) => write(Output.statusJson(e.snapshot))),
      Effect.forkScoped({ startImmediately: true })
    )
    const started = yield* registry.start.pipe(
      Effect.catch((failure) => Effect.logError(failure.message)),
      Effect.forkScoped({ startImmediately: true })
    )
    yield* catalogLines(registry, Effect.asVoid(Fiber.await(started))).pipe(
      Effect.forkScoped({ startImmediately: true })
    )
    if (commandSource() === "none") {
      yield* Effect.logInfo("stdin carries no commands (/dev/null): running until SIGTERM or Ctrl-C")
      return yield* Effect.never
    }
    const commands = yield* FiberSet.make()
    const inFlight = yield* Semaphore.make(maxInFlight)
    const read = yield* stdinLines.pipe(
      Stream.runForEach((input) =>
        input._tag === "TooLarge"
          ? error({ cmd: null }, "TooLarge", `the command is ${input.length} characters long; the limit is ${maxLine}`)
          : input.text.trim() === ""
            ? Effect.void
            : Effect.suspend(() => {
                const parsed = parse(input.text)
                if (parsed._tag === "Refused") return FiberSet.run(commands, parsed.answer)
                if (parsed.cmd !== "call") return FiberSet.run(commands, command(registry, parsed))
                return Effect.andThen(
                  Semaphore.take(inFlight, 1),
                  FiberSet.run(commands, Effect.ensuring(command(registry, parsed), Semaphore.release(inFlight, 1)))
                )
              })
      ),
      Effect.result
    )
    if (read._tag === "Failure") {
      yield* Effect.logWarning(
        `stdin cannot be read (${read.failure.message}): no commands; running until SIGTERM or Ctrl-C`
      )
      return yield* Effect.never
    }
    yield* FiberSet.awaitEmpty(commands)
    yield* Effect.logInfo("stdin closed: the run ends (with </dev/null it runs until SIGTERM)")
  })
