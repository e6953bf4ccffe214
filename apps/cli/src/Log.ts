/**
 * The one log format every command uses: `HH:MM:SS.mmm LEVEL message key=value…` on stderr
 * (stdout belongs to results, JSON lines and the MCP protocol). A cause is folded into the line
 * as its first error's message; internal detail such as fiber ids never appears, since people
 * read these lines, not Effect developers. A message of several lines (a config that no longer
 * loads, with its excerpt and caret) keeps them as indented continuation lines, so it reads
 * whole and no line of it can pass for an entry of its own. A line often quotes a server (its
 * stderr, its error), so control characters are escaped: a log line cannot drive the terminal.
 */
import * as Cause from "effect/Cause"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import * as Printable from "./Printable.ts"

const messageOf = (value: unknown): string =>
  typeof value === "string"
    ? value
    : value instanceof Error
      ? value.message
      : Cause.isCause(value)
        ? causeText(value)
        : JSON.stringify(value)

/** The first failure or defect of a cause as one line, or "interrupted". */
export const causeText = (cause: Cause.Cause<unknown>): string => {
  const reason = cause.reasons.find((r) => !Cause.isInterruptReason(r))
  if (reason === undefined) return "interrupted"
  const error = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : reason
  if (typeof error === "object" && error !== null && "_tag" in error && "message" in error) {
    return `${String(error._tag)}: ${String(error.message)}`
  }
  return messageOf(error).split("\n")[0] ?? ""
}

/**
 * One entry's lines: the first starts with the UTC time of day and ends with the cause and the
 * annotations; the message's further lines follow, indented.
 */
export const lines = (options: Logger.Options<unknown>): ReadonlyArray<string> => {
  const messages = Array.isArray(options.message) ? options.message : [options.message]
  const head = [Printable.timeOfDay(options.date), options.logLevel.toUpperCase(), ...messages.map(messageOf)]
  const [first = "", ...rest] = head.join(" ").replaceAll("\r\n", "\n").split("\n")
  const tail: Array<string> = []
  if (options.cause.reasons.length > 0) tail.push(`(${causeText(options.cause)})`)
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  for (const [key, value] of Object.entries(annotations)) tail.push(`${key}=${messageOf(value)}`)
  return [[first, ...tail].join(" "), ...rest.map((line) => `  ${line}`)].map(Printable.line)
}

/** A line in the same format, written where no logger runs any more (the process is leaving). */
export const plain = (level: string, message: string): string =>
  Printable.line(`${Printable.timeOfDay(new Date())} ${level} ${message}`)

/** One entry on one line, for a pane that gives each entry a row. */
export const format = (options: Logger.Options<unknown>): string => lines(options).join(" ")

/** On a terminal a line starts by clearing whatever a progress line left there. */
const lineStart = () => (process.stderr.isTTY ? "\r\u001b[K" : "")

/** The stderr logger, replacing Effect's default one. */
export const layer = Logger.layer([
  Logger.make((options) => process.stderr.write(`${lineStart()}${lines(options).join("\n")}\n`))
])
