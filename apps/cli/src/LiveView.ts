/**
 * `run` on a terminal: the status table redrawn in place, an event pane that keeps the recent
 * transitions and log lines (a crash stays readable after the table has moved on), and a prompt
 * for `tools`, `status`, `restart NAME`, `call TOOL {json}`, `help` and `quit`. Long answers are
 * paged in the pane, so the table never scrolls away. Everything it shows comes from the registry.
 */
import type { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as EventPane from "./EventPane.ts"
import type * as Open from "./Open.ts"
import * as Output from "./Output.ts"
import * as Screen from "./Screen.ts"

const help = [
  "tools                 the agent's tools",
  "status                every toolset that is down, with its whole error",
  "restart NAME          restart a toolset",
  "call TOOL {json}      call a tool with JSON arguments",
  "help                  this text",
  "quit                  stop every toolset and exit (also Ctrl-C)"
]

/** What a prompt command answers: one line for the message line, or several for the pane. */
type Answer = { readonly title: string; readonly lines: ReadonlyArray<string> }

const answer = (title: string, text: string): Answer => ({ title, lines: text.split("\n") })

/** Runs a prompt command; `path` is the config's, for the commands an answer names. */
const execute = (
  registry: ToolsetRegistry.Registry,
  path: string,
  line: string,
  quit: Effect.Effect<void>
): Effect.Effect<Answer> => {
  const [word = "", ...rest] = line.trim().split(/\s+/)
  const tail = line.trim().slice(word.length).trim()
  const shown = <A, E extends { readonly _tag: string; readonly message: string }>(
    effect: Effect.Effect<A, E>,
    render: (a: A) => string
  ) =>
    effect.pipe(
      Effect.map((a) => answer(word, render(a))),
      Effect.catch((e) => Effect.succeed(answer(word, `${e._tag}: ${e.message}`)))
    )
  switch (word) {
    case "":
      return Effect.succeed(answer("", ""))
    case "help":
      return Effect.succeed({ title: "help", lines: help })
    case "quit":
    case "exit":
      return Effect.as(quit, answer(word, "stopping…"))
    case "tools":
      return shown(registry.catalog(), (catalog) => Output.catalogText(catalog, process.stdout.columns || 80))
    case "status":
      return Effect.map(registry.snapshot, (board) => {
        const problems = Output.problems(board, path)
        return problems.length === 0 ? answer(word, "no toolset is down") : { title: "status", lines: problems }
      })
    case "restart":
      return rest[0] === undefined
        ? Effect.succeed(answer(word, "usage: restart NAME"))
        : shown(registry.restartToolset(rest[0]), () => `${rest[0]} restarted`)
    case "call": {
      const [tool = "", ...json] = tail.split(/\s+/)
      let args: unknown = {}
      try {
        args = json.length === 0 ? {} : JSON.parse(json.join(" "))
      } catch {
        return Effect.succeed(answer(word, `bad JSON arguments: ${json.join(" ")}`))
      }
      if (!Predicate.isObject(args)) return Effect.succeed(answer(word, "arguments must be a JSON object"))
      return shown(
        registry.callTool(tool, args),
        (result) => `${result.isError ? "tool error: " : ""}${Output.resultText(result)}`
      )
    }
    default:
      return Effect.succeed(answer(word, `unknown command "${word}" (type help)`))
  }
}

/** What the terminal sends, one chunk (a key, a paste, an escape sequence) at a time. */
const terminalInput = Stream.callback<string>((queue) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const onData = (chunk: Buffer) => Queue.offerUnsafe(queue, chunk.toString("utf8"))
      process.stdin.on("data", onData)
      return onData
    }),
    (onData) => Effect.sync(() => process.stdin.off("data", onData))
  )
)

const busy = (s: State.StatusSnapshot) => s.state === "Starting" || s.state === "Restarting"

/**
 * Runs the live view over the registry `open` builds, until `quit` or Ctrl-C. The pane's logger
 * is installed before the registry is built, so every log line of the run lands in the pane.
 */
