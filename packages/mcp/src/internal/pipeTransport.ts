/**
 * An MCP SDK `Transport` over a pair of pipes: those of a process that `ServerProcess` spawned, so
 * the core owns the process (its group, its stderr, its shutdown) and the SDK only speaks
 * JSON-RPC; or this process's stdin and stdout, when it serves MCP (`StdioServer`). Unlike the
 * SDK's own stdio transports, a line that is not JSON-RPC (a banner, a stray `console.log`) is
 * counted and skipped instead of breaking the session, and a line too long to keep or nested too
 * deep to parse safely fails the request it answers at once, as a `RawMessage.Refused` (a request
 * from the other side is answered with an error), while the lines after it are read as usual.
 */
import type * as NodeStream from "node:stream"
import { StringDecoder } from "node:string_decoder"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCResultResponse
} from "@modelcontextprotocol/sdk/types.js"
import { RawMessage, Redaction } from "@toolvisor/core"
import * as SendGuard from "./sendGuard.ts"

/**
 * Longest line kept, in characters (a line of this many is at least this many bytes); a longer one
 * is scanned for its id as it passes, and dropped.
 */
export const maxLine = RawMessage.maxBytes

/** How often, at most, lines that are not JSON-RPC are reported: a flood is one warning, with its count. */
const garbageReportMillis = 10_000

const openBrace = 123

/** Where the first character that is not JSON whitespace is; -1 for a blank line. */
const firstNonSpace = (line: string): number => {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i)
    if (c !== 32 && c !== 9 && c !== 13 && c !== 10) return i
  }
  return -1
}

/** A line past `maxLine` as it passes: its scan, its size so far, and whether its request was failed. */
interface Oversized {
  readonly scan: RawMessage.Scan
  bytes: number
  refused: boolean
}

/** The JSON-RPC code of the error that stands for a malformed answer: JSON-RPC's "internal error". */
const malformedAnswer = -32603

/** The JSON-RPC code of the error that answers a request that could not be read: "invalid request". */
const invalidRequest = -32600

/** JSON-RPC's "internal error": what a request the server stops under is answered with. */
const internalError = -32603

/** The id of what says it is a JSON-RPC 2.0 answer (an id, a result or an error, no method), or `undefined`. */
const answerId = (message: unknown): string | number | undefined => {
  if (typeof message !== "object" || message === null || "method" in message || !("id" in message)) return undefined
  if (!("jsonrpc" in message && message.jsonrpc === "2.0" && ("result" in message || "error" in message))) {
    return undefined
  }
  return idOf(message)
}

/** The id of what says it is a request (a method and an id), valid or not, or `undefined`. */
const requestId = (message: unknown): string | number | undefined =>
  typeof message === "object" && message !== null && "method" in message && "id" in message ? idOf(message) : undefined

const idOf = ({ id }: { readonly id: unknown }): string | number | undefined =>
  typeof id === "string" || Number.isSafeInteger(id) ? (id as string | number) : undefined

/**
 * A result response in the plain shape a busy session carries most: exactly `jsonrpc`, `id` and an
 * object `result` without `_meta`. The schema accepts every such message as it is, so it is not
 * run on them (the SDK checks each message again when it routes it and parses the result with the
 * request's own schema); any other message goes through the schema.
 */
const isPlainResult = (message: unknown): message is JSONRPCResultResponse => {
  if (typeof message !== "object" || message === null || Object.keys(message).length !== 3) return false
  if (!("jsonrpc" in message && "id" in message && "result" in message)) return false
  const { jsonrpc, id, result } = message
  return (
    jsonrpc === "2.0" &&
    (typeof id === "string" || Number.isSafeInteger(id)) &&
    typeof result === "object" &&
    result !== null &&
    !Array.isArray(result) &&
    !("_meta" in result)
  )
}

/**
 * A message that never reached the server: the pipe was closed, or the write failed because no
 * process reads it any more (EPIPE). A request that failed so provably never ran.
 */
export class NotDelivered extends Error {
  constructor(cause?: unknown) {
    super("the message was not delivered: the server's stdin is closed", { cause })
    this.name = "NotDelivered"
  }
}

