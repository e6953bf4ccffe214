/**
 * A config that cannot be used, shown as the command's result rather than as a log line: the
 * file and the format it was read as, then one problem a line with its path — a did-you-mean,
 * and a syntax error's excerpt with the caret under its column, as the loader wrote them. It is
 * printed whatever `--log-level` says. `json` is the same as data (`validate --json`). A config
 * may be someone else's file, so every line is escaped for the terminal.
 */
import type { ConfigError } from "@toolvisor/config"
import * as Printable from "./Printable.ts"

const header = (error: ConfigError.ConfigError): string => {
  const count = error.issues.length === 1 ? "1 problem" : `${error.issues.length} problems`
  const readAs = error.format === undefined ? "" : `read as ${error.format}; `
  return `Invalid config ${error.source} (${readAs}${count}):`
}

/**
 * Each problem indented under the header; a message of several lines (an excerpt and its caret)
 * keeps them, indented alike so the caret stays under its column.
 */
export const text = (error: ConfigError.ConfigError): string =>
  [
    Printable.line(header(error)),
    ...error.issues.flatMap((issue) =>
      `${issue.path === "" ? "" : `${issue.path}: `}${issue.message}`
        .split("\n")
        .map((line) => `  ${Printable.line(line)}`)
    )
  ].join("\n")

/** The same as one JSON document: `valid: false`, the file, its format and every problem. */
export const json = (error: ConfigError.ConfigError) => ({
  valid: false as const,
  source: error.source,
  format: error.format ?? null,
  problems: error.issues.map((issue) => ({ path: issue.path, message: issue.message }))
})
