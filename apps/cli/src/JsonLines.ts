/**
 * `run --json`: a line protocol for scripts and UIs. Stdout carries only JSON lines — a status
 * line on every transition, a tools line whenever the catalog changes, and exactly one answer per
 * command read from stdin. Commands run concurrently (a call to a stalled server never holds up
 * a `status` or a `restart`), so an answer echoes the command's `id` when it had one. Logs go to
 * stderr. Stdin is a trust boundary: a line longer than `maxLine` or nested deeper than
 * `JsonLimits.maxDepth` is refused with an error line before it is parsed.
 *
 * When the run ends is a matter of what stdin is (`commandSource`). A pipe, a socket, a file or a
 * terminal carries commands, and its end ends the run once every command read is answered — a
 * script that closes its end of the pipe is done. `/dev/null` (systemd's default, `docker run`
 * without `-i`, `&` in a script) carries none, and cannot close: the run goes on until SIGTERM or
 * Ctrl-C, as a service does. Either way one line on stderr says which. A signal answers every
 * command still unanswered with an error line before the process exits (`lastWord`).
 */
import * as NodeFs from "node:fs"
import * as NodeTty from "node:tty"
import { JsonLimits } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as CommandId from "./CommandId.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/**
 * Calls run at once, at most. Past it a call waits for a place, and with the writes waiting on a
 * reader that is behind, a client that sends calls faster than it reads holds no more than this
 * many answers here. Other commands take no place: a `status` or a `restart` is read and answered
 * whatever the calls do.
 */
export const maxInFlight = 64

/**
 * Calls read and waiting for a place, at most; and the most text their lines may hold. Once the
 * waiting room is full stdin is not read on until a call ends, so a client that sends calls
 * faster than its servers answer them costs bounded memory.
 */
export const maxWaiting = 1000
export const maxWaitingText = 64 * 1024 * 1024

/**
 * Commands other than calls (and refusals) being answered, at most. They end at once unless
 * stdout is not read (their answers wait for the reader) or a restart waits for its toolset;
 * past it stdin is not read on until one ends.
 */
export const maxOthers = 64

/** The longest command line read; what passes it is skipped to its end and refused (as the MCP transport bounds a message). */
export const maxLine = 16 * 1024 * 1024

/** Text read from stdin and not yet handled past which stdin is paused, so the pipe holds what is left. */
const maxBuffered = 1024 * 1024

/**
 * Writes one line, and waits while the reader is behind: a reader that stops reading had every
 * line queued in this process (a restart loop's tools lines grew it past a gigabyte). Waiting
 * holds the streams that produce the lines, and the catalog is built only when its line can go.
 * `claim` decides, at the moment of writing, whether the line goes at all (an answer goes once).
 */