/** What the transport tells its owner about what the other side sent, for the log. */
export interface Events {
  /**
   * Lines that are not JSON-RPC: the first at once, then at most one report per 10 s, and one at
   * the end, each with how many came since the last and the last of them.
   */
  readonly garbage: (count: number, last: string) => void
  /**
   * A message refused for its size or depth that answers no request of ours: a notification, or a
   * request from the other side (which is also answered with an error).
   */
  readonly dropped: (refused: RawMessage.Refused) => void
}

export class PipeTransport implements Transport {
  /** Events logged through `warn`: `stream` is where the other side writes, `from` who it is. */
  static warnings(
    warn: (message: string) => void,
    { stream, from }: { readonly stream: string; readonly from: string }
  ): Events {
    return {
      garbage: (count, last) =>
        warn(
          `ignored ${count} ${count === 1 ? "line" : "lines"} on ${stream} that ${count === 1 ? "is" : "are"} not JSON-RPC; the last: ${Redaction.redact(last)}`
        ),
      dropped: (refused) => warn(`dropped a message from ${from}: it is ${refused.message}`)
    }
  }

  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: ((message: JSONRPCMessage) => void) | undefined

  /** Decodes what the other side writes, keeping a character split between two reads whole. */
  private readonly decoder = new StringDecoder("utf8")
  /** The pieces of the line being read, and their length in characters. */
  private pending: Array<string> = []
  private pendingLength = 0
  /** Set while a line longer than `maxLine` passes: scanned for its id, and its bytes counted, not kept. */
  private oversized: Oversized | undefined
  /** Lines that are not JSON-RPC since the last report, the last of them, and when that report was. */
  private garbage = { count: 0, last: "", reportedAt: Number.NEGATIVE_INFINITY }
  private closed = false
  /** The lines sent during this tick, and the promise of their write. */
  private batch: { readonly lines: Array<string>; readonly written: Promise<void> } | undefined
  /** The ids of our requests not answered yet (a cancelled one is not waited for). */
  private readonly awaiting = new Set<string | number>()
  /** The ids of the other side's requests not answered yet, and who waits for there to be none. */
  private readonly owed = new Set<string | number>()
  private whenAnswered: Array<() => void> = []
  /** Requests answered by `abandon`: the answer the SDK gives later is not written. */
  private readonly abandoned = new Set<string | number>()
  /** Writes handed to the pipe and not yet confirmed. */
  private writing = 0
  /** Set while a close waits for the writes in progress to settle. */
  private afterWrites: (() => void) | undefined

  private readonly input: NodeStream.Readable
  private readonly output: NodeStream.Writable
  private readonly events: Events

  constructor(input: NodeStream.Readable, output: NodeStream.Writable, events: Events) {
    this.input = input
    this.output = output
    this.events = events
  }

  async start(): Promise<void> {
    this.input.on("data", this.onData)
    this.input.once("close", this.onClosed)
    this.input.once("end", this.onClosed)
    this.input.on("error", this.onStreamError)
  }

  /**
   * The first message of a tick is written at once, and those sent after it during the tick in
   * one write as the tick ends: with many calls in flight, the answers that arrive in one read
   * are followed by two writes of the next requests instead of one system call (and one wake-up
   * of the server) each. Order is kept, and a lone request waits for nothing: the server works
   * on it while the caller's own code unwinds.
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.output.writable) return Promise.reject(new NotDelivered())
    if (!("method" in message) && this.abandoned.delete(message.id as string | number)) return Promise.resolve()
    let line: string
    try {
      line = `${JSON.stringify(message)}\n`
    } catch (cause) {
      // Thrown here, it would escape the SDK's handling of a failed send and fail the request as a lost session.
      return Promise.reject(new SendGuard.Unsendable(`cannot be written as JSON (${String(cause)})`, cause))
    }
    this.track(message)
    let written: Promise<void>
    if (this.batch !== undefined) {
      this.batch.lines.push(line)
      written = this.batch.written
    } else {
      this.batch = this.startBatch()
      written = this.write(line)
    }
    if ("method" in message) return written
    // An answer is given once it is written: a process that exits once all are given loses none.
    const settle = () => this.settle(message.id)
    written.then(settle, settle)
    return written
  }

  /** Our requests the other side has not answered: one that ends leaving some did not end cleanly. */
  get unanswered(): number {
    return this.awaiting.size
  }

