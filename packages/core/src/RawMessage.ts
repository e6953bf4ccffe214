/**
 * The bounds a JSON-RPC message from a server must fit in, and what a message says about itself
 * before it is parsed: its top-level `id`, and whether it is a request (it has a `method`) or a
 * response. A message too big to keep or too deep to parse is still answered for: the one request
 * it responds to fails at once, instead of waiting out its deadline, while the stream moves on to
 * the next message. The bytes are scanned as they arrive, in pieces, and nothing of them is kept
 * but a few short strings. MCP's stdio transport and the LSP reader share all of it.
 */
import * as JsonLimits from "./JsonLimits.ts"

/** Longest message kept: far above any real answer, far below what would strain this process. */
export const maxBytes = 16 * 1024 * 1024

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`

/**
 * A message from a server that was not parsed: longer than `maxBytes`, or nested deeper than
 * `JsonLimits.maxDepth`. Its message says which ("20.0 MiB, over the limit of 16 MiB"). When it
 * answers a request, that request ran on the server; only its answer is lost.
 */
export class Refused extends Error {
  readonly bytes: number
  readonly tooDeep: boolean

  /** `passing`: refused while it still arrived, `bytes` being what had arrived by then. */
  constructor(bytes: number, tooDeep: boolean, passing = false) {
    super(
      tooDeep
        ? `nested deeper than ${JsonLimits.maxDepth} levels, the limit`
        : `${passing ? "more than " : ""}${mib(bytes)}, over the limit of ${maxBytes / (1024 * 1024)} MiB`
    )
    this.name = "Refused"
    this.bytes = bytes
    this.tooDeep = tooDeep
  }
}

/**
 * Whether a message's text nests deeper than `JsonLimits.maxDepth`. A text with no more brackets
 * than that cannot, and counting them is a native search that skips long strings at memory speed;
 * only a text with more brackets gets the exact scan, which reads every character. Most messages
 * have a handful of brackets around a long text, so this costs them next to nothing.
 */
export const isTooDeep = (text: string): boolean => {
  let brackets = 0
  for (const bracket of ["{", "["]) {
    for (let i = text.indexOf(bracket); i >= 0; i = text.indexOf(bracket, i + 1)) {
      brackets += 1
      if (brackets > JsonLimits.maxDepth) return JsonLimits.textDepth(text, JsonLimits.maxDepth) > JsonLimits.maxDepth
    }
  }
  return false
}

/** The JSON-RPC code a refused answer carries: it could not be parsed. */
export const refusedCode = -32700

/**
 * The error answer that fails the request a refused message answers, in JSON-RPC's shape, for the
 * client library to route as it routes any answer; `undefined` when the message answers no request
 * of ours (it has no id, or it is a request from the server). The refusal rides along as the
 * error's `data`, an object no server can forge over the wire.
 */
export const errorAnswer = (found: Found, refused: Refused) =>
  found.id === undefined || found.isRequest
    ? undefined
    : {
        jsonrpc: "2.0" as const,
        id: found.id,
        error: {
          code: refusedCode,
          message: `the server's answer is ${refused.message}; the request ran, but its answer was dropped`,
          data: refused
        }
      }

/** What the scan found: the id, and whether the message is a request or notification from the peer. */
export interface Found {
  readonly id: string | number | undefined
  readonly isRequest: boolean
}

/** Longest id kept; a longer one is not an id any request of ours was sent with. */
const maxIdBytes = 256

/** Longest top-level key kept: long enough for `method`. */
const maxKeyBytes = 8

const quote = 34
const backslash = 92
const colon = 58
const comma = 44
const minus = 45

const isNumberByte = (c: number) => (c >= 48 && c <= 57) || c === minus || c === 43 || c === 46 || c === 69 || c === 101

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13

/**
 * A scan of one message, fed its bytes in order and in pieces of any size. It follows only the
 * top level of the object: keys, and the value of `id` when it is a string or a number. The
 * structural characters of JSON are ASCII and UTF-8 never puts an ASCII byte inside a character,
 * so the bytes need not be decoded.
 */
