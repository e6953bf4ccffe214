/**
 * What a server's stderr costs this process, bounded whatever the server writes: the last lines,
 * each masked and then cut short, for error messages; and a read rate, past which stderr is left
 * unread for the rest of the second. A server that floods stderr then blocks on its own writes
 * instead of costing this process a core to read bytes the tail throws away (1 GB/s of stderr took
 * a third of a core just to read). Real servers log far below the rate.
 */
import type * as NodeStream from "node:stream"
import * as Redaction from "../Redaction.ts"

/** Longest line shown, in bytes: the rest of a longer line is counted, not shown. */
export const maxLineBytes = 1_000

/**
 * What is kept of a line past `maxLineBytes`, to mask before cutting: a secret or credential the
 * cut falls in is masked whole when it ends within this margin, and by its beginning when it is
 * longer (`Redactor.truncated`), so no part of it shows before the cut. Masking after the cut would
 * leave all but the last bytes of such a secret in clear.
 */
const maskMarginBytes = 256

/** What is kept of a line, in bytes. */
const keptLineBytes = maxLineBytes + maskMarginBytes

/** A line as read: its kept text, unmasked, and how many of its bytes were not kept. */
interface Line {
  readonly text: string
  readonly dropped: number
}

/** Most stderr read in a second. */
export const readBytesPerSecond = 8 * 1024 * 1024

/**
 * The last `size` lines of a stderr stream, each masked by `redactor` and then cut at
 * `maxLineBytes`. Lines are masked when they are read out, so a secret the redactor learns later
 * (an `envFile` value) is masked in lines written before. A server that floods stderr, or writes
 * one endless line, costs a few kilobytes: each chunk is searched for newlines once, and only the
 * kept part of a line is copied and decoded (whole, so a character split between chunks survives).
 */
export class Tail {
  private readonly complete: Array<Line> = []
  private readonly partial: Array<Buffer> = []
  private partialBytes = 0
  private droppedBytes = 0
  private readonly size: number
  private stream: NodeStream.Readable | undefined
  /** The bytes read in the second that began `since`. */
  private used = 0
  private since = 0
  /** Ends a pause. */
  private resume: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private readonly redactor: Redaction.Redactor

  constructor(size: number, redactor: Redaction.Redactor = Redaction.none) {
    this.size = size
    this.redactor = redactor
  }

  /** Reads `stream` into the tail, at most `readBytesPerSecond`. */
  read(stream: NodeStream.Readable): void {
    this.stream = stream
    stream.on("data", (chunk: Buffer) => {
      this.push(chunk)
      this.spend(chunk.length)
    })
  }

  /**
   * Ends any pause and reads on without a limit: called once the process is gone, so that what is
   * left in the pipe is read, the pipe closes, and no timer is left behind.
   */
  stop(): void {
    this.stopped = true
    clearTimeout(this.resume)
    this.stream?.resume()
  }

  /** The last lines, oldest first, the line being written included: masked, then cut. */
  readonly lines = (): ReadonlyArray<string> =>
    (this.partialBytes === 0 && this.droppedBytes === 0
      ? this.complete
      : [...this.complete, this.line()].slice(-this.size)
    ).map((line) => this.shown(line))

  private push(chunk: Buffer): void {
    let start = 0
    for (let end = chunk.indexOf(10); end >= 0; end = chunk.indexOf(10, start)) {
      this.keep(chunk, start, end)
      this.complete.push(this.line())
      if (this.complete.length > this.size) this.complete.shift()
      this.partial.length = 0
      this.partialBytes = 0
      this.droppedBytes = 0
      start = end + 1
    }
    this.keep(chunk, start, chunk.length)
  }

  private spend(bytes: number): void {
    const now = Date.now()
    if (now - this.since >= 1_000) {
      this.since = now
      this.used = 0
    }
    this.used += bytes
    const stream = this.stream
    if (this.used < readBytesPerSecond || this.stopped || stream === undefined) return
    stream.pause()
    this.resume = setTimeout(
      () => {
        this.resume = undefined
        stream.resume()
      },
      this.since + 1_000 - now
    )
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    const kept = Math.max(0, Math.min(end - start, keptLineBytes - this.partialBytes))
    // A copy: a view would hold on to the whole chunk.
    if (kept > 0) this.partial.push(Buffer.from(chunk.subarray(start, start + kept)))
    this.partialBytes += kept
    this.droppedBytes += end - start - kept
  }

  private line(): Line {
    const text = Buffer.concat(this.partial, this.partialBytes).toString("utf8")
    return { text: this.droppedBytes === 0 ? text.replace(/\r$/, "") : text, dropped: this.droppedBytes }
  }

  /** A line masked, then cut at `maxLineBytes`, with what was not shown of it counted. */
  private shown(line: Line): string {
    const masked = line.dropped === 0 ? this.redactor.text(line.text) : this.redactor.truncated(line.text)
    const bytes = Buffer.byteLength(masked)
    if (line.dropped === 0 && bytes <= maxLineBytes) return masked
    const kept = cut(masked, maxLineBytes)
    return `${kept}… (${line.dropped + bytes - Buffer.byteLength(kept)} more bytes)`
  }
}

/** The longest beginning of `text` of at most `bytes` bytes that ends between two characters. */
const cut = (text: string, bytes: number): string => {
  const encoded = Buffer.from(text, "utf8")
  if (encoded.length <= bytes) return text
  let end = bytes
  // A continuation byte (10xxxxxx) is the middle of a character.
  while (end > 0 && ((encoded[end] ?? 0) & 0xc0) === 0x80) end--
  return encoded.subarray(0, end).toString("utf8")
}
