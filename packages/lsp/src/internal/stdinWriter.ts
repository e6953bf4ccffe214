/**
 * Writes JSON-RPC messages to a language server's stdin: header and body in one `write`, at the
 * moment the message is sent. vscode-jsonrpc's own stream writer encodes through a promise, then
 * queues behind a semaphore that resumes on `setImmediate`, and writes header and body apart: a
 * request reached the server only after the caller had finished everything else in that turn of
 * the event loop, and cost two system calls. Here the server starts on it while the caller
 * finishes. Node keeps the order of `write` calls, so messages still go out in send order.
 * Each request's id is noted as awaiting an answer, for `StdoutReader` to pass only the first.
 */
import type * as NodeStream from "node:stream"
import * as Rpc from "vscode-jsonrpc/node"
import type * as StdoutReader from "./stdoutReader.ts"

export class StdinWriter extends Rpc.AbstractMessageWriter implements Rpc.MessageWriter {
  readonly #stream: NodeStream.Writable
  readonly #awaiting: Set<StdoutReader.RequestId>
  #errors = 0

  constructor(stream: NodeStream.Writable, awaiting: Set<StdoutReader.RequestId>) {
    super()
    this.#stream = stream
    this.#awaiting = awaiting
    // A listener for 'error' also keeps a broken pipe (EPIPE) from being an uncaught exception.
    stream.on("error", (error) => this.fireError(error))
    stream.on("close", () => this.fireClose())
  }

  /** Resolves once the message is handed to the operating system (or buffered behind earlier ones). */
  write(message: Rpc.Message): Promise<void> {
    const body = JSON.stringify(message)
    const frame = `Content-Length: ${Buffer.byteLength(body, "utf8")}\r\n\r\n${body}`
    if (Rpc.Message.isRequest(message)) this.#awaiting.add(message.id)
    return new Promise((resolve, reject) => {
      this.#stream.write(frame, "utf8", (error) => {
        if (error === undefined || error === null) return resolve()
        this.#errors += 1
        this.fireError(error, message, this.#errors)
        reject(error)
      })
    })
  }

  end(): void {
    this.#stream.end()
  }
}

/** A writer for `stream`, to pass to `createMessageConnection`; the ids of its requests go to `awaiting`. */
export const make = (stream: NodeStream.Writable, awaiting: Set<StdoutReader.RequestId>): Rpc.MessageWriter =>
  new StdinWriter(stream, awaiting)
