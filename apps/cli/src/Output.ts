/**
 * How the CLI shows things: status tables, transition lines, catalogs and JSON lines. Pure
 * functions of the runtime's values (and the one catalog lookup they need), so every mode
 * (terminal, plain, --json) says the same. What people read has every control character a
 * server could send escaped (`Printable`); JSON lines carry the text as it was.
 */
import type { State, Toolset } from "@toolvisor/core"
import { type Catalog, StatusJson, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Content from "./Content.ts"
import * as Printable from "./Printable.ts"
import * as Shell from "./Shell.ts"

/** Cuts text to `width` characters on a code-point boundary, marking the cut. */
export const truncate = (text: string, width: number): string => {
  const chars = Array.from(text)
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`
}

/**
 * Rows of `name  toolset  rest`, as the catalogs of tools, prompts and resources show them: each
 * cell escaped, the first two columns padded, each line cut to `width`. A name is shown whole (it
 * is what a call names), but one longer than its column's share of the line (a server's 200
 * characters) overflows its own row instead of widening every row.
 */
export const columns = (
  rows: ReadonlyArray<readonly [string, string, string]>,
  width: number
): ReadonlyArray<string> => {
  const shown = rows.map((row) => row.map(Printable.line))
  const nameWidth = columnWidth(
    shown.map((r) => r[0] ?? ""),
    4,
    Math.max(24, Math.floor(width * 0.4))
  )
  const toolsetWidth = columnWidth(
    shown.map((r) => r[1] ?? ""),
    7,
    24
  )
  return shown.map(([name = "", toolset = "", rest = ""]) => {
    const head = `${name.padEnd(nameWidth)}  ${toolset.padEnd(toolsetWidth)}  `
    return `${head}${truncate(rest, Math.max(10, width - head.length))}`.trimEnd()
  })
}

/** As wide as its widest cell that fits in `cap`, and at least `least`. */
const columnWidth = (cells: ReadonlyArray<string>, least: number, cap: number): number =>
  Math.max(least, ...cells.map((cell) => cell.length).filter((length) => length <= cap))

const colours: { readonly [S in State.State]: string } = {
  Stopped: "2",
  Starting: "36",
  Ready: "32",
  Degraded: "33",
  Restarting: "35",
  Failed: "31"
}

const paint = (state: State.State, text: string, colour: boolean) =>
  colour ? `\u001b[${colours[state]}m${text}\u001b[0m` : text

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** One frame of the spinner shown for busy toolsets. */
export const spinner = (frame: number): string => spinnerFrames[frame % spinnerFrames.length] ?? " "

/**
 * The state as people read it: a toolset whose first start failed is Stopped to the Supervisor
 * (it may be started again), but to a reader it failed, and the table says so.
 */
export const shownState = (s: State.StatusSnapshot): State.State =>
  s.state === "Stopped" && s.lastError !== undefined ? "Failed" : s.state

/**
 * The command that logs a toolset in, on the config it was loaded from: a hint that drops the
 * config would fail, or log in to another file's toolset.
 */
export const authCommand = (name: string, config: string | undefined): string =>
  Shell.toolvisor("auth", ...(config === undefined ? [] : [config]), name)

/**
 * The last error without the toolset's name in it (the row already names it); one that needs a
 * login says which command gives it, on `config` (the path the config was loaded from).
 */
export const errorText = (s: State.StatusSnapshot, config?: string): string => {
  if (s.lastError === undefined) return ""
  const { tag, message } = s.lastError
  const prefix = `${s.name}: `
  const text = `${tag}: ${(message.startsWith(prefix) ? message.slice(prefix.length) : message).replaceAll(`: ${prefix}`, ": ")}`
  return tag === "AuthRequired" ? `${Printable.line(text)} (run: ${authCommand(s.name, config)})` : Printable.line(text)
}

export interface TableOptions {
  readonly colour: boolean
  /** The config's path, for the commands the table names. */
  readonly config?: string
  /** Animates a spinner for busy toolsets. */
  readonly frame?: number
  readonly width?: number
  /**
   * The column a narrow terminal keeps longer: the live view keeps PID (a running process to
   * inspect or kill), a one-shot table KIND (its processes are stopped once it is printed).
   */
  readonly keep?: "pid" | "kind"
}

/** Columns a narrow terminal can spare, in the order they go. */
const droppable = { kind: [5, 1], pid: [1, 5] } as const

/**
 * A status table, one row per toolset, no line wider than `width`: the last error is cut to
 * fit, and on a narrow terminal the PID and KIND columns give way first (see `keep`).
 */
export const table = (board: ReadonlyArray<State.StatusSnapshot>, options: TableOptions): string => {
  const width = options.width ?? 120
  const rows = board.map((s) => {
    const busy = s.state === "Starting" || s.state === "Restarting"
    const mark = busy && options.frame !== undefined ? spinner(options.frame) : " "
    const state = shownState(s)
    return {
      state,
      cells: [
        Printable.line(s.name),
        Printable.line(s.kind),
        `${mark} ${state}`,
        String(s.restarts),
        s.toolCount === undefined ? "-" : String(s.toolCount),
        s.pid === undefined ? "-" : String(s.pid),
        errorText(s, options.config)
      ]
    }
  })
  const header = ["TOOLSET", "KIND", "  STATE", "RESTARTS", "TOOLS", "PID", "LAST ERROR"]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r.cells[i] ?? "").length)))
  const fixedWidth = (kept: ReadonlyArray<number>) =>
    kept.slice(0, -1).reduce((sum, i) => sum + (widths[i] ?? 0) + 2, 0)
  let kept = header.map((_, i) => i)
  for (const column of droppable[options.keep ?? "kind"]) {
    if (fixedWidth(kept) + 10 <= width) break
    kept = kept.filter((i) => i !== column)
  }
  const errorWidth = Math.max(10, width - fixedWidth(kept))
  const line = (cells: ReadonlyArray<string>, state?: State.State) =>
    kept
      .map((i) => {
        const cell = cells[i] ?? ""
        if (i === cells.length - 1) return truncate(cell, errorWidth)
        const padded = truncate(cell, width).padEnd(widths[i] ?? 0)
        return i === 2 && state !== undefined ? paint(state, padded, options.colour) : padded
      })
      .join("  ")
      .trimEnd()
  return [line(header), ...rows.map((r) => line(r.cells, r.state))].join("\n")
}

/** One line per toolset that is down, with its whole reason: what the table had to cut. */
export const problems = (board: ReadonlyArray<State.StatusSnapshot>, config?: string): ReadonlyArray<string> =>
  board
    .filter((s) => s.lastError !== undefined && s.state !== "Ready")
    .map((s) => `${Printable.line(s.name)}: ${shownState(s)}: ${errorText(s, config)}`)

/** One line per transition, for logs and pipes; `config` is the config's path, for the commands it names. */
export const transitionLine = (event: ToolsetRegistry.ToolsetEvent, config?: string): string => {
  const s = event.snapshot
  const at = Printable.timeOfDay(new Date(s.since))
  const details = [
    s.toolCount === undefined ? undefined : `${s.toolCount} tools`,
    s.pid === undefined ? undefined : `pid ${s.pid}`,
    s.restarts === 0 ? undefined : `restarts ${s.restarts}`,
    s.lastError === undefined ? undefined : errorText(s, config)
  ].filter((d) => d !== undefined)
  return `${at} ${Printable.line(event.toolset)} ${event.from} → ${s.state}${details.length === 0 ? "" : ` (${details.join(", ")})`}`
}

/**
 * A status line for scripts: the DTO `GET /status` and the event stream share. Given the
 * config's path, a login's `action` names it, as the text does.
 */
export const statusJson = (s: State.StatusSnapshot, config?: string) => {
  const json = StatusJson.make(s)
  return json.error === null || !("action" in json.error) || config === undefined
    ? json
    : { ...json, error: { ...json.error, action: authCommand(s.name, config) } }
}

export const catalogJson = (catalog: Catalog.Catalog) => ({
  type: "tools" as const,
  complete: catalog.complete,
  missing: catalog.missing,
  tools: catalog.tools.map(toolJson)
})

/** A catalog entry for scripts: what an MCP client would see in tools/list, plus its toolset. */
export const toolJson = (entry: Catalog.Entry) => ({
  name: entry.name,
  toolset: entry.toolset,
  ...(entry.tool.title === undefined ? {} : { title: entry.tool.title }),
  description: entry.tool.description ?? null,
  inputSchema: entry.tool.inputSchema,
  ...(entry.tool.outputSchema === undefined ? {} : { outputSchema: entry.tool.outputSchema }),
  ...(entry.tool.annotations === undefined ? {} : { annotations: entry.tool.annotations }),
  ...(entry.deferred === true ? { deferred: true } : {})
})

/**
 * The catalog as text: one tool per line with its toolset and the first line of its description;
 * a deferred tool's toolset says so, since a model is offered it only once a search finds it.
 */
export const catalogText = (catalog: Catalog.Catalog, width = 120): string => {
  const lines = columns(
    catalog.tools.map((t) => [
      t.name,
      t.deferred === true ? `${t.toolset} (deferred)` : t.toolset,
      (t.tool.description ?? "").split("\n")[0] ?? ""
    ]),
    width
  )
  const missing = catalog.missing.map((m) => Printable.line(`(not ready: ${m.toolset}, ${m.state}: ${m.reason})`))
  return [...lines, ...missing].join("\n")
}

/** A failed request for scripts (`--json`): its tag and message, and what it asked for. */
export const failureJson = (
  error: { readonly _tag: string; readonly message: string },
  subject: { readonly [key: string]: string }
) => Printable.json({ error: { tag: error._tag, message: error.message, ...subject } })

/** A tool result for people: its text items (line breaks kept), and a line for each image, audio or resource. */
export const resultText = (result: Toolset.ToolResult): string => result.content.map(Content.text).join("\n")
