/**
 * The stdio transport of an MCP server this process runs: the gateway's `serve` without `--http`.
 * The SDK's `StdioServerTransport` closes for good on a line past 10 MiB — the process then lives
 * on, reading nothing and answering nothing, while its client waits — and leaves a malformed
 * request unanswered. This one reads its client as a toolset reads its server (`PipeTransport`):
 * a message past `RawMessage.maxBytes` or nested too deep is refused, and answered with an error
 * when it is a request; a line that is not JSON-RPC is counted and logged; the lines after either
 * are read as usual.
 */
import type * as NodeStream from "node:stream"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import * as Effect from "effect/Effect"
import { PipeTransport } from "./internal/pipeTransport.ts"

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
    return new PipeTransport(input, output, PipeTransport.warnings(warn, { stream: "stdin", from: "the client" }))
  })