export class Scan {
  private level = 0
  private inString = false
  private escaped = false
  /** At the top level: the next string is a key. */
  private keyNext = false
  /** At the top level: the key just read was `id`, or `id` and its colon (`value` next). */
  private idKey: "none" | "key" | "value" = "none"
  /** What the string or number being read at the top level is kept as. */
  private capture: "key" | "id" | "number" | undefined
  private captured: Array<number> = []
  private overflow = false
  private id: string | number | undefined
  private isRequest = false
  /** A top-level `result` or `error` key was read: the message answers a request. */
  private isAnswer = false

  /** Scans `bytes[start, end)`. */
  feed(bytes: Uint8Array, start = 0, end = bytes.length): void {
    for (let i = start; i < end; i++) {
      const c = bytes[i]!
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (c === backslash) this.escaped = true
        else if (c === quote) {
          this.inString = false
          this.endCapture()
          continue
        }
        this.keep(c)
        continue
      }
      if (this.capture === "number") {
        if (isNumberByte(c)) {
          this.keep(c)
          continue
        }
        this.endCapture()
      }
      this.structural(c)
    }
  }

  /**
   * The id of the request the message answers, once the bytes so far prove it is an answer (an
   * `id`, a `result` or `error` key, no `method`): a message too long to keep can fail its request
   * while it still passes, rather than when (if ever) it ends.
   */
  answers(): string | number | undefined {
    return this.isAnswer && !this.isRequest && this.capture !== "number" ? this.id : undefined
  }

  /** What the bytes fed so far say; a number still being read counts as read. */
  found(): Found {
    if (this.capture === "number") this.endCapture()
    return { id: this.id, isRequest: this.isRequest }
  }

  private structural(c: number): void {
    if (isSpace(c)) return
    const top = this.level === 1
    if (c === quote) {
      this.inString = true
      if (top && this.keyNext) this.startCapture("key")
      else if (top && this.idKey === "value") this.startCapture("id")
      this.keyNext = false
      if (top && this.idKey === "value") this.idKey = "none"
      return
    }
    if (c === 123 /* { */ || c === 91 /* [ */) {
      this.level++
      this.keyNext = this.level === 1 && c === 123
      this.idKey = "none"
      return
    }
    if (c === 125 /* } */ || c === 93 /* ] */) {
      this.level--
      return
    }
    if (!top) return
    if (c === comma) this.keyNext = true
    else if (c === colon) {
      if (this.idKey === "key") {
        this.idKey = "value"
        return
      }
    } else if (this.idKey === "value" && isNumberByte(c)) {
      this.startCapture("number")
      this.keep(c)
    }
    this.idKey = "none"
  }

  private startCapture(kind: "key" | "id" | "number"): void {
    this.capture = kind
    this.captured = []
    this.overflow = false
  }

  private keep(c: number): void {
    if (this.capture === undefined || this.overflow) return
    if (this.captured.length >= (this.capture === "key" ? maxKeyBytes : maxIdBytes)) this.overflow = true
    else this.captured.push(c)
  }

  private endCapture(): void {
    const kind = this.capture
    this.capture = undefined
    if (kind === undefined || this.overflow) return
    const text = Buffer.from(this.captured).toString("utf8")
    if (kind === "number") {
      const id = Number(text)
      if (Number.isFinite(id)) this.id = id
      return
    }
    const value = stringContent(text)
    if (kind === "id") this.id = value
    else {
      this.idKey = value === "id" ? "key" : "none"
      if (value === "method") this.isRequest = true
      if (value === "result" || value === "error") this.isAnswer = true
    }
  }
}

/** A JSON string's content with its escapes read; `undefined` for an escape that is not JSON. */
const stringContent = (text: string): string | undefined => {
  if (!text.includes("\\")) return text
  try {
    const value: unknown = JSON.parse(`"${text}"`)
    return typeof value === "string" ? value : undefined
  } catch {
    return undefined
  }
}

/** Scans one whole message. */
export const scan = (bytes: Uint8Array): Found => {
  const scanner = new Scan()
  scanner.feed(bytes)
  return scanner.found()
}