  /**
   * Resolves once every request the other side sent is answered, its answer written (or failed to
   * write), or cancelled by it: at once if none is open.
   */
  answered(): Promise<void> {
    return this.owed.size === 0 ? Promise.resolve() : new Promise((resolve) => this.whenAnswered.push(resolve))
  }

  /**
   * Answers every request of the other side still open with an error saying `message`, and drops
   * the answers the SDK may give them later: each request is answered once. For a server that
   * stops with requests in flight, whose client would otherwise wait for them in vain. Resolves
   * once those answers are written (or failed to).
   */
  abandon(message: string): Promise<void> {
    const ids = [...this.owed].filter((id) => !this.abandoned.has(id))
    const written = ids.map((id) => this.send({ jsonrpc: "2.0", id, error: { code: internalError, message } }))
    for (const id of ids) this.abandoned.add(id)
    return Promise.allSettled(written).then(() => undefined)
  }

  private track(message: JSONRPCMessage) {
    if (!("method" in message)) return
    if ("id" in message) this.awaiting.add(message.id)
    else if (message.method === "notifications/cancelled")
      this.awaiting.delete(message.params?.requestId as string | number)
  }

  /** A message for the SDK; an answer settles our request, a request is owed an answer. */
  private receive(message: JSONRPCMessage) {
    if ("method" in message) {
      if ("id" in message) this.owed.add(message.id)
      // A request its sender cancelled is not answered (the SDK drops its answer).
      else if (message.method === "notifications/cancelled") this.settle(message.params?.requestId)
    } else if ("id" in message) this.awaiting.delete(message.id as string | number)
    this.onmessage?.(message)
  }

  /** The other side's request `id` is answered: no longer owed. */
  private settle(id: unknown) {
    if (!this.owed.delete(id as string | number) || this.owed.size > 0) return
    for (const resolve of this.whenAnswered.splice(0)) resolve()
  }

  /** Collects the lines sent after the first during this tick, and writes them as it ends. */
  private startBatch() {
    const lines: Array<string> = []
    const written = new Promise<void>((resolve, reject) => {
      process.nextTick(() => {
        this.batch = undefined
        if (lines.length > 0) this.write(lines.join("")).then(resolve, reject)
      })
    })
    return { lines, written }
  }

  private write(text: string): Promise<void> {
    if (this.closed) return Promise.reject(new NotDelivered())
    this.writing += 1
    return new Promise<void>((resolve, reject) => {
      this.output.write(text, (error) => {
        this.writing -= 1
        if (error) reject(new NotDelivered(error))
        else resolve()
        // After the rejection has reached the request (a microtask away), not before it.
        if (this.writing === 0 && this.afterWrites !== undefined) setImmediate(this.afterWrites)
      })
    })
  }

  async close(): Promise<void> {
    this.onClosed()
  }

