/**
 * `fetch` for a remote server, its OAuth authorization server included. What such a server
 * answers over HTTP may cost us what a stdio server's may
 * (`RawMessage.maxBytes`, `JsonLimits.maxDepth`). `fetch` hands the SDK a body of any size, and
 * its event-stream parser keeps an event until it ends: one `data:` line that never ended grew a
 * gateway past 3 GB in 15 s, and it died, with every other toolset. So:
 * - a JSON body is read here, whole, up to the limit, and checked for depth; past either, the
 *   request fails with the `RawMessage.Refused` that says which (it ran: its answer was dropped);
 * - an event stream passes as it comes, each event up to the limits; one that grows past them fails
 *   the stream (a POST's answer, or the session's stream, which the transport then opens again);
 * - any other body is cut at the limit.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { JsonLimits, RawMessage } from "@toolvisor/core"

const lf = 10
const cr = 13
const quote = 34
const backslash = 92

/**
 * One event stream, read as it passes: the size of the event being read and how deep its JSON
 * nests, strings skipped. An event ends at a blank line (LF LF, CR CR, CR LF CR LF); a line's end
 * also ends any string, since JSON has no raw line break in one.
 */
class Events {
  private size = 0
  private depth = 0
  private inString = false
  private escaped = false
  /** The current line's length so far, and whether the last byte was a CR (of a CR LF). */
  private line = 0
  private afterCr = false

  /** What `bytes` makes of the event being read: a `Refused` past the bounds, else undefined. */
  feed(bytes: Uint8Array): RawMessage.Refused | undefined {
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i]!
      if (c === lf || c === cr) {
        const crLf = c === lf && this.afterCr
        this.afterCr = c === cr
        if (crLf) continue
        if (this.line === 0) {
          this.size = 0
          this.depth = 0
        }
        this.line = 0
        this.inString = false
        continue
      }
      this.afterCr = false
      this.line++
      this.size++
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (c === backslash) this.escaped = true
        else if (c === quote) this.inString = false
      } else if (c === quote) this.inString = true
      else if (c === 123 || c === 91) {
        if (++this.depth > JsonLimits.maxDepth) return new RawMessage.Refused(this.size, true)
      } else if (c === 125 || c === 93) this.depth--
    }
    return this.size > RawMessage.maxBytes ? new RawMessage.Refused(this.size, false, true) : undefined
  }
}

/**
 * A stream of `body` that ends once one of its events (`events`), or the whole of it, passes the
 * bounds. An event stream answering one request of ours (`answers`) then ends with an event of its
 * own: the error answer to that request, so the call fails at once ("the request ran, but its
 * answer was dropped") rather than at its deadline; any other fails.
 */
const limited = (
  body: ReadableStream<Uint8Array>,
  events: boolean,
  answers: () => string | number | undefined
): ReadableStream<Uint8Array> => {
  const stream = events ? new Events() : undefined
  let size = 0
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.length
        const refused =
          stream?.feed(chunk) ?? (size > RawMessage.maxBytes ? new RawMessage.Refused(size, false, true) : undefined)
        if (refused === undefined) return controller.enqueue(chunk)
        const id = events ? answers() : undefined
        const answer = id === undefined ? undefined : RawMessage.errorAnswer({ id, isRequest: false }, refused)
        if (answer === undefined) return controller.error(refused)
        const { code, message } = answer.error
        // The refused event's start, already passed on, is ended first: it is dropped as unreadable.
        const event = JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } })
        controller.enqueue(Buffer.from(`\n\nevent: message\ndata: ${event}\n\n`))
        controller.terminate()
      }
    })
  )
}

/** The id of the one request `body` (what we sent) carries, if it is one. */
const requestIdOf = (body: unknown): string | number | undefined => {
  if (typeof body !== "string") return undefined
  try {
    const message: unknown = JSON.parse(body)
    if (typeof message !== "object" || message === null || !("method" in message) || !("id" in message))
      return undefined
    return typeof message.id === "string" || typeof message.id === "number" ? message.id : undefined
  } catch {
    return undefined
  }
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

/** `response` with its body bounded as the module says; `sent` is the body of the request it answers. */
export const bounded = async (response: Response, sent?: unknown): Promise<Response> => {
  const body = response.body
  if (body === null) return response
  const type = response.headers.get("content-type")?.toLowerCase() ?? ""
  const init = { status: response.status, statusText: response.statusText, headers: response.headers }
  if (type.includes("application/json")) return new Response(await readJson(body), init)
  return new Response(
    limited(body, type.includes("text/event-stream"), () => requestIdOf(sent)),
    init
  )
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
    return fetch(input, signal === undefined ? init : { ...init, signal }).then((response) =>
      bounded(response, init?.body)
    )
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
