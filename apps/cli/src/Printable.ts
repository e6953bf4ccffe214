/**
 * Text a server controls — its stderr, tool names, descriptions and results, a config's values —
 * made safe for a terminal. Every character that acts instead of printing (C0 and C1 controls,
 * DEL, the bidirectional overrides that reorder what is shown) is written as an escape such as
 * `\x1b` or `\u202e`: `ESC[2J` cannot clear the screen, `ESC]0;…BEL` cannot set the title, and a
 * name with a newline cannot break a table. JSON output stays JSON: `json` writes the few acting
 * characters `JSON.stringify` leaves raw (DEL, C1, bidi) as `\u` escapes, the same text once parsed.
 */

const acting = "\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"

const everyControl = new RegExp(`[${acting}]`, "g")
/** The same, less the line feed and tab that multi-line text keeps. */
const inText = new RegExp(`[${acting.replace("\\u0000-\\u001f", "\\u0000-\\u0008\\u000b-\\u001f")}]`, "g")

const named: { readonly [char: string]: string } = { "\n": "\\n", "\r": "\\r", "\t": "\\t" }

/** `\n`, `\x1b`, `\u202e`: how one acting character is shown. */
export const escapeChar = (char: string): string => {
  const code = char.charCodeAt(0)
  return named[char] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`)
}

/** True when the text holds a character that would act on a terminal. */
export const hasControls = (text: string): boolean => text.search(everyControl) !== -1

/** One line of text for a terminal: every acting character, line breaks included, escaped. */
export const line = (text: string): string => text.replace(everyControl, escapeChar)

/** Text for a terminal that keeps its line breaks and tabs (a result, a description); `\r\n` becomes `\n`. */
export const lines = (text: string): string => text.replaceAll("\r\n", "\n").replace(inText, escapeChar)

/** What `JSON.stringify` leaves raw of the acting characters: DEL, C1 and the bidi controls. */
const rawInJson = new RegExp(`[${acting.replace("\\u0000-\\u001f", "")}]`, "g")

const unicodeEscape = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`

/** A value as one JSON line that is safe on a terminal and parses to the same value. */
export const json = (value: unknown): string => JSON.stringify(value).replace(rawInJson, unicodeEscape)

/** The UTC time of day, to the millisecond, as every line the CLI writes starts (`12:00:00.000`). */
export const timeOfDay = (date: Date): string => date.toISOString().slice(11, 23)