  /**
   * Each chunk is searched for line ends once; a line split between chunks is kept as its pieces
   * and joined once, when it ends, so a long line costs its length and not its length squared.
   */
  private readonly onData = (chunk: Buffer) => {
    const text = this.decoder.write(chunk)
    let start = 0
    for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
      if (this.pendingLength === 0 && this.oversized === undefined && end - start <= maxLine) {
        this.deliver(text.slice(start, end))
      } else {
        this.append(text.slice(start, end))
        this.endLine()
      }
      start = end + 1
    }
    if (start < text.length) this.append(text.slice(start))
  }

  private append(piece: string) {
    if (this.oversized === undefined && this.pendingLength + piece.length > maxLine) {
      this.oversized = { scan: new RawMessage.Scan(), bytes: 0, refused: false }
      for (const part of this.pending) this.pass(this.oversized, part)
      this.pending = []
      this.pendingLength = 0
    }
    if (this.oversized === undefined) {
      this.pending.push(piece)
      this.pendingLength += piece.length
    } else {
      this.pass(this.oversized, piece)
    }
  }

  /**
   * A piece of a line too long to keep: scanned for the id, counted, dropped. The request it
   * answers fails as soon as the scan knows which it is: a line that never ends (no newline after
   * 100 MB) held it until its deadline.
   */
  private pass(oversized: Oversized, piece: string) {
    const bytes = Buffer.from(piece, "utf8")
    oversized.scan.feed(bytes)
    oversized.bytes += bytes.length
    const id = oversized.refused || oversized.bytes <= maxLine ? undefined : oversized.scan.answers()
    if (id === undefined) return
    oversized.refused = true
    this.refuse({ id, isRequest: false }, new RawMessage.Refused(oversized.bytes, false, true))
  }

  private endLine() {
    const oversized = this.oversized
    if (oversized !== undefined) {
      this.oversized = undefined
      if (oversized.refused) return
      return this.refuse(oversized.scan.found(), new RawMessage.Refused(oversized.bytes, false))
    }
    const line = this.pending.join("")
    this.pending = []
    this.pendingLength = 0
    this.deliver(line)
  }

  private deliver(line: string) {
    const first = firstNonSpace(line)
    if (first < 0) return
    // Only an object can be a message; anything else is skipped without parsing it.
    if (line.charCodeAt(first) !== openBrace) return this.skip(line)
    if (RawMessage.isTooDeep(line)) {
      const bytes = Buffer.from(line, "utf8")
      return this.refuse(RawMessage.scan(bytes), new RawMessage.Refused(bytes.length, true))
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      return this.skip(line)
    }
    if (isPlainResult(parsed)) return this.receive(parsed)
    const message = JSONRPCMessageSchema.safeParse(parsed)
    if (message.success) return this.receive(message.data)
    const id = answerId(parsed)
    if (id === undefined) {
      // A request the other side waits for: it learns at once that it will not be handled.
      const request = requestId(parsed)
      if (request !== undefined) this.answerInvalid(request, "not a valid JSON-RPC request; it was not handled")
      return this.skip(line)
    }
    // An answer to one of our requests, malformed (`"result": "garbage"`): it fails that request
    // now, where skipping it left the request (an initialize, a call) to its deadline.
    this.receive({
      jsonrpc: "2.0",
      id,
      error: { code: malformedAnswer, message: `the server's answer is not a valid JSON-RPC response` }
    })
  }

  /**
   * A refused answer fails the request it answers, through the SDK's own path for an error answer.
   * A refused request is answered with an error, so its sender does not wait for it in vain.
   */
  private refuse(found: RawMessage.Found, refused: RawMessage.Refused) {
    const answer = RawMessage.errorAnswer(found, refused)
    if (answer !== undefined) return this.receive(answer)
    this.events.dropped(refused)
    if (found.isRequest && found.id !== undefined) {
      this.answerInvalid(found.id, `the request is ${refused.message}; it was not handled`)
    }
  }

  /** Answers the other side's request `id` with "invalid request"; a write that fails changes nothing. */
  private answerInvalid(id: string | number, message: string) {
    this.send({ jsonrpc: "2.0", id, error: { code: invalidRequest, message } }).catch(() => undefined)
  }

  private skip(line: string) {
    const garbage = this.garbage
    garbage.count += 1
    // Copied: a slice of a long line would keep all of it alive until the next report.
    garbage.last = line.length > 200 ? `${Buffer.from(line.slice(0, 200)).toString()}…` : line.trim()
    const now = Date.now()
    if (now - garbage.reportedAt >= garbageReportMillis) {
      garbage.reportedAt = now
      this.reportGarbage()
    }
  }

  private reportGarbage() {
    if (this.garbage.count === 0) return
    this.events.garbage(this.garbage.count, this.garbage.last)
    this.garbage.count = 0
  }

  private readonly onStreamError = (error: Error) => this.onerror?.(error)

  /**
   * The server's output ended. Requests whose write is still in progress learn its outcome first
   * — a write into a pipe nobody reads fails as `NotDelivered` — and only then is the close
   * reported, which fails the requests that were delivered as closed (their fate unknown).
   */
  private readonly onClosed = () => {
    if (this.closed) return
    this.closed = true
    this.input.off("data", this.onData)
    this.reportGarbage()
    if (this.writing === 0) return this.onclose?.()
    this.afterWrites = () => {
      this.afterWrites = undefined
      this.onclose?.()
    }
  }
}
