/**
 * Reads JSON-RPC messages from a language server's stdout in LSP's framing (`Content-Length`
 * headers, a blank line, the body), with the bounds vscode-jsonrpc's own reader lacks: it buffers
 * whatever length a header announces, and searches its whole buffer for the end of the headers at
 * every chunk. Here the headers of a message take at most 8 KiB, or the connection ends (the
 * stream can no longer be followed); a body longer than `RawMessage.maxBytes` is scanned for its
 * id as it passes and never kept, and the request it answers fails at once, as does one whose body
 * nests deeper than `JsonLimits.maxDepth`. The body's own framing keeps the stream in step.
 *
 * An answer passes only to a request still awaiting one, the first time: vscode-jsonrpc queues
 * what it reads by id before it handles it, so of two answers to one request read together it
 * would keep the second.
 */
import type * as NodeStream from "node:stream"
import { RawMessage } from "@toolvisor/core"
import * as Predicate from "effect/Predicate"
import * as Rpc from "vscode-jsonrpc/node"

/** Longest header block: a real one is a line or two. */
const maxHeaderBytes = 8 * 1024

/**
 * Longest body skipped, sixteen times the longest kept: an answer past the limit (a big
 * workspace's symbols) is skipped and fails only its call, but a length past this is no answer,
 * it is a broken stream. Skipped, `Content-Length: 99999999999` swallowed everything the server
 * said after it, and every call timed out until the health checks gave up on the session.
 */
export const maxSkipBytes = 16 * RawMessage.maxBytes

const headerEnd = Buffer.from("\r\n\r\n")

/** Where the reader is in the stream: reading headers, a body it keeps, or a body it only scans. */
type Phase =
  | { readonly _tag: "Headers" }
  | { readonly _tag: "Body"; readonly length: number }
  | { readonly _tag: "Skip"; readonly length: number; left: number; readonly scan: RawMessage.Scan }

const headers: Phase = { _tag: "Headers" }

/** The announced body length, from headers as LSP writes them (names are case-insensitive). */
const contentLength = (block: string): number | undefined => {
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":")
    if (colon < 0 || line.slice(0, colon).trim().toLowerCase() !== "content-length") continue
    const value = line.slice(colon + 1).trim()
    return /^\d{1,15}$/.test(value) ? Number(value) : undefined
  }
  return undefined
}

const isMessage = (value: unknown): value is Rpc.Message =>
  Predicate.hasProperty(value, "jsonrpc") && value.jsonrpc === "2.0"

/**
 * What may wait in the connection, handed over and not yet handled: vscode-jsonrpc queues each
 * message and handles one per turn of the event loop, while a read can hand it dozens; a server
 * publishing diagnostics as fast as it can grew this process past 900 MB, its calls starved
 * behind the queue. Past either bound the server's stdout is paused, and it waits in the pipe.
 */
export const maxQueued = { messages: 256, bytes: 32 * 1024 * 1024 }

/** The id of a request of ours, as the writer sent it. */
export type RequestId = Rpc.RequestMessage["id"]

export class StdoutReader extends Rpc.AbstractMessageReader implements Rpc.MessageReader {
  readonly #stream: NodeStream.Readable
  /** The requests awaiting an answer: the writer adds each it sends, the reader takes each answered. */
  readonly #awaiting: Set<RequestId>
  #phase: Phase = headers
  /** The header bytes, or the body bytes, read so far of the current message. */
  #pending: Array<Buffer> = []
  #pendingBytes = 0
  #callback: Rpc.DataCallback | undefined
  #broken: string | undefined
  /** The sizes of the messages handed to the connection and not yet handled, oldest first. */
  #queued: Array<number> = []
  #queuedBytes = 0
  /** Set while the server's stdout is paused for the queue, with a check that nothing is stuck. */
  #paused: NodeJS.Timeout | undefined
  #handledSincePause = false

  constructor(stream: NodeStream.Readable, awaiting: Set<RequestId>) {
    super()
    this.#stream = stream
    this.#awaiting = awaiting
  }

  /** Why the stream cannot be followed any more, once it cannot: nothing more is read. */
  get broken(): string | undefined {
    return this.#broken
  }

