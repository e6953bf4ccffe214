/**
 * The live view's event log: the recent transitions of every toolset (time, states, error,
 * restart count) and the log lines of the run, newest last. A crash stays readable here after
 * the table has moved on, and log lines land in the pane instead of over the prompt. While a
 * toolset waits to reconnect, its latest line counts the backoff down.
 */
import type { AgentConfig } from "@toolvisor/config"
import { Policy } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Logger from "effect/Logger"
import * as Log from "./Log.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/** How many lines the pane keeps; the screen shows the newest that fit. */
const limit = 500

interface Line {
  /** Time, toolset and states, or a whole log line. */
  readonly head: string
  /** Restart count and error. */
  readonly tail: string
  /** Set on a transition into Restarting: the backoff to count down, from `since`. */
  readonly backoff?: {
    readonly toolset: string
    readonly since: number
    readonly delay: number
    /** "attempt 2/5" (or "attempt 2" with an unlimited budget). */
    readonly attempt: string
  }
}

export interface Pane {
  readonly lines: Array<Line>
}

export const make = (): Pane => ({ lines: [] })

const push = (pane: Pane, line: Line) => {
  pane.lines.push(line)
  if (pane.lines.length > limit) pane.lines.splice(0, pane.lines.length - limit)
}

const clock = (epochMillis: number) => new Date(epochMillis).toISOString().slice(11, 19)

/**
 * Records a transition. Entering Restarting after an error starts a backoff of the policy's
 * nominal delay for this attempt (jitter, if configured, moves the real one a little).
 */
export const transition = (pane: Pane, event: ToolsetRegistry.ToolsetEvent, config: AgentConfig.Config) => {
  const s = event.snapshot
  const head = `${clock(s.since)} ${Printable.line(event.toolset)} ${event.from} → ${Output.shownState(s)}`
  const tail = [
    s.restarts === 0 ? undefined : `restart ${s.restarts}`,
    s.lastError === undefined ? undefined : Output.errorText(s, config.source)
  ].filter((d) => d !== undefined)
  const policy = config.toolsets.find((t) => t.name === event.toolset)?.policy
  const waiting = s.state === "Restarting" && event.from !== "Restarting" && s.lastError !== undefined
  push(pane, {
    head,
    tail: tail.join(", "),
    ...(policy === undefined || !waiting
      ? {}
      : {
          backoff: {
            toolset: event.toolset,
            since: s.since,
            delay: Duration.toMillis(Policy.nominalDelay(policy, s.attempt)),
            attempt: `attempt ${s.attempt + 1}${policy.maxRestarts < 0 ? "" : `/${policy.maxRestarts}`}`
          }
        })
  })
}

/** Breaks a line into pieces of `width`, continuation lines indented under the text. */
const wrap = (text: string, width: number): ReadonlyArray<string> => {
  const chars = Array.from(text)
  if (chars.length <= width) return [text]
  const indent = " ".repeat(9)
  const pieces = [chars.slice(0, width).join("")]
  for (let at = width; at < chars.length; at += width - indent.length) {
    pieces.push(indent + chars.slice(at, at + width - indent.length).join(""))
  }
  return pieces
}

/**
 * The newest lines that fill `count` rows of `width` at time `now`, long ones wrapped (an error
 * is worth reading whole). The latest line of a toolset still waiting to reconnect says how long
 * is left, ahead of its error.
 */
export const render = (pane: Pane, count: number, width: number, now: number, restarting: ReadonlySet<string>) => {
  const latest = new Map<string, Line>()
  for (const line of pane.lines) if (line.backoff !== undefined) latest.set(line.backoff.toolset, line)
  const text = (line: Line) => {
    const backoff = line.backoff
    const live = backoff !== undefined && latest.get(backoff.toolset) === line && restarting.has(backoff.toolset)
    const left = live ? backoff.since + backoff.delay - now : 0
    const countdown = !live
      ? undefined
      : left > 0
        ? `retrying in ${(left / 1000).toFixed(1)} s, ${backoff.attempt}`
        : `reconnecting, ${backoff.attempt}`
    const tail = [countdown, line.tail].filter((t) => t !== undefined && t !== "").join("  ")
    return tail === "" ? line.head : `${line.head}  ${tail}`
  }
  const rows: Array<string> = []
  for (let i = pane.lines.length - 1; i >= 0 && rows.length < count; i--) {
    const line = pane.lines[i]
    if (line !== undefined) rows.unshift(...wrap(text(line), width))
  }
  return rows.slice(Math.max(0, rows.length - count))
}

/** A logger that writes into the pane, in the CLI's one log format. */
export const logger = (pane: Pane, onLine: () => void) =>
  Logger.layer([
    Logger.make((options) => {
      push(pane, { head: Log.format(options), tail: "" })
      onLine()
    })
  ])
