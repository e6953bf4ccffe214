/**
 * An MCP SDK `Transport` over the pipes of a process that `ServerProcess` spawned, so the core
 * owns the process (its group, its stderr, its shutdown) and the SDK only speaks JSON-RPC.
 * Unlike the SDK's own stdio transport, a line that is not JSON-RPC (a banner, a stray
 * `console.log`) is reported and skipped instead of breaking the session.
 */
import type * as NodeStream from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCResultResponse
} from "@modelcontextprotocol/sdk/types.js"

/** Longest line kept while waiting for its end; a server that floods without newlines is cut off. */
const maxLine = 16 * 1024 * 1024

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

export class PipeTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: ((message: JSONRPCMessage) => void) | undefined

  private buffer = ""
  private closed = false
  /** The lines sent during this tick, and the promise of their write. */
  private batch: { readonly lines: Array<string>; readonly written: Promise<void> } | undefined
  /** Writes handed to the pipe and not yet confirmed. */
  private writing = 0
  /** Set while a close waits for the writes in progress to settle. */
  private afterWrites: (() => void) | undefined

  private readonly input: NodeStream.Readable
  private readonly output: NodeStream.Writable
  /** Told about each line that is not a JSON-RPC message. */
  private readonly onGarbage: (line: string) => void

  constructor(input: NodeStream.Readable, output: NodeStream.Writable, onGarbage: (line: string) => void) {
    this.input = input
    this.output = output
    this.onGarbage = onGarbage
  }

  async start(): Promise<void> {
    this.input.setEncoding("utf8")
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

  private readonly onData = (chunk: string) => {
    this.buffer += chunk
    let end = this.buffer.indexOf("\n")
    while (end >= 0) {
      const line = this.buffer.slice(0, end > 0 && this.buffer[end - 1] === "\r" ? end - 1 : end)
      this.buffer = this.buffer.slice(end + 1)
      this.deliver(line)
      end = this.buffer.indexOf("\n")
    }
    if (this.buffer.length > maxLine) {
      this.onGarbage(this.buffer.slice(0, 200))
      this.buffer = ""
    }
  }

  private deliver(line: string) {
    if (line.trim() === "") return
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      return this.onGarbage(line)
    }
    if (isPlainResult(parsed)) return this.onmessage?.(parsed)
    const message = JSONRPCMessageSchema.safeParse(parsed)
    if (!message.success) return this.onGarbage(line)
    this.onmessage?.(message.data)
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
    if (this.writing === 0) return this.onclose?.()
    this.afterWrites = () => {
      this.afterWrites = undefined
      this.onclose?.()
    }
  }
}
