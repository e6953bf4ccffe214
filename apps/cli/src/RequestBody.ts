/**
 * The body of a POST to the gateway (`/mcp`, `/messages`), read and parsed before any session is
 * touched, and handed to the SDK's transport already parsed. So a client that sends its headers
 * and never its body holds no place in the session table (only a parsed `initialize` asks for
 * one), and the limits are the gateway's own: at most `maxBytes`, and no empty batch. A body
 * refused before it was read whole is answered with `Connection: close`: what is left of it would
 * otherwise be read as the next request on the connection. `/messages` takes one JSON-RPC message
 * and no batch, so its body is checked as one here, as `/mcp`'s transport checks its own.
 */
import type * as NodeHttp from "node:http"
import { isInitializeRequest, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"

/** The SDK's own bound on a request body. */
export const maxBytes = 4 * 1024 * 1024

/** A parsed body, or `undefined` once the request has been answered with why not. */
export const read = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse): Effect.Effect<unknown> =>
  Effect.flatMap(text(req), (read) => {
    if (read === tooLarge) {
      return refuse(res, 413, -32000, `Payload Too Large: Request body must not exceed ${maxBytes} bytes`, true)
    }
    if (read === gone) return Effect.undefined
    let body: unknown
    try {
      body = JSON.parse(read)
    } catch {
      return refuse(res, 400, -32700, "Parse error: Invalid JSON")
    }
    return Array.isArray(body) && body.length === 0
      ? refuse(res, 400, -32600, "Invalid Request: an empty batch")
      : Effect.succeed(body)
  })

/**
 * A parsed body that is one JSON-RPC message, or `undefined` once the request has been answered
 * with why not, in the words and code `/mcp`'s transport uses. The legacy SSE transport answers a
 * body it cannot take by quoting it (`Invalid message: ${body}`), and quoting an array nested
 * 100 000 deep overflows the stack: checked here first, it never sees one. A message nested deep
 * inside is still one (its arguments meet the gateway's own depth limit, as on `/mcp`).
 */
export const readMessage = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse): Effect.Effect<unknown> =>
  Effect.flatMap(read(req, res), (body) =>
    body === undefined || isMessage(body)
      ? Effect.succeed(body)
      : refuse(res, 400, -32700, "Parse error: Invalid JSON-RPC message")
  )

/**
 * Checked with the schema the SDK's transports use, inside a `try` as theirs is: a value that
 * overflows the validator throws a `RangeError` rather than failing as a Zod issue would.
 */
const isMessage = (body: unknown): boolean => {
  try {
    JSONRPCMessageSchema.parse(body)
    return true
  } catch {
    return false
  }
}

/** Whether the body opens a session: an `initialize`, alone or in a batch. */
export const isInitialize = (body: unknown): boolean =>
  Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body)

const tooLarge = Symbol("tooLarge")
const gone = Symbol("gone")

/** The body's text; `tooLarge` past `maxBytes` (then it is not read on); `gone` when the client went mid-body. */
const text = (req: NodeHttp.IncomingMessage): Effect.Effect<string | typeof tooLarge | typeof gone> =>
  Effect.callback<string | typeof tooLarge | typeof gone>((resume) => {
    if (Number(req.headers["content-length"]) > maxBytes) return resume(Effect.succeed(tooLarge))
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      stop()
      resume(Effect.succeed(tooLarge))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    // A request cut off mid-body: nobody is left to answer.
    const onGone = () => {
      stop()
      resume(Effect.succeed(gone))
    }
    const stop = () => {
      req.off("data", onData).off("end", onEnd).off("close", onGone).off("error", onGone)
      req.pause()
    }
    req.on("data", onData).on("end", onEnd).on("close", onGone).on("error", onGone)
    return Effect.sync(stop)
  })

const refuse = (
  res: NodeHttp.ServerResponse,
  status: number,
  code: number,
  message: string,
  closeConnection = false
): Effect.Effect<undefined> =>
  Effect.sync(() => {
    if (!res.headersSent) {
      res.writeHead(status, {
        "content-type": "application/json",
        ...(closeConnection ? { connection: "close" } : {})
      })
    }
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
    return undefined
  })
