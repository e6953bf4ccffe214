/**
 * A server's log message (MCP `notifications/message`) as one line for people: the time it
 * arrived, the level as the server gave it, the toolset (and the server's logger, when named) and
 * the data — a string as is, anything else as JSON — cut to a bounded length. The server writes
 * every part of it, so the line is escaped for the terminal.
 */
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/** The longest data a line shows: a server may log a whole document. */
const maxData = 2_000

const dataText = (data: unknown): string => {
  if (typeof data === "string") return data
  try {
    return JSON.stringify(data) ?? String(data)
  } catch {
    return String(data)
  }
}

/** Who logged: `toolset`, or `toolset/logger`. */
const source = (event: McpSurfaces.LogEvent): string =>
  event.logger === undefined ? event.toolset : `${event.toolset}/${event.logger}`

/** `HH:MM:SS.mmm LEVEL [toolset/logger] data`, the CLI's log format with the server named. */
export const line = (event: McpSurfaces.LogEvent, at: Date = new Date()): string =>
  `${Printable.timeOfDay(at)} ${event.level.toUpperCase()} [${Printable.line(source(event))}] ${Printable.line(Output.truncate(dataText(event.data), maxData))}`
