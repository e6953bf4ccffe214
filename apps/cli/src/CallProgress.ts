/**
 * What `call` shows on stderr while the tool runs: the server's log messages as lines, and — on a
 * terminal — a progress bar fed by the server's `notifications/progress` for the call, redrawn in
 * place and cleared when the call ends. Piped, there is no bar (a script reads the result), but
 * the log lines stay. Stdout is never touched: it belongs to the result.
 */
import type { Toolset } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as ServerLog from "./ServerLog.ts"

/** How many cells the bar has; the line around it is cut to the terminal's width. */
const cells = 20

/**
 * One frame of the bar: `name [████████░░░░] 3/5 60% message`; without a total (the server
 * need not know one) the count alone. Everything the server sent is escaped.
 */
export const bar = (tool: string, progress: Toolset.Progress, width: number): string => {
  const { total } = progress
  const message = progress.message === undefined ? "" : ` ${Printable.line(progress.message)}`
  const counted =
    total === undefined || !(total > 0)
      ? `${progress.progress}`
      : (() => {
          const share = Math.min(1, Math.max(0, progress.progress / total))
          const filled = Math.round(share * cells)
          return `[${"█".repeat(filled)}${"░".repeat(cells - filled)}] ${progress.progress}/${total} ${Math.floor(share * 100)}%`
        })()
  return Output.truncate(`${Printable.line(tool)} ${counted}${message}`, Math.max(10, width - 1))
}

export interface Shown {
  /** The call's options: its progress listener, set only when a bar is drawn. */
  readonly options: Toolset.CallOptions | undefined
  /** Lets the log lines already received reach stderr, then clears the bar. */
  readonly done: Effect.Effect<void>
}

/**
 * Starts showing the server log lines (in this scope) and, on a terminal, prepares the bar.
 * A log line clears the bar's line first and the bar is drawn again under it.
 */
export const show = (registry: ToolsetRegistry.Registry, tool: string): Effect.Effect<Shown, never, Scope.Scope> =>
  Effect.gen(function* () {
    const tty = process.stderr.isTTY === true
    let drawn: string | undefined
    const draw = () => {
      if (drawn !== undefined) process.stderr.write(`\r\u001b[K${drawn}`)
    }
    yield* registry.logs.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          process.stderr.write(`${tty ? "\r\u001b[K" : ""}${ServerLog.line(event)}\n`)
          draw()
        })
      ),
      Effect.forkScoped({ startImmediately: true })
    )
    const onProgress = (progress: Toolset.Progress) => {
      drawn = bar(tool, progress, process.stderr.columns || 80)
      draw()
    }
    return {
      options: tty ? { onProgress } : undefined,
      // The log messages a server sent just before its answer are published before the call
      // resumes; one yield lets the printing fiber write them before the scope ends.
      done: Effect.andThen(
        Effect.yieldNow,
        Effect.sync(() => {
          if (drawn !== undefined) process.stderr.write("\r\u001b[K")
          drawn = undefined
        })
      )
    }
  })
