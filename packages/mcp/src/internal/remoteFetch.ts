/**
 * `fetch` for a remote server, its OAuth authorization server included. What such a server
 * answers over HTTP may cost us what a stdio server's may
 * (`RawMessage.maxBytes`, `JsonLimits.maxDepth`). `fetch` hands the SDK a body of any size, and
 * its event-stream parser keeps an event until it ends: one `data:` line that never ended grew a
 * gateway past 3 GB in 15 s, and it died, with every other toolset. So:
 * - a JSON body is read here, whole, up to the limit, and checked for depth; past either, the
 *   request fails with the `RawMessage.Refused` that says which (it ran: its answer was dropped);
 * - an event stream passes as it comes, each event up to the limit; one that grows past it fails
 *   the stream (a POST's answer, or the session's stream, which the transport then opens again);
 * - any other body is cut at the limit.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { RawMessage } from "@toolvisor/core"

const lf = 10
const cr = 13

/**
 * Where the last event of `bytes` ends (just past its blank line: LF LF, CR CR or CR LF CR LF), or
 * -1; `before` is the byte before `bytes`, so a blank line split between two reads is found.
 */
const lastEventEnd = (bytes: Uint8Array, before: number): number => {
  for (let i = bytes.length - 1; i >= 0; i--) {
    const c = bytes[i]
    if (c !== lf && c !== cr) continue
    const previous = i > 0 ? bytes[i - 1] : before
    if (previous === c) return i + 1
    // CR LF CR LF: a line's CR LF, then the blank line's.
    if (c === lf && previous === cr && i >= 3 && bytes[i - 2] === lf && bytes[i - 3] === cr) return i + 1
  }
  return -1
}

/** A stream of `body` that fails once one of its events, or (`events` false) the whole of it, passes the limit. */
const limited = (body: ReadableStream<Uint8Array>, events: boolean): ReadableStream<Uint8Array> => {
  let size = 0
  let last = -1
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const end = events ? lastEventEnd(chunk, last) : -1
        size = end < 0 ? size + chunk.length : chunk.length - end
        last = chunk.length > 0 ? (chunk[chunk.length - 1] ?? -1) : last
        if (size > RawMessage.maxBytes) controller.error(new RawMessage.Refused(size, false, true))
        else controller.enqueue(chunk)
      }
    })
  )
}

/** The body of a JSON answer, read whole if it fits the limit; a `Refused` if it does not, or nests too deep. */
const readJson = async (body: ReadableStream<Uint8Array>): Promise<Uint8Array> => {
  const reader = body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > RawMessage.maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new RawMessage.Refused(size, false, true)
    }
    chunks.push(value)
  }
  const bytes = Buffer.concat(chunks, size)
  if (RawMessage.isTooDeep(bytes.toString("utf8"))) throw new RawMessage.Refused(size, true)
  return bytes
}

/** `response` with its body bounded as the module says. */
export const bounded = async (response: Response): Promise<Response> => {
  const body = response.body
  if (body === null) return response
  const type = response.headers.get("content-type")?.toLowerCase() ?? ""
  const init = { status: response.status, statusText: response.statusText, headers: response.headers }
  if (type.includes("application/json")) return new Response(await readJson(body), init)
  return new Response(limited(body, type.includes("text/event-stream")), init)
}

/**
 * `fetch` for a remote session's requests, their answers bounded. The SDK's transports give every
 * request the same long-lived signal, and `fetch` keeps an abort listener on a request's signal
 * until the request is collected: a busy session piled up thousands on that one signal (and Node
 * warned of a leak). Each request gets a signal of its own that follows it (`AbortSignal.any`),
 * which takes the listener and goes with the request. A request without a signal gets `orElse`.
 */
export const make =
  (orElse?: () => AbortSignal): FetchLike =>
  (input, init) => {
    const signal = init?.signal ? AbortSignal.any([init.signal]) : orElse?.()
    return fetch(input, signal === undefined ? init : { ...init, signal }).then(bounded)
  }

/** OAuth discovery and token requests carry no deadline of their own in the SDK; docker-agent allows 5 s. */
export const authRequestTimeout = 5_000

/** `make` for OAuth's requests: each within `authRequestTimeout`, its body included (a server that drips one held a login for ever). */
export const forAuth = (): FetchLike => {
  const bounded = make(() => AbortSignal.timeout(authRequestTimeout))
  return (input, init) =>
    bounded(input, init).catch((cause: unknown) => {
      if (!(cause instanceof Error && cause.name === "TimeoutError")) throw cause
      const origin = new URL(String(input)).origin
      throw new Error(`${origin} did not answer within ${authRequestTimeout / 1000} s`, { cause })
    })
}
