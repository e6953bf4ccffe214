/**
 * The call lane's frames (see `LaneServer`): one JSON object per line, each at most 16 MiB, as
 * the cluster's own messages (`Wire`). A client numbers its calls per connection (`i`); a
 * runner's answer carries the number of the call it answers.
 */
import type * as NodeNet from "node:net"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type Call, CallError, CallPayload, ToolResult } from "./toolsetEntity.ts"

/** The longest frame either side accepts; a longer one ends the connection. */
export const maxFrame = 16 * 1024 * 1024

/** What a runner answers a call with. */
export type Answer =
  /** The host's answer: the server's result, or the call's typed error (classified by `CallOutcome`). */
  | { readonly _tag: "Ok"; readonly result: typeof ToolResult.Type }
  | { readonly _tag: "Error"; readonly error: typeof CallError.Type }
  /** No host of the entity here: nothing was run, and the cluster knows where it lives. */
  | { readonly _tag: "Elsewhere" }
  /** The host went away while the call ran: a re-delivery lets the next host judge it. */
  | { readonly _tag: "Interrupted" }
  /** The host failed without an answer: the call may have run. */
  | { readonly _tag: "Died"; readonly message: string }

/** A request: a call for an entity, or the cancellation of call `i`. */
export type Request =
  | { readonly _tag: "Call"; readonly i: number; readonly entity: string; readonly payload: Call }
  | { readonly _tag: "Cancel"; readonly i: number }

const payloadJson = Schema.toCodecJson(CallPayload)
const resultJson = Schema.toCodecJson(ToolResult)
const errorJson = Schema.toCodecJson(CallError)
const decodePayload = Schema.decodeUnknownResult(payloadJson)
const decodeResult = Schema.decodeUnknownResult(resultJson)
const decodeError = Schema.decodeUnknownResult(errorJson)
const encodeResult = Schema.encodeUnknownSync(resultJson)
const encodeError = Schema.encodeUnknownSync(errorJson)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isId = (u: unknown): u is number => Number.isSafeInteger(u) && (u as number) >= 0

/** A request as a line. */
export const encodeRequest = (request: Request): string =>
  request._tag === "Cancel"
    ? `${JSON.stringify({ i: request.i, cancel: true })}\n`
    : `${JSON.stringify({ i: request.i, e: request.entity, p: request.payload })}\n`

/** A request from a line, or `undefined` for anything else (the connection is then closed). */
export const decodeRequest = (line: string): Request | undefined => {
  const frame = parse(line)
  if (!isRecord(frame) || !isId(frame.i)) return undefined
  if (frame.cancel === true) return { _tag: "Cancel", i: frame.i }
  if (typeof frame.e !== "string") return undefined
  const payload = decodePayload(frame.p)
  return Result.isSuccess(payload) ? { _tag: "Call", i: frame.i, entity: frame.e, payload: payload.success } : undefined
}

/** Whether `line` is longer than a frame may be. */
export const tooLarge = (line: string): boolean => line.length > maxFrame / 3 && Buffer.byteLength(line) > maxFrame

/**
 * An answer to call `i` as a line. One too large for a frame is sent as `Died`: the call ran, and
 * its answer cannot be carried (the cluster's own frames have the same bound).
 */
export const encodeAnswer = (i: number, answer: Answer): string => {
  const line = answerLine(i, answer)
  return tooLarge(line) ? answerLine(i, { _tag: "Died", message: `its answer is over ${maxFrame} bytes` }) : line
}

const answerLine = (i: number, answer: Answer): string => {
  switch (answer._tag) {
    case "Ok":
      return `${JSON.stringify({ i, ok: encodeResult(answer.result) })}\n`
    case "Error":
      return `${JSON.stringify({ i, error: encodeError(answer.error) })}\n`
    case "Elsewhere":
      return `${JSON.stringify({ i, elsewhere: true })}\n`
    case "Interrupted":
      return `${JSON.stringify({ i, interrupted: true })}\n`
    case "Died":
      return `${JSON.stringify({ i, died: answer.message })}\n`
  }
}

/**
 * An answer from a line, with the number of the call it answers; `undefined` for anything else.
 * A frame that names a call but cannot be read answers it as `Died`: something came back.
 */
export const decodeAnswer = (line: string): { readonly i: number; readonly answer: Answer } | undefined => {
  const frame = parse(line)
  if (!isRecord(frame) || !isId(frame.i)) return undefined
  const i = frame.i
  if ("ok" in frame) {
    const result = decodeResult(frame.ok)
    return { i, answer: Result.isSuccess(result) ? { _tag: "Ok", result: result.success } : garbled }
  }
  if ("error" in frame) {
    const error = decodeError(frame.error)
    return { i, answer: Result.isSuccess(error) ? { _tag: "Error", error: error.success } : garbled }
  }
  if (frame.elsewhere === true) return { i, answer: { _tag: "Elsewhere" } }
  if (frame.interrupted === true) return { i, answer: { _tag: "Interrupted" } }
  return { i, answer: { _tag: "Died", message: typeof frame.died === "string" ? frame.died : "an unreadable answer" } }
}

const garbled: Answer = { _tag: "Died", message: "an answer that does not match the call's schema" }

const parse = (line: string): unknown => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/**
 * Splits a byte stream into lines, each at most `maxFrame`. `push` answers the complete lines in
 * `chunk`, or `undefined` once a line grew past the bound (the connection should then end).
 */
export const lines = () => {
  let held: Array<Buffer> = []
  let heldBytes = 0
  return (chunk: Buffer): Array<string> | undefined => {
    const out: Array<string> = []
    let from = 0
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
      const part = chunk.subarray(from, at)
      if (heldBytes + part.length > maxFrame) return undefined
      out.push(heldBytes === 0 ? part.toString("utf8") : Buffer.concat([...held, part]).toString("utf8"))
      held = []
      heldBytes = 0
      from = at + 1
    }
    if (from < chunk.length) {
      const rest = chunk.subarray(from)
      heldBytes += rest.length
      if (heldBytes > maxFrame) return undefined
      held.push(rest)
    }
    return out
  }
}

/**
 * Writes the lines of one turn of the event loop in one write: with many callers, an answer per
 * write(2) cost a runner a quarter of its CPU on the cluster's own sockets (see `Sockets`).
 */
export const batchedWriter = (socket: NodeNet.Socket) => {
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  return (line: string): void => {
    if (socket.destroyed) return
    if (!corked) {
      corked = true
      socket.cork()
      setImmediate(uncork)
    }
    socket.write(line)
  }
}
