/**
 * `toolvisor_status`: the gateway's own tool, read-only, so a host that only speaks tools can see
 * why tools are missing — each toolset's state, tool count and last error, and what brings it
 * back. It reads the registry's board, whose errors the runtime has already masked (the one
 * redaction every output passes through), and says it in the status DTO `GET /status` speaks,
 * plus a line of text per toolset for a model to read. `serve --no-status-tool` leaves it out.
 */
import { LifecycleError, type State, type Toolset } from "@toolvisor/core"
import { type Catalog, Reprobe, StatusJson } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

export const name = "toolvisor_status"

/** The tool as the gateway lists it, after the catalog's tools. */
export const tool: Toolset.Tool = {
  name,
  title: "Toolvisor status",
  description:
    "Why a tool may be missing or failing: every toolset behind this server with its state, tool count and last error, and what brings it back. Read-only.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

/** What brings a toolset back, for one that is not serving; undefined for one that is. */
export const hint = (s: State.StatusSnapshot, cooldown: Duration.Duration): string | undefined => {
  switch (s.state) {
    case "Ready":
      return undefined
    case "Degraded":
      return "its health probe is failing; calls are still served"
    case "Starting":
    case "Restarting":
      return "starting: its tools are offered once it is Ready (tools/list_changed)"
    default: {
      const error = s.lastError
      if (error === undefined) return "stopped on request: `restart` starts it again"
      if (error.tag === "AuthRequired") return `needs a login: run \`toolvisor auth ${s.name}\`, then call a tool again`
      if (LifecycleError.isPermanentTag(error.tag)) return "a retry cannot fix this error: fix the server or the config"
      if (Reprobe.failedToStart(s)) {
        return `calling one of its tools starts it again, at most once every ${Duration.format(cooldown)}`
      }
      return `it crashed until its restart budget was spent, and a call does not start a new crash loop: restart the gateway (or POST /toolsets/${s.name}/restart with --http)`
    }
  }
}

/** The board as the tool answers it: one line per toolset, and the same as JSON. */
export const result = (
  board: ReadonlyArray<State.StatusSnapshot>,
  catalog: Catalog.Catalog | undefined,
  cooldown: Duration.Duration
): Toolset.ToolResult => {
  const toolsets = board.map((s) => {
    const why = hint(s, cooldown)
    return { ...StatusJson.make(s), ...(why === undefined ? {} : { hint: why }) }
  })
  const lines = board.map((s, i) => {
    const count = s.toolCount === undefined ? "no tools" : `${s.toolCount} tools`
    const error = s.lastError === undefined || s.state === "Ready" ? "" : `. Last error: ${Output.errorText(s)}`
    const why = toolsets[i]?.hint
    return Printable.line(
      `${s.name}: ${Output.shownState(s)}, ${count}${error}${why === undefined ? "" : `. Hint: ${why}`}`
    )
  })
  const complete = catalog?.complete ?? board.every((s) => s.state === "Ready")
  const summary = complete ? "every toolset is serving its tools" : "some tools are missing"
  return {
    content: [{ type: "text", text: [`${board.length} toolsets; ${summary}.`, ...lines].join("\n") }],
    structuredContent: { complete, toolsets, missing: catalog?.missing ?? [] }
  }
}
