/**
 * The gateway's `instructions`, in its answer to each `initialize`: what each toolset's server
 * says about its tools, with the toolset's configured `instruction`, and how to find deferred
 * tools — what the agent adapters put in the system prompt, and what a host such as Claude Code
 * puts in the model's context. The SDK fixes a server's instructions when it is made, before any
 * toolset has connected, so they are read when the answer leaves instead, and MCP has no way to
 * tell a client of instructions that came later: a session opened at start-up (a host spawning
 * `serve` over stdio initializes at once) waits for the toolsets to settle, up to `settleWait`, and
 * hears what is known by then.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { isInitializeRequest, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js"
import * as Duration from "effect/Duration"

/**
 * How long an `initialize` answer waits for toolsets still starting. Most servers are up within a
 * second or two; a slow one (an `npx` install) is not worth a host's initialize timeout, and its
 * tools still reach the client (`tools/list` waits, and `list_changed` follows).
 */
export const settleWait = Duration.seconds(5)

/** Makes `server` answer every `initialize` with `instructions()` (nothing when it is empty). */
export const attach = (server: Server, instructions: () => Promise<string>): void => {
  const connect = server.connect.bind(server)
  server.connect = async (transport: Transport) => {
    await connect(transport)
    const initializing = new Set<RequestId>()
    // From an initialize on until its answer is written, what else leaves waits for that answer
    // (answers to requests a client sent at once, the log lines telling it what they wait for):
    // the client hears nothing before it.
    let answered: Promise<void> | undefined
    let open = () => {}
    const receive = transport.onmessage
    transport.onmessage = (message, extra) => {
      // Checked by method first: every message passes here, and most are calls.
      if ("method" in message && message.method === "initialize" && "id" in message && isInitializeRequest(message)) {
        initializing.add(message.id)
        answered ??= new Promise<void>((resolve) => {
          open = resolve
        })
      }
      receive?.(message, extra)
    }
    const send = transport.send.bind(transport)
    // Every message of the session leaves here: only an initialize's answer, and what follows it, wait.
    transport.send = (message, options) => {
      if ("result" in message && initializing.delete(message.id)) {
        return withInstructions(message, instructions)
          .then((answer) => send(answer, options))
          .finally(() => {
            answered = undefined
            open()
          })
      }
      return answered === undefined ? send(message, options) : answered.then(() => send(message, options))
    }
  }
}

const withInstructions = async (
  answer: JSONRPCMessage & { readonly result: { readonly [key: string]: unknown } },
  instructions: () => Promise<string>
): Promise<JSONRPCMessage> => {
  const text = await instructions().catch(() => "")
  return text === "" ? answer : { ...answer, result: { ...answer.result, instructions: text } }
}