const write = (value: unknown, claim: () => boolean = () => true) =>
  Effect.callback<void>((resume) => {
    if (!claim()) return resume(Effect.void)
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

/** An error line's tag and message. */
interface Failure {
  readonly tag: string
  readonly message: string
}

const errorLine = (header: Header, { tag, message }: Failure) => ({ type: "error", ...header, tag, message })

/**
 * A command read and not answered yet. `lastWord` is what answers it if the run shuts down first:
 * `NotSent` until it starts, `Interrupted` (it may have run) once it has, or a refusal's own error.
 */
interface Pending {
  readonly header: Header
  lastWord: Failure
}

const notSent = (cmd: string): Failure => ({
  tag: "NotSent",
  message: `the run is shutting down and this ${cmd} never started: it did not run`
})

const interrupted = (cmd: string): Failure => ({
  tag: "Interrupted",
  message:
    cmd === "call"
      ? // Under way, it may be waiting for its toolset to be back (a backoff) and never have reached
        // the server: whether it did is not known here, so it is said to maybe have run, the safe side.
        "the run is shutting down and this call had no answer yet: it was under way (it may have reached its server), so it may have run"
      : `the run is shutting down and this ${cmd} had no answer yet: it had started, so it may have taken effect`
})

/**
 * The commands read and not answered yet. Each is answered exactly once: `answer` writes its line
 * only if nothing answered it before, and when the run ends (a signal) every command left gets its
 * `lastWord` at once — without waiting for a reader that is behind, since the process is leaving.
 */
const ledger = Effect.acquireRelease(
  Effect.sync(() => new Set<Pending>()),
  (open) =>
    Effect.sync(() => {
      if (open.size === 0) return
      // The reader may be gone (EPIPE): a line it cannot take must not turn the shutdown into a crash.
      process.stdout.on("error", () => undefined)
      for (const pending of open) {
        if (process.stdout.destroyed) break
        process.stdout.write(`${Printable.json(errorLine(pending.header, pending.lastWord))}\n`)
      }
      open.clear()
    })
)

type Ledger = Set<Pending>

const answer = (open: Ledger, pending: Pending, value: object) => write(value, () => open.delete(pending))

/** A line from stdin, or the length (and the id, if one could be read) of one that was too long to keep. */
type Input =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "TooLarge"; readonly length: number; readonly found: CommandId.Found }

/**
 * Emits a tools line for the catalog once the start-up has run (so a listing of toolsets that
 * were simply not started yet is never sent), then each time the registry says it changed, at
 * most once per `catalogPace`, the latest catalog: a server storming `list_changed` beside one
 * with 10,000 tools made twenty 2 MB lines a second for every reader.
 */
const catalogLines = (registry: ToolsetRegistry.Registry, started: Effect.Effect<void>) =>
  Effect.andThen(
    started,
    registry.catalogChanges().pipe(
      Stream.buffer({ capacity: 1, strategy: "sliding" }),
      Stream.runForEach((catalog) => Effect.andThen(write(Output.catalogJson(catalog)), Effect.sleep(catalogPace))),
      Effect.catch((error) => Effect.logWarning(`no catalog: ${error.message}`))
    )
  )

/** The least time between two tools lines. */
const catalogPace = Duration.millis(250)

/** A command line from stdin, read: a command, or the error that refuses it. */
type Read =
  | {
      readonly _tag: "Command"
      readonly cmd: string
      readonly header: Header
      readonly fields: { readonly [key: string]: unknown }
    }
  | { readonly _tag: "Refused"; readonly header: Header; readonly failure: Failure }

const refused = (found: CommandId.Found, tag: string, message: string): Read => ({
  _tag: "Refused",
  header: { cmd: null, ...found },
  failure: { tag, message }
})

/** Reads a line; a refused one keeps its `id` when it can be read without parsing the line (`CommandId`). */
const parse = (line: string): Read => {
  if (JsonLimits.textDepth(line, JsonLimits.maxDepth) > JsonLimits.maxDepth) {
    return refused(CommandId.of(line), "TooDeep", `the command nests deeper than ${JsonLimits.maxDepth} levels`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return refused(CommandId.of(line), "BadCommand", `not JSON: ${Output.truncate(line.slice(0, 100), 80)}`)
  }
  if (!Predicate.isObject(parsed)) return refused({}, "BadCommand", 'expected an object with a "cmd" field')
  const found = parsed.id === undefined ? {} : { id: parsed.id }
  return typeof parsed.cmd === "string"
    ? { _tag: "Command", cmd: parsed.cmd, header: { cmd: parsed.cmd, ...found }, fields: parsed }
    : refused(found, "BadCommand", 'expected an object with a "cmd" field')
}

/** Handles one command; `reply` writes its answer. */
const command = (
  registry: ToolsetRegistry.Registry,
  { cmd, header, fields: parsed }: Extract<Read, { readonly _tag: "Command" }>,
  reply: (value: object) => Effect.Effect<void>
): Effect.Effect<void> => {
  const error = (tag: string, message: string) => reply(errorLine(header, { tag, message }))
  const fail = (e: { readonly _tag: string; readonly message: string }) => error(e._tag, e.message)
  switch (cmd) {
    case "status":
      return Effect.flatMap(registry.snapshot, (board) =>
        reply({ type: "result", ...header, toolsets: board.map((s) => Output.statusJson(s)) })
      )
    case "tools":
      return registry.catalog().pipe(
        Effect.flatMap((catalog) => reply({ ...Output.catalogJson(catalog), type: "result", ...header })),
        Effect.catch(fail)
      )
    case "restart": {
      const toolset = parsed.toolset
      if (typeof toolset !== "string") return error("BadCommand", 'restart needs "toolset": a name')
      return registry
        .restartToolset(toolset)
        .pipe(Effect.andThen(reply({ type: "result", ...header, toolset })), Effect.catch(fail))
    }
    case "call": {
      const tool = parsed.tool
      const args = parsed.args ?? {}
      if (typeof tool !== "string") return error("BadCommand", 'call needs "tool": a name')
      if (!Predicate.isObject(args)) return error("BadCommand", '"args" must be an object')
      return registry.callTool(tool, args).pipe(
        Effect.flatMap((result) => reply({ type: "result", ...header, tool, result })),
        Effect.catch(fail)
      )
    }
    default:
      return error("BadCommand", `unknown command "${cmd}" (status, tools, restart, call)`)
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
 * Handles the lines typed on stdin, in order, until it closes. A line is kept only up to
 * `maxLine` characters: past that the rest of it is skipped (scanned for its id on the way) and it
 * arrives as `TooLarge`, so a flood without newlines costs bounded memory. Stdin is paused while
 * more than `maxBuffered` of text waits for `handle`, so a handler that waits holds the rest in
 * the pipe. A leading byte-order mark and a trailing CR are dropped from each line.
 */
const readStdin = (handle: (input: Input) => Effect.Effect<void>) =>
  Effect.suspend(() => {
    let buffered = 0
    let paused = false
    const lines = Stream.callback<Input, Error>((queue) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let partial = ""
          let skipped = -1
          let scan: CommandId.Scan | undefined
          const take = (piece: string) => {
            if (scan !== undefined) {
              skipped += piece.length
              scan.feed(piece)
            } else if (partial.length + piece.length > maxLine) {
              skipped = partial.length + piece.length
              scan = CommandId.scan()
              scan.feed(partial)
              scan.feed(piece)
              partial = ""
            } else partial += piece
          }
          const end = () => {
            const input: Input =
              scan !== undefined
                ? { _tag: "TooLarge", length: skipped, found: scan.found() }
                : { _tag: "Line", text: partial.replace(/^\uFEFF/, "").replace(/\r$/, "") }
            partial = ""
            skipped = -1
            scan = undefined
            if (input._tag === "Line") buffered += input.text.length
            Queue.offerUnsafe(queue, input)
          }
          const onData = (chunk: string) => {
            const pieces = chunk.split("\n")
            pieces.forEach((piece, index) => {
              take(piece)
              if (index < pieces.length - 1) end()
            })
            if (buffered > maxBuffered && !paused) {
              paused = true
              process.stdin.pause()
            }
          }
          const onEnd = () => {
            if (partial !== "" || scan !== undefined) end()
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
    return Stream.runForEach(lines, (input) =>
      Effect.suspend(() => {
        if (input._tag === "Line") buffered -= input.text.length
        if (paused && buffered <= maxBuffered) {
          paused = false
          process.stdin.resume()
        }
        return handle(input)
      })
    )
  })

/**
 * Answers the commands read from stdin until it ends, then waits for every answer. A call waits
 * for one of `maxInFlight` places, in the order read, in a waiting room of `maxWaiting` calls and
 * `maxWaitingText` of text; other commands run at once, up to `maxOthers`. The reader waits only
 * when the room (or `maxOthers`) is full. Fails only when stdin cannot be read.
 */
const answerCommands = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    const commands = yield* FiberSet.make()
    const open = yield* ledger
    const inFlight = yield* Semaphore.make(maxInFlight)
    const room = yield* Semaphore.make(maxWaiting)
    const roomText = yield* Semaphore.make(maxWaitingText)
    const others = yield* Semaphore.make(maxOthers)

    /** Runs a command once it has its place: from then on, a shutdown says it may have run. */
    const started = (pending: Pending, read: Read) =>
      Effect.suspend(() => {
        const reply = (value: object) => answer(open, pending, value)
        if (read._tag === "Refused") return reply(errorLine(read.header, read.failure))
        pending.lastWord = interrupted(read.cmd)
        return command(registry, read, reply)
      })

    const call = (pending: Pending, read: Read, weight: number) =>
      Effect.gen(function* () {
        yield* Semaphore.take(room, 1)
        yield* Semaphore.take(roomText, weight)
        const leaveRoom = Effect.andThen(Semaphore.release(room, 1), Semaphore.release(roomText, weight))
        const place = Effect.ensuring(Semaphore.take(inFlight, 1), leaveRoom)
        yield* FiberSet.run(
          commands,
          Effect.uninterruptibleMask((restore) =>
            Effect.andThen(
              restore(place),
              Effect.ensuring(restore(started(pending, read)), Semaphore.release(inFlight, 1))
            )
          )
        )
      })

    const other = (pending: Pending, read: Read) =>
      Effect.andThen(
        Semaphore.take(others, 1),
        FiberSet.run(commands, Effect.ensuring(started(pending, read), Semaphore.release(others, 1)))
      )

    const handle = (input: Input): Effect.Effect<void> => {
      if (input._tag === "Line" && input.text.trim() === "") return Effect.void
      const read =
        input._tag === "TooLarge"
          ? refused(input.found, "TooLarge", `the command is ${input.length} characters long; the limit is ${maxLine}`)
          : parse(input.text)
      const pending: Pending = {
        header: read.header,
        lastWord: read._tag === "Refused" ? read.failure : notSent(read.cmd)
      }
      open.add(pending)
      return read._tag === "Command" && read.cmd === "call"
        ? call(pending, read, input._tag === "Line" ? Math.min(input.text.length, maxWaitingText) : 0)
        : other(pending, read)
    }

    yield* readStdin(handle)
    yield* FiberSet.awaitEmpty(commands)
  })

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
    const read = yield* Effect.result(answerCommands(registry))
    if (read._tag === "Failure") {
      yield* Effect.logWarning(
        `stdin cannot be read (${read.failure.message}): no commands; running until SIGTERM or Ctrl-C`
      )
      return yield* Effect.never
    }
    yield* Effect.logInfo("stdin closed: the run ends (with </dev/null it runs until SIGTERM)")
  })
