/**
 * How the CLI shows things: status tables, transition lines, catalogs and JSON lines. Pure
 * functions of the runtime's values, so every mode (terminal, plain, --json) says the same.
 */
import type { State, Toolset } from "@toolvisor/core"
import type { Catalog, ToolsetRegistry } from "@toolvisor/runtime"

/** Cuts text to `width` characters on a code-point boundary, marking the cut. */
export const truncate = (text: string, width: number): string => {
  const chars = Array.from(text)
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`
}

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

/** The last error as shown; one that needs a login says which command gives it. */
export const errorText = (s: State.StatusSnapshot): string =>
  s.lastError === undefined
    ? ""
    : `${s.lastError.tag}: ${s.lastError.message}${s.lastError.tag === "AuthRequired" ? ` (run: toolvisor auth ${s.name})` : ""}`

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** A status table, one row per toolset. `frame` animates a spinner for busy toolsets. */
export const table = (
  board: ReadonlyArray<State.StatusSnapshot>,
  options: { readonly colour: boolean; readonly frame?: number; readonly width?: number }
): string => {
  const width = options.width ?? 120
  const rows = board.map((s) => {
    const busy = s.state === "Starting" || s.state === "Restarting"
    const mark = busy && options.frame !== undefined ? spinnerFrames[options.frame % spinnerFrames.length] : " "
    return {
      state: s.state,
      cells: [
        s.name,
        s.kind,
        `${mark} ${s.state}`,
        String(s.restarts),
        s.toolCount === undefined ? "-" : String(s.toolCount),
        s.pid === undefined ? "-" : String(s.pid),
        errorText(s)
      ]
    }
  })
  const header = ["TOOLSET", "KIND", "  STATE", "RESTARTS", "TOOLS", "PID", "LAST ERROR"]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r.cells[i] ?? "").length)))
  const fixed = widths.slice(0, -1).reduce((sum, w) => sum + w + 2, 0)
  const errorWidth = Math.max(10, width - fixed)
  const line = (cells: ReadonlyArray<string>, state?: State.State) =>
    cells
      .map((cell, i) => {
        if (i === cells.length - 1) return truncate(cell, errorWidth)
        const padded = cell.padEnd(widths[i] ?? 0)
        return i === 2 && state !== undefined ? paint(state, padded, options.colour) : padded
      })
      .join("  ")
      .trimEnd()
  return [line(header), ...rows.map((r) => line(r.cells, r.state))].join("\n")
}

/** One line per transition, for logs and pipes. */
export const transitionLine = (event: ToolsetRegistry.ToolsetEvent): string => {
  const s = event.snapshot
  const at = new Date(s.since).toISOString().slice(11, 23)
  const details = [
    s.toolCount === undefined ? undefined : `${s.toolCount} tools`,
    s.pid === undefined ? undefined : `pid ${s.pid}`,
    s.restarts === 0 ? undefined : `restarts ${s.restarts}`,
    s.lastError === undefined ? undefined : errorText(s)
  ].filter((d) => d !== undefined)
  return `${at} ${event.toolset} ${event.from} → ${s.state}${details.length === 0 ? "" : ` (${details.join(", ")})`}`
}

export const statusJson = (s: State.StatusSnapshot) => ({
  type: "status" as const,
  toolset: s.name,
  kind: s.kind,
  state: s.state,
  restarts: s.restarts,
  pid: s.pid ?? null,
  tools: s.toolCount ?? null,
  error:
    s.lastError === undefined
      ? null
      : {
          tag: s.lastError.tag,
          message: s.lastError.message,
          ...(s.lastError.tag === "AuthRequired" ? { action: `toolvisor auth ${s.name}` } : {})
        },
  at: new Date(s.since).toISOString()
})

export const catalogJson = (catalog: Catalog.Catalog) => ({
  type: "tools" as const,
  complete: catalog.complete,
  missing: catalog.missing,
  tools: catalog.tools.map((t) => ({ name: t.name, toolset: t.toolset, description: t.tool.description ?? null }))
})

/** The catalog as text: one tool per line with its toolset and the first line of its description. */
export const catalogText = (catalog: Catalog.Catalog, width = 120): string => {
  const nameWidth = Math.max(4, ...catalog.tools.map((t) => t.name.length))
  const toolsetWidth = Math.max(7, ...catalog.tools.map((t) => t.toolset.length))
  const lines = catalog.tools.map((t) => {
    const description = (t.tool.description ?? "").split("\n")[0] ?? ""
    const head = `${t.name.padEnd(nameWidth)}  ${t.toolset.padEnd(toolsetWidth)}  `
    return `${head}${truncate(description, Math.max(10, width - head.length))}`.trimEnd()
  })
  const missing = catalog.missing.map((m) => `(not ready: ${m.toolset}, ${m.state}: ${m.reason})`)
  return [...lines, ...missing].join("\n")
}

/** A tool result for people: its text items, and a note for other content kinds. */
export const resultText = (result: Toolset.ToolResult): string =>
  result.content.map((item) => (typeof item.text === "string" ? item.text : `[${item.type} content]`)).join("\n")
