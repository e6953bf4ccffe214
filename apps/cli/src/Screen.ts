/**
 * The live view's frame as a pure function of what it shows and the terminal's size: a header,
 * the status table, a pane (the event log, or a page of a command's output), a message line and
 * the prompt. No line is wider than the terminal and the frame is never taller, so nothing wraps
 * or scrolls the table away, at 80×24 as on a wide screen; there the table gives up KIND before
 * PID, the process one may want to inspect or kill. Only the table carries escape codes
 * (its colours); every other line is escaped whole, so nothing a server says can act on the terminal.
 */
import type { State } from "@toolvisor/core"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/** A command's output too long for the message line, shown in the pane a page at a time. */
export interface Page {
  readonly title: string
  readonly lines: ReadonlyArray<string>
  /** The first line shown. */
  readonly offset: number
}

export interface View {
  /** The config's path: the header shows it, and a hint in the table names it. */
  readonly title: string
  readonly board: ReadonlyArray<State.StatusSnapshot>
  readonly frame: number
  /** The newest `count` lines of the event log. */
  readonly events: (count: number) => ReadonlyArray<string>
  readonly page: Page | undefined
  readonly message: string
  readonly typed: string
}

const esc = "\u001b"
/** Splits a line around its colour codes (ESC [ … m), keeping them. */
const colourCodes = new RegExp(`(${esc}\\[[0-9;]*m)`)
const isCode = (part: string) => part.startsWith(esc)

const visibleLength = (line: string) =>
  line.split(colourCodes).reduce((n, part) => n + (isCode(part) ? 0 : Array.from(part).length), 0)

/** Cuts a line to `width` visible characters; colour escapes pass through and a cut resets them. */
const fit = (line: string, width: number): string => {
  if (visibleLength(line) <= width) return line
  let out = ""
  let visible = 0
  for (const part of line.split(colourCodes)) {
    if (isCode(part)) {
      out += part
      continue
    }
    for (const char of part) {
      if (visible === width - 1) return `${out}…\u001b[0m`
      out += char
      visible += 1
    }
  }
  return out
}

const summary = (board: ReadonlyArray<State.StatusSnapshot>): string => {
  const counts = new Map<string, number>()
  for (const s of board) counts.set(Output.shownState(s), (counts.get(Output.shownState(s)) ?? 0) + 1)
  return Array.from(counts, ([state, n]) => `${n} ${state}`).join(", ")
}

/**
 * Lines cut into rows of at most `width` characters, at a space where there is one in the row's
 * second half: an answer the user asked for (`status`, with every error whole) is shown whole in
 * the pane rather than cut to the terminal's width.
 */
export const wrap = (lines: ReadonlyArray<string>, width: number): ReadonlyArray<string> => {
  const room = Math.max(1, width)
  return lines.flatMap((line) => {
    const rows: Array<string> = []
    let rest = Array.from(line)
    while (rest.length > room) {
      const space = rest.lastIndexOf(" ", room)
      const atSpace = space > room / 2
      rows.push(rest.slice(0, atSpace ? space : room).join(""))
      rest = rest.slice(atSpace ? space + 1 : room)
    }
    return [...rows, rest.join("")]
  })
}

/** A pane's title bar: `── text ─────`. */
const rule = (text: string, width: number) => {
  const head = `── ${text} `
  return fit(head + "─".repeat(Math.max(0, width - Array.from(head).length)), width)
}

/** Lines in the pane for a terminal of `height` rows showing `board`. */
export const paneHeight = (board: ReadonlyArray<State.StatusSnapshot>, height: number) =>
  Math.max(0, height - board.length - 5)

/** The frame's lines, top to bottom: exactly `height` of them, none wider than `width`. */
export const render = (view: View, width: number, height: number): ReadonlyArray<string> => {
  const header = `toolvisor · ${view.title} · ${view.board.length} toolsets: ${summary(view.board)}`
  const table = Output.table(view.board, {
    colour: true,
    frame: view.frame,
    width,
    keep: "pid",
    config: view.title
  }).split("\n")
  const rows = paneHeight(view.board, height)
  const page = view.page
  const pane =
    page === undefined
      ? [rule("events", width), ...view.events(rows)]
      : [
          rule(
            `${page.title}: ${page.offset + 1}–${Math.min(page.lines.length, page.offset + rows)} of ${page.lines.length} · PgUp/PgDn · Esc: events`,
            width
          ),
          ...page.lines.slice(page.offset, page.offset + rows)
        ]
  const filler = Array.from({ length: Math.max(0, rows + 1 - pane.length) }, () => "")
  const text = [header, ...pane, ...filler, view.message, `> ${view.typed}`].map(Printable.line)
  const lines = [text[0] ?? "", ...table, ...text.slice(1)]
  return lines.slice(Math.max(0, lines.length - height)).map((line) => fit(line, width))
}