  listen(callback: Rpc.DataCallback): Rpc.Disposable {
    this.#callback = callback
    this.#stream.on("data", this.#onData)
    this.#stream.on("error", this.#onError)
    this.#stream.once("close", this.#onClose)
    return Rpc.Disposable.create(() => this.#stop())
  }

  /** The connection disposes the reader, not what `listen` returned: either stops the reading. */
  override dispose(): void {
    this.#stop()
    super.dispose()
  }

  readonly #onError = (error: Error) => this.fireError(error)

  readonly #onClose = () => this.fireClose()

  /**
   * What the connection runs each message through (`ConnectionOptions.messageStrategy`): it counts
   * the message handled, and reading resumes once the queue is down to half its bounds.
   */
  readonly strategy: Rpc.MessageStrategy = {
    handleMessage: (message, next) => {
      this.#queuedBytes -= this.#queued.shift() ?? 0
      this.#handledSincePause = true
      if (this.#paused !== undefined && this.#below(2)) this.#resume()
      return next(message)
    }
  }

  #below(divisor: number) {
    return this.#queued.length <= maxQueued.messages / divisor && this.#queuedBytes <= maxQueued.bytes / divisor
  }

  #pause() {
    this.#stream.pause()
    this.#handledSincePause = false
    // A message the connection drops unhandled (a cancelled request of the server's) is never
    // counted off: a second in which nothing is handled means the queue is empty, whatever we count.
    this.#paused = setInterval(() => {
      if (this.#handledSincePause) this.#handledSincePause = false
      else {
        this.#queued = []
        this.#queuedBytes = 0
        this.#resume()
      }
    }, 1000)
  }

  #resume() {
    clearInterval(this.#paused)
    this.#paused = undefined
    this.#stream.resume()
  }

  #stop() {
    if (this.#paused !== undefined) this.#resume()
    this.#stream.off("data", this.#onData)
    this.#stream.off("error", this.#onError)
    this.#stream.off("close", this.#onClose)
  }

  readonly #onData = (chunk: Buffer) => {
    let offset = 0
    while (offset < chunk.length && this.#broken === undefined) {
      const phase = this.#phase
      offset =
        phase._tag === "Headers"
          ? this.#readHeaders(chunk, offset)
          : phase._tag === "Body"
            ? this.#readBody(phase, chunk, offset)
            : this.#skip(phase, chunk, offset)
    }
  }

  /**
   * Looks for the end of the headers in what is pending plus this chunk, never more than
   * `maxHeaderBytes` of it, so a server that sends no blank line costs a bounded search per chunk.
   */
  #readHeaders(chunk: Buffer, offset: number): number {
    const room = maxHeaderBytes + headerEnd.length - this.#pendingBytes
    const taken = chunk.subarray(offset, offset + room)
    const block = this.#pendingBytes === 0 ? taken : Buffer.concat([...this.#pending, taken])
    const end = block.indexOf(headerEnd)
    if (end < 0) {
      if (block.length >= maxHeaderBytes + headerEnd.length) {
        this.#lose(`the server sent ${maxHeaderBytes} bytes of headers without an end`)
        return chunk.length
      }
      this.#pending = [Buffer.from(block)]
      this.#pendingBytes = block.length
      return offset + taken.length
    }
    const consumed = end + headerEnd.length - this.#pendingBytes
    this.#pending = []
    this.#pendingBytes = 0
    const length = contentLength(block.toString("ascii", 0, end))
    if (length === undefined) {
      this.#lose("the server sent headers without a valid Content-Length")
      return chunk.length
    }
    if (length > maxSkipBytes) {
      this.#lose(
        `the server sent a Content-Length of ${length} bytes, past the ${maxSkipBytes / 2 ** 20} MiB it would skip`
      )
      return chunk.length
    }
    this.#phase =
      length > RawMessage.maxBytes
        ? { _tag: "Skip", length, left: length, scan: new RawMessage.Scan() }
        : { _tag: "Body", length }
    if (length === 0) this.#bodyRead(Buffer.alloc(0))
    return offset + consumed
  }

  #readBody(phase: Extract<Phase, { _tag: "Body" }>, chunk: Buffer, offset: number): number {
    const taken = chunk.subarray(offset, offset + phase.length - this.#pendingBytes)
    this.#pending.push(taken)
    this.#pendingBytes += taken.length
    if (this.#pendingBytes === phase.length) {
      const body = this.#pending.length === 1 ? taken : Buffer.concat(this.#pending, this.#pendingBytes)
      this.#pending = []
      this.#pendingBytes = 0
      this.#bodyRead(body)
    }
    return offset + taken.length
  }

  #skip(phase: Extract<Phase, { _tag: "Skip" }>, chunk: Buffer, offset: number): number {
    const end = Math.min(chunk.length, offset + phase.left)
    phase.scan.feed(chunk, offset, end)
    phase.left -= end - offset
    if (phase.left === 0) {
      this.#phase = headers
      this.#refuse(phase.scan.found(), new RawMessage.Refused(phase.length, false))
    }
    return end
  }

  #bodyRead(body: Buffer) {
    this.#phase = headers
    const text = body.toString("utf8")
    if (RawMessage.isTooDeep(text)) {
      return this.#refuse(RawMessage.scan(body), new RawMessage.Refused(body.length, true))
    }
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      return this.fireError(new Error(`the server sent a message that is not JSON: ${text.slice(0, 100)}`))
    }
    if (!isMessage(message))
      return this.fireError(new Error(`the server sent JSON that is not JSON-RPC: ${text.slice(0, 100)}`))
    this.#deliver(message, body.length)
  }

  /** A refused answer fails the request it answers; any other refused message is reported. */
  #refuse(found: RawMessage.Found, refused: RawMessage.Refused) {
    const answer = RawMessage.errorAnswer(found, refused)
    if (answer === undefined) this.fireError(new Error(`dropped a message from the server: it is ${refused.message}`))
    else this.#deliver(answer)
  }

  /** Passes `message` (of `bytes`) on, unless it answers a request that awaits no answer (any more). */
  #deliver(message: Rpc.Message, bytes = 0) {
    if (Rpc.Message.isResponse(message) && message.id !== null && !this.#awaiting.delete(message.id)) {
      return this.fireError(
        new Error(
          `dropped an answer to request ${message.id}: no request of ours awaits one (answered already, or never sent)`
        )
      )
    }
    // A cancellation is acted on as it arrives, and may never be queued: not counted.
    if (!(Rpc.Message.isNotification(message) && message.method === "$/cancelRequest")) {
      this.#queued.push(bytes)
      this.#queuedBytes += bytes
    }
    this.#callback?.(message)
    if (this.#paused === undefined && !this.#below(1)) this.#pause()
  }

  /** The stream cannot be followed any more: reported, and the connection ends as if it had closed. */
  #lose(why: string) {
    this.#broken = why
    this.#stop()
    this.#pending = []
    this.#pendingBytes = 0
    this.fireError(new Error(why))
    this.fireClose()
  }
}

/**
 * A reader over `stream` (a language server's stdout), passing answers only to the requests in
 * `awaiting` (which `StdinWriter` fills).
 */
export const make = (stream: NodeStream.Readable, awaiting: Set<RequestId>): StdoutReader =>
  new StdoutReader(stream, awaiting)
