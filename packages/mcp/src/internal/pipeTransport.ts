/**
 * An MCP SDK `Transport` over the pipes of a process that `ServerProcess` spawned, so the core
 * owns the process (its group, its stderr, its shutdown) and the SDK only speaks JSON-RPC.
 * Unlike the SDK's own stdio transport, a line that is not JSON-RPC (a banner, a stray
 * `console.log`) is reported and skipped instead of breaking the session.
 */
import type * as NodeStream from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"

/** Longest line kept while waiting for its end; a server that floods without newlines is cut off. */
const maxLine = 16 * 1024 * 1024

export class PipeTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: ((message: JSONRPCMessage) => void) | undefined

  private buffer = ""
  private closed = false

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

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.output.writable) throw new Error("MCP server stdin is closed (broken pipe)")
    const line = `${JSON.stringify(message)}\n`
    await new Promise<void>((resolve, reject) => {
      this.output.write(line, (error) => (error ? reject(error) : resolve()))
    })
  }

  async close(): Promise<void> {
    this.onClosed()
  }

  private readonly onData = (chunk: string) => {
    this.buffer += chunk
    let end = this.buffer.indexOf("\n")
    while (end >= 0) {
      const line = this.buffer.slice(0, end).replace(/\r$/, "")
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
    const message = JSONRPCMessageSchema.safeParse(parsed)
    if (!message.success) return this.onGarbage(line)
    this.onmessage?.(message.data)
  }

  private readonly onStreamError = (error: Error) => this.onerror?.(error)

  private readonly onClosed = () => {
    if (this.closed) return
    this.closed = true
    this.input.off("data", this.onData)
    this.onclose?.()
  }
}
