/**
 * The stdio transport of an MCP server this process runs: the gateway's `serve` without `--http`.
 * The SDK's `StdioServerTransport` closes for good on a line past 10 MiB — the process then lives
 * on, reading nothing and answering nothing, while its client waits — and leaves a malformed
 * request unanswered. This one reads its client as a toolset reads its server (`PipeTransport`):
 * a message past `RawMessage.maxBytes` or nested too deep is refused, and answered with an error
 * when it is a request; a line that is not JSON-RPC is counted and logged; the lines after either
 * are read as usual.
 *
 * A client that closes stdin has said all it will ask, not that it wants no answers (`cat
 * requests | toolvisor serve`, a host shutting down): the session reads a copy of `input` that
 * does not end with it, so the answers still owed are written (`answered` says when they all
 * are), and a server that stops first answers each with an error (`abandon`).
 */
import * as NodeStream from "node:stream"
import type { Transport as SdkTransport } from "@modelcontextprotocol/sdk/shared/transport.js"
import * as Effect from "effect/Effect"
import { PipeTransport } from "./internal/pipeTransport.ts"

/** The transport of a server on stdio, and what it owes its client. */
export interface Transport extends SdkTransport {
  /** Resolves once every request the client sent is answered (or cancelled by it). */
  readonly answered: () => Promise<void>
  /** Answers every request still open with an error saying `message` (each is answered once); resolves once written. */
  readonly abandon: (message: string) => Promise<void>
}

/**
 * A transport reading the client's messages from `input` (stdin) and writing ours to `output`
 * (stdout); what it refuses or skips is logged as a warning in the current context.
 */
export const make = (
  input: NodeStream.Readable = process.stdin,
  output: NodeStream.Writable = process.stdout
): Effect.Effect<Transport> =>
  Effect.map(Effect.context<never>(), (context) => {
    const warn = (message: string) => Effect.runForkWith(context)(Effect.logWarning(message))
    const reading = input.pipe(new NodeStream.PassThrough(), { end: false })
    return new PipeTransport(reading, output, PipeTransport.warnings(warn, { stream: "stdin", from: "the client" }))
  })
