/**
 * `run --json`: a line protocol for scripts and UIs. Stdout carries only JSON lines — a status
 * line on every transition, a tools line whenever the catalog changes, and one answer per
 * command read from stdin. Logs go to stderr.
 */
import * as NodeReadline from "node:readline"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Output from "./Output.ts"

const write = (value: unknown) => Effect.sync(() => process.stdout.write(`${JSON.stringify(value)}\n`))

const error = (cmd: string | null, tag: string, message: string) => write({ type: "error", cmd, tag, message })

/** The board's "shape" for the catalog: a new tools line is due only when this changes. */
const catalogKey = (
  board: ReadonlyArray<{ readonly name: string; readonly state: string; readonly toolsVersion: number }>
) => board.map((s) => `${s.name}:${s.state}:${s.toolsVersion}`).join("|")

/** Emits a tools line for every catalog that differs from the one before. */
export const catalogLines = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    let last = ""
    yield* registry.status.pipe(
      Stream.changesWith((a, b) => catalogKey(a) === catalogKey(b)),
      Stream.runForEach(() =>
        registry.catalog().pipe(
          Effect.flatMap((catalog) => {
            const line = Output.catalogJson(catalog)
            const text = JSON.stringify(line)
            if (text === last) return Effect.void
            last = text
            return write(line)
          }),
          Effect.ignore
        )
      )
    )
  })

const isRecord = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Handles one command line from stdin and writes its answer. */
export const command = (registry: ToolsetRegistry.Registry, line: string): Effect.Effect<void> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return error(null, "BadCommand", `not JSON: ${Output.truncate(line, 80)}`)
  }
  if (!isRecord(parsed) || typeof parsed.cmd !== "string") {
    return error(null, "BadCommand", 'expected an object with a "cmd" field')
  }
  const cmd = parsed.cmd
  const fail = (e: { readonly _tag: string; readonly message: string }) => error(cmd, e._tag, e.message)
  switch (cmd) {
    case "status":
      return Effect.flatMap(registry.snapshot, (board) =>
        write({ type: "result", cmd, toolsets: board.map((s) => Output.statusJson(s)) })
      )
    case "tools":
      return registry.catalog().pipe(
        Effect.flatMap((catalog) => write({ ...Output.catalogJson(catalog), type: "result", cmd })),
        Effect.catch(fail)
      )
    case "restart": {
      const toolset = parsed.toolset
      if (typeof toolset !== "string") return error(cmd, "BadCommand", 'restart needs "toolset": a name')
      return registry
        .restartToolset(toolset)
        .pipe(Effect.andThen(write({ type: "result", cmd, toolset })), Effect.catch(fail))
    }
    case "call": {
      const tool = parsed.tool
      const args = parsed.args ?? {}
      if (typeof tool !== "string") return error(cmd, "BadCommand", 'call needs "tool": a name')
      if (!isRecord(args)) return error(cmd, "BadCommand", '"args" must be an object')
      return registry.callTool(tool, args).pipe(
        Effect.flatMap((result) => write({ type: "result", cmd, tool, result })),
        Effect.catch(fail)
      )
    }
    default:
      return error(cmd, "BadCommand", `unknown command "${cmd}" (status, tools, restart, call)`)
  }
}

/** Lines typed on stdin, until it closes. */
export const stdinLines = Stream.callback<string>((queue) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const lines = NodeReadline.createInterface({ input: process.stdin, terminal: false })
      lines.on("line", (line) => Queue.offerUnsafe(queue, line))
      lines.on("close", () => Queue.endUnsafe(queue))
      return lines
    }),
    (lines) => Effect.sync(() => lines.close())
  )
)

/** Runs the protocol until interrupted: status and tools lines out, commands in. */
export const run = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    yield* registry.events.pipe(
      Stream.runForEach((e) => write(Output.statusJson(e.snapshot))),
      Effect.forkScoped({ startImmediately: true })
    )
    yield* catalogLines(registry).pipe(Effect.forkScoped({ startImmediately: true }))
    yield* stdinLines.pipe(
      Stream.runForEach((line) => (line.trim() === "" ? Effect.void : command(registry, line))),
      Effect.forkScoped({ startImmediately: true })
    )
  })
