/**
 * `run` on a terminal: a status table redrawn in place, a spinner for toolsets that are
 * starting or restarting, and a prompt for `tools`, `status`, `restart NAME`,
 * `call TOOL {json}`, `help` and `quit`. Everything it shows comes from the registry.
 */
import type { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Output from "./Output.ts"

const help = [
  "commands:",
  "  tools                 the agent's tools",
  "  status                the table, now",
  "  restart NAME          restart a toolset",
  "  call TOOL {json}      call a tool with JSON arguments",
  "  help                  this text",
  "  quit                  stop every toolset and exit"
].join("\n")

type Input = { readonly _tag: "Key"; readonly key: string } | { readonly _tag: "Tick" }

/** Runs a prompt command and returns what to show under the table. */
const execute = (registry: ToolsetRegistry.Registry, line: string, quit: Effect.Effect<void>) => {
  const [word = "", ...rest] = line.trim().split(/\s+/)
  const tail = line.trim().slice(word.length).trim()
  const shown = <A, E extends { readonly _tag: string; readonly message: string }>(
    effect: Effect.Effect<A, E>,
    render: (a: A) => string
  ) =>
    effect.pipe(
      Effect.map(render),
      Effect.catch((e) => Effect.succeed(`${e._tag}: ${e.message}`))
    )
  switch (word) {
    case "":
      return Effect.succeed("")
    case "help":
      return Effect.succeed(help)
    case "quit":
    case "exit":
      return Effect.as(quit, "stopping…")
    case "tools":
      return shown(registry.catalog(), (catalog) => Output.catalogText(catalog, process.stdout.columns || 120))
    case "status":
      return Effect.succeed("")
    case "restart":
      return rest[0] === undefined
        ? Effect.succeed("usage: restart NAME")
        : shown(registry.restartToolset(rest[0]), () => `${rest[0]} restarted`)
    case "call": {
      const [tool = "", ...json] = tail.split(/\s+/)
      let args: unknown = {}
      try {
        args = json.length === 0 ? {} : JSON.parse(json.join(" "))
      } catch {
        return Effect.succeed(`bad JSON arguments: ${json.join(" ")}`)
      }
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        return Effect.succeed("arguments must be a JSON object")
      }
      const record: { readonly [key: string]: unknown } = Object.fromEntries(Object.entries(args))
      return shown(
        registry.callTool(tool, record),
        (result) => `${result.isError ? "tool error: " : ""}${Output.resultText(result)}`
      )
    }
    default:
      return Effect.succeed(`unknown command "${word}" (type help)`)
  }
}

/** Runs the live view until `quit` or Ctrl-C. */
export const run = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    const done = yield* Deferred.make<void>()
    const inputs = yield* Queue.unbounded<Input>()
    let board: ReadonlyArray<State.StatusSnapshot> = []
    let typed = ""
    let message = "type help for commands"
    let frame = 0

    const draw = Effect.sync(() => {
      const width = process.stdout.columns || 120
      const screen = [
        "\u001b[H\u001b[2J",
        Output.table(board, { colour: true, frame, width }),
        "",
        message,
        "",
        `> ${typed}`
      ].join("\n")
      process.stdout.write(screen)
    })

    const onData = (chunk: Buffer) => {
      for (const key of chunk.toString("utf8")) Queue.offerUnsafe(inputs, { _tag: "Key", key })
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        process.stdin.setRawMode(true)
        process.stdin.on("data", onData)
        process.stdin.resume()
      }),
      () =>
        Effect.sync(() => {
          process.stdin.off("data", onData)
          process.stdin.setRawMode(false)
          process.stdin.pause()
          process.stdout.write("\n")
        })
    )

    yield* registry.status.pipe(
      Stream.runForEach((next) =>
        Effect.suspend(() => {
          board = next
          return draw
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
    // The spinner moves only while something is starting or restarting: no redraws when idle.
    yield* Stream.tick("120 millis").pipe(
      Stream.filter(() => board.some((s) => s.state === "Starting" || s.state === "Restarting")),
      Stream.runForEach(() => Queue.offer(inputs, { _tag: "Tick" })),
      Effect.forkScoped
    )

    const quit = Deferred.succeed(done, undefined)
    const handle = (input: Input): Effect.Effect<void> => {
      if (input._tag === "Tick") {
        frame += 1
        return draw
      }
      const key = input.key
      if (key === "\u0003" || key === "\u0004") return Effect.asVoid(quit)
      if (key === "\r" || key === "\n") {
        const line = typed
        typed = ""
        message = "…"
        return draw.pipe(
          Effect.andThen(execute(registry, line, Effect.asVoid(quit))),
          Effect.flatMap((text) =>
            Effect.suspend(() => {
              message = text
              return draw
            })
          )
        )
      }
      if (key === "\u007f" || key === "\b") typed = Array.from(typed).slice(0, -1).join("")
      else if (key >= " ") typed += key
      return draw
    }
    yield* Queue.take(inputs).pipe(Effect.flatMap(handle), Effect.forever, Effect.forkScoped)
    yield* draw
    yield* Deferred.await(done)
  })
