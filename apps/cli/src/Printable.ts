/**
 * Text a server controls — its stderr, tool names, descriptions and results, a config's values —
 * made safe for a terminal. Every character that acts instead of printing, or prints nothing, is
 * written as an escape such as `\x1b` or `\u202e`: C0 and C1 controls and DEL, and Unicode's
 * format characters (the bidirectional controls that reorder what is shown, zero-width characters
 * that make two names look alike, tags that hide text) and line and paragraph separators. So
 * `ESC[2J` cannot clear the screen, `ESC]0;…BEL` cannot set the title, a name with a newline cannot
 * break a table, and a name reads as what it is. JSON output stays JSON: `json` writes the acting
 * characters `JSON.stringify` leaves raw as `\u` escapes, the same text once parsed.
 */

const acting = "\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}"

const everyControl = new RegExp(`[${acting}]`, "gu")
/** The same, less the line feed and tab that multi-line text keeps. */
const inText = new RegExp(`(?![\\n\\t])[${acting}]`, "gu")

const named: { readonly [char: string]: string } = { "\n": "\\n", "\r": "\\r", "\t": "\\t" }

/** `\n`, `\x1b`, `\u202e`, `\u{e0041}`: how one acting character is shown. */
export const escapeChar = (char: string): string => {
  const code = char.codePointAt(0) ?? 0
  const shown = named[char]
  if (shown !== undefined) return shown
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, "0")}`
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\u{${code.toString(16)}}`
}

/** True when the text holds a character that would act on a terminal. */
export const hasControls = (text: string): boolean => text.search(everyControl) !== -1

/** One line of text for a terminal: every acting character, line breaks included, escaped. */
export const line = (text: string): string => text.replace(everyControl, escapeChar)

/** Text for a terminal that keeps its line breaks and tabs (a result, a description); `\r\n` becomes `\n`. */
export const lines = (text: string): string => text.replaceAll("\r\n", "\n").replace(inText, escapeChar)

/** What `JSON.stringify` leaves raw of the acting characters: all but C0. */
const rawInJson = new RegExp(`(?![\\u0000-\\u001f])[${acting}]`, "gu")

/** `\u` escapes of each UTF-16 unit, as JSON writes a character outside the Basic Plane. */
const unicodeEscape = (char: string) =>
  Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`).join("")

/** A value as one JSON line that is safe on a terminal and parses to the same value. */
export const json = (value: unknown): string => JSON.stringify(value).replace(rawInJson, unicodeEscape)

/** The UTC time of day, to the millisecond, as every line the CLI writes starts (`12:00:00.000`). */
export const timeOfDay = (date: Date): string => date.toISOString().slice(11, 23)
