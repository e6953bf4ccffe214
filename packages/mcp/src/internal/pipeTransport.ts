/**
 * An MCP SDK `Transport` over the pipes of a process that `ServerProcess` spawned, so the core
 * owns the process (its group, its stderr, its shutdown) and the SDK only speaks JSON-RPC.
 * Unlike the SDK's own stdio transport, a line that is not JSON-RPC (a banner, a stray
 * `console.log`) is counted and skipped instead of breaking the session, and a line too long to
 * keep or nested too deep to parse safely fails the request it answers at once, as a
 * `RawMessage.Refused`, while the lines after it are read as usual.
 */
import type * as NodeStream from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCResultResponse
} from "@modelcontextprotocol/sdk/types.js"
import { JsonLimits, RawMessage } from "@toolvisor/core"

/** Longest line kept; the bytes of a longer one are scanned for its id as they pass, and dropped. */
export const maxLine = RawMessage.maxBytes

/** How often, at most, lines that are not JSON-RPC are reported: a flood is one warning, with its count. */
const garbageReportMillis = 10_000

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

/** What the transport tells its owner about the server's output, for the log. */
export interface Events {
  /**
   * Lines that are not JSON-RPC: the first at once, then at most one report per 10 s, and one at
   * the end, each with how many came since the last and the last of them.
   */
  readonly garbage: (count: number, last: string) => void
  /** A message refused for its size or depth that answers no request of ours (no id, or a request from the server). */
  readonly dropped: (refused: RawMessage.Refused) => void
}

export class PipeTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: ((message: JSONRPCMessage) => void) | undefined

  /** The pieces of the line being read, and their length. */
  private pending: Array<Buffer> = []
  private pendingBytes = 0
  /** Set while a line longer than `maxLine` passes: scanned for its id, not kept. */
  private oversized: { readonly scan: RawMessage.Scan; bytes: number } | undefined
  /** Lines that are not JSON-RPC since the last report, the last of them, and when that report was. */
  private garbage = { count: 0, last: "", reportedAt: Number.NEGATIVE_INFINITY }
  private closed = false
  /** The lines sent during this tick, and the promise of their write. */
  private batch: { readonly lines: Array<string>; readonly written: Promise<void> } | undefined
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
   * Messages are written once per tick, all those sent during it in one write: with many calls
   * in flight, the answers that arrive in one read are followed by one write of the next requests
   * instead of one system call (and one wake-up of the server) each. Order is kept, and a lone
   * request is written before any I/O is polled, so it waits for nothing.
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.output.writable) return Promise.reject(new NotDelivered())
    const line = `${JSON.stringify(message)}\n`
    if (this.batch === undefined) this.batch = this.startBatch()
    this.batch.lines.push(line)
    return this.batch.written
  }

  private startBatch() {
    const lines: Array<string> = []
    const written = new Promise<void>((resolve, reject) => {
      process.nextTick(() => {
        this.batch = undefined
        if (this.closed) return reject(new NotDelivered())
        this.writing += 1
        this.output.write(lines.join(""), (error) => {
          this.writing -= 1
          if (error) reject(new NotDelivered(error))
          else resolve()
          // After the rejection has reached the request (a microtask away), not before it.
          if (this.writing === 0 && this.afterWrites !== undefined) setImmediate(this.afterWrites)
        })
      })
    })
    return { lines, written }
  }

  async close(): Promise<void> {
    this.onClosed()
  }

  /**
   * Each chunk is searched for line ends once; a line split between chunks is kept as its pieces
   * and joined once, when it ends, so a long line costs its length and not its length squared.
   */
  private readonly onData = (chunk: Buffer) => {
    let start = 0
    for (let end = chunk.indexOf(10); end >= 0; end = chunk.indexOf(10, start)) {
      if (this.pendingBytes === 0 && this.oversized === undefined && end - start <= maxLine) {
        this.deliver(chunk.subarray(start, end))
      } else {
        this.append(chunk.subarray(start, end))
        this.endLine()
      }
      start = end + 1
    }
    if (start < chunk.length) this.append(chunk.subarray(start))
  }

  private append(piece: Buffer) {
    if (this.oversized === undefined && this.pendingBytes + piece.length > maxLine) {
      this.oversized = { scan: new RawMessage.Scan(), bytes: this.pendingBytes }
      for (const part of this.pending) this.oversized.scan.feed(part)
      this.pending = []
      this.pendingBytes = 0
    }
    if (this.oversized === undefined) {
      this.pending.push(piece)
      this.pendingBytes += piece.length
    } else {
      this.oversized.scan.feed(piece)
      this.oversized.bytes += piece.length
    }
  }

  private endLine() {
    const oversized = this.oversized
    if (oversized !== undefined) {
      this.oversized = undefined
      return this.refuse(oversized.scan.found(), new RawMessage.Refused(oversized.bytes, false))
    }
    const line = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes)
    this.pending = []
    this.pendingBytes = 0
    this.deliver(line)
  }

  private deliver(bytes: Buffer) {
    const line = bytes.toString("utf8").trim()
    if (line === "") return
    // Only an object can be a message; anything else is skipped without parsing it.
    if (!line.startsWith("{")) return this.skip(bytes)
    if (JsonLimits.textDepth(line, JsonLimits.maxDepth) > JsonLimits.maxDepth) {
      return this.refuse(RawMessage.scan(bytes), new RawMessage.Refused(bytes.length, true))
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      return this.skip(bytes)
    }
    if (isPlainResult(parsed)) return this.onmessage?.(parsed)
    const message = JSONRPCMessageSchema.safeParse(parsed)
    if (!message.success) return this.skip(bytes)
    this.onmessage?.(message.data)
  }

  /** A refused answer fails the request it answers, through the SDK's own path for an error answer. */
  private refuse(found: RawMessage.Found, refused: RawMessage.Refused) {
    const answer = RawMessage.errorAnswer(found, refused)
    if (answer === undefined) this.events.dropped(refused)
    else this.onmessage?.(answer)
  }

  private skip(bytes: Buffer) {
    const garbage = this.garbage
    garbage.count += 1
    // Decoded afresh: a slice of the line would keep the whole line alive until the next report.
    const last = bytes.toString("utf8", 0, Math.min(bytes.length, 200)).trim()
    garbage.last = bytes.length > 200 ? `${last}…` : last
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
