/**
 * The `id` of a `run --json` command line that is refused before `JSON.parse` builds it (nested
 * too deep, too long) or that `JSON.parse` rejects, so its error line can still say which command
 * it answers. The text is scanned, never parsed: one pass, fed piece by piece as it arrives (a
 * line too long to keep is scanned as it streams past), keeping no more than `maxIdText`
 * characters of the id itself.
 */
import { JsonLimits } from "@toolvisor/core"

/** The longest id text kept; a longer id is not echoed. */
export const maxIdText = 1024

/** What a scan found: the id, when the line had a readable one. */
export type Found = { readonly id?: unknown }

/** A scan in progress: `feed` the line's text in order, then ask `found`. */
export interface Scan {
  readonly feed: (piece: string) => void
  readonly found: () => Found
}

const quote = 34
const backslash = 92
const comma = 44
const colon = 58
const openBrace = 123
const closeBrace = 125
const openBracket = 91
const closeBracket = 93

/** The next quote or backslash, from `lastIndex`. */
const stringEnd = /["\\]/g

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 0xfeff

/**
 * Starts a scan for a member `"id"` of the top-level object (written as `"id"`, without escapes).
 * As `JSON.parse` does, the last such member wins; a line that is no object has none. The value
 * found is parsed on its own (at most `maxIdText` characters, at most `JsonLimits.maxDepth` deep).
 */
export const scan = (): Scan => {
  let where: "start" | "object" | "after" = "start"
  let depth = 0
  let inString = false
  let escaped = false
  let expectKey = false
  /** The key being read at depth 1; only its first three characters are kept, enough to tell "id". */
  let key: string | undefined
  let phase: "none" | "colon" | "value" | "capture" = "none"
  let capture = ""
  let last: string | undefined

  const append = (char: string) => {
    capture += char
    if (capture.length > maxIdText) {
      phase = "none"
      last = undefined
    }
  }
  const endCapture = () => {
    if (phase === "capture") last = capture
    phase = "none"
  }

  const feed = (piece: string) => {
    for (let i = 0; i < piece.length && where !== "after"; i++) {
      let c = piece.charCodeAt(i)
      if (where === "start") {
        if (isSpace(c)) continue
        if (c !== openBrace) {
          where = "after"
          return
        }
        where = "object"
        depth = 1
        expectKey = true
        continue
      }
      if (inString) {
        if (phase !== "capture" && key === undefined && !escaped) {
          // Inside a string nothing but a quote or a backslash matters: jump to the next one.
          stringEnd.lastIndex = i
          i = stringEnd.test(piece) ? stringEnd.lastIndex - 1 : piece.length
          if (i === piece.length) break
          c = piece.charCodeAt(i)
        }
        if (phase === "capture") append(piece.charAt(i))
        if (escaped) escaped = false
        else if (c === backslash) escaped = true
        else if (c === quote) {
          inString = false
          if (key !== undefined) phase = key === "id" ? "colon" : "none"
          key = undefined
        } else if (key !== undefined && key.length < 3) key += piece.charAt(i)
        continue
      }
      if (depth === 1) {
        if (c === comma || c === closeBrace) {
          endCapture()
          expectKey = c === comma
        } else if (phase === "colon") {
          if (!isSpace(c)) phase = c === colon ? "value" : "none"
        } else if (phase === "value") {
          if (!isSpace(c)) {
            phase = "capture"
            capture = ""
          }
        } else if (c === quote && expectKey) {
          key = ""
          expectKey = false
        }
      }
      if (phase === "capture") append(piece.charAt(i))
      if (c === quote) inString = true
      else if (c === openBrace || c === openBracket) depth++
      else if (c === closeBrace || c === closeBracket) {
        depth--
        if (depth === 0) where = "after"
      }
    }
  }

  // A line that ends inside the id's value (no "," or "}" after it) still has it, if it parses.
  const found = (): Found => {
    const text = (phase === "capture" ? capture : last)?.trim()
    if (text === undefined || JsonLimits.textDepth(text, JsonLimits.maxDepth) > JsonLimits.maxDepth) return {}
    try {
      return { id: JSON.parse(text) }
    } catch {
      return {}
    }
  }

  return { feed, found }
}

/** The id of a whole line, as `scan` finds it. */
export const of = (line: string): Found => {
  const s = scan()
  s.feed(line)
  return s.found()
}