export const run = <E>(open: Effect.Effect<Open.Opened, E, Scope.Scope>): Effect.Effect<void, E, Scope.Scope> => {
  const pane = EventPane.make()
  let draw = () => {}
  return Effect.gen(function* () {
    const { registry, config, path } = yield* open
    const done = yield* Deferred.make<void>()
    let board: ReadonlyArray<State.StatusSnapshot> = []
    let typed = ""
    let message = "type help for commands"
    let page: Screen.Page | undefined
    let frame = 0

    draw = () => {
      const width = process.stdout.columns || 80
      const height = process.stdout.rows || 24
      const restarting = new Set(board.filter((s) => s.state === "Restarting").map((s) => s.name))
      const view: Screen.View = {
        title: path,
        board,
        frame,
        events: (count) => EventPane.render(pane, count, width, Date.now(), restarting),
        page,
        message,
        typed
      }
      // Home, each line cleared to its end, then everything below cleared: no flicker, no scroll.
      const lines = Screen.render(view, width, height)
      process.stdout.write(`\u001b[H${lines.map((l) => `${l}\u001b[K`).join("\r\n")}\u001b[J`)
    }
    const redraw = Effect.sync(() => draw())

    const onResize = () => draw()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        process.stdout.write("\u001b[?1049h\u001b[H")
        process.stdin.setRawMode(true)
        process.stdin.resume()
        process.stdout.on("resize", onResize)
      }),
      () =>
        Effect.sync(() => {
          process.stdout.off("resize", onResize)
          process.stdin.setRawMode(false)
          process.stdin.pause()
          process.stdout.write("\u001b[?1049l")
        })
    )

    yield* registry.events.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          EventPane.transition(pane, event, config)
          draw()
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
    yield* registry.status.pipe(
      Stream.runForEach((next) =>
        Effect.sync(() => {
          board = next
          draw()
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
    // The spinner and the backoff countdown move only while something is busy: no redraws when idle.
    yield* Stream.tick("120 millis").pipe(
      Stream.filter(() => board.some(busy)),
      Stream.runForEach(() =>
        Effect.sync(() => {
          frame += 1
          draw()
        })
      ),
      Effect.forkScoped
    )

    const quit = Deferred.succeed(done, undefined)
    const rows = () => Screen.paneHeight(board, process.stdout.rows || 24)
    const submit = (line: string) =>
      Effect.gen(function* () {
        message = "…"
        draw()
        const result = yield* execute(registry, path, line, Effect.asVoid(quit))
        const lines = Screen.wrap(result.lines, process.stdout.columns || 80)
        const many = lines.length > 1
        page = many ? { title: result.title, lines, offset: 0 } : undefined
        message = many ? "" : (lines[0] ?? "")
        draw()
      })

    /** One chunk of terminal input: an escape sequence as a whole, else each key in turn. */
    const onInput = (chunk: string): Effect.Effect<void, never, Scope.Scope> => {
      if (chunk === "\u001b[6~" || chunk === "\u001b[5~") {
        const step = chunk === "\u001b[6~" ? rows() : -rows()
        if (page !== undefined) {
          const last = Math.max(0, page.lines.length - rows())
          page = { ...page, offset: Math.min(last, Math.max(0, page.offset + step)) }
        }
        return redraw
      }
      if (chunk === "\u001b") {
        page = undefined
        return redraw
      }
      if (chunk.startsWith("\u001b")) return Effect.void
      return Effect.forEach(
        Array.from(chunk),
        (key) => {
          if (key === "\u0003" || key === "\u0004") return Effect.asVoid(quit)
          if (key === "\r" || key === "\n") {
            const line = typed
            typed = ""
            return Effect.forkScoped(submit(line))
          }
          if (key === "\u007f" || key === "\b") typed = Array.from(typed).slice(0, -1).join("")
          else if (key >= " ") typed += key
          return redraw
        },
        { discard: true }
      )
    }
    yield* terminalInput.pipe(Stream.runForEach(onInput), Effect.forkScoped)
    yield* redraw
    yield* Deferred.await(done)
  }).pipe(Effect.provide(EventPane.logger(pane, () => draw())))
}
