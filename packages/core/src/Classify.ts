/**
 * Maps a foreign failure (a Node system error, an HTTP response error, a JSON-RPC error, a plain
 * `Error`) to a lifecycle error. Structure is read first — error codes, HTTP statuses, JSON-RPC
 * codes, along the whole `cause` chain — and message text only last, because upstream SDKs
 * sometimes flatten their errors into strings.
 */
import * as Predicate from "effect/Predicate"
import * as LifecycleError from "./LifecycleError.ts"
import * as Redaction from "./Redaction.ts"

type Classified = LifecycleError.LifecycleError

type Make = (toolset: string, message: string, cause: unknown) => Classified

const unavailable: Make = (toolset, message, cause) =>
  new LifecycleError.ServerUnavailable({ toolset, message: `${toolset}: server unavailable: ${message}`, cause })

const transport: Make = (toolset, message, cause) =>
  new LifecycleError.TransportError({ toolset, message: `${toolset}: transport failure: ${message}`, cause })

const sessionMissing: Make = (toolset, message, cause) =>
  new LifecycleError.SessionMissing({ toolset, message: `${toolset}: session missing: ${message}`, cause })

const initNotification: Make = (toolset, message, cause) =>
  new LifecycleError.InitNotification({
    toolset,
    message: `${toolset}: failed to send initialized notification: ${message}`,
    cause
  })

const capabilityMissing: Make = (toolset, message, cause) =>
  new LifecycleError.CapabilityMissing({ toolset, message: `${toolset}: capability not supported: ${message}`, cause })

const authRequired = (toolset: string, message: string, cause: unknown, challenge?: string): Classified =>
  new LifecycleError.AuthRequired({
    toolset,
    message: `${toolset}: authentication required: ${message}`,
    cause,
    ...(challenge === undefined ? {} : { challenge: Redaction.redact(challenge) })
  })

/** Node system error codes, as raised by spawn, net, http and streams. */
const byNodeCode: Readonly<Record<string, Make>> = {
  ENOENT: unavailable,
  EACCES: unavailable,
  ENOEXEC: unavailable,
  ECONNREFUSED: unavailable,
  EHOSTUNREACH: unavailable,
  ENETUNREACH: unavailable,
  ENOTFOUND: unavailable,
  EAI_AGAIN: unavailable,
  ECONNRESET: transport,
  ECONNABORTED: transport,
  EPIPE: transport,
  ETIMEDOUT: transport,
  ERR_STREAM_DESTROYED: transport,
  ERR_STREAM_PREMATURE_CLOSE: transport,
  ERR_STREAM_WRITE_AFTER_END: transport,
  UND_ERR_SOCKET: transport,
  UND_ERR_CONNECT_TIMEOUT: transport,
  UND_ERR_HEADERS_TIMEOUT: transport,
  UND_ERR_BODY_TIMEOUT: transport,
  UND_ERR_CLOSED: transport
}

/**
 * JSON-RPC and MCP error codes that describe the connection rather than the request.
 * -32000 is the MCP SDK's "connection closed"; -32601 means the server does not implement a
 * method we rely on, which a restart cannot fix.
 */
const byRpcCode: Readonly<Record<number, Make>> = {
  [-32000]: transport,
  [-32700]: transport,
  [-32600]: transport,
  [-32601]: capabilityMissing
}

/**
 * What a URL that is not an MCP endpoint looks like to the SDK, with what to check: the wording
 * of OpenSSL and of the SDK says neither.
 */
const misdirected: ReadonlyArray<readonly [string, string]> = [
  ["wrong version number", "the server answered TLS with plain HTTP: try http:// instead of https://"],
  [
    "unexpected content type: text/html",
    "the URL answered with an HTML page (a login or error page?), not MCP: check the URL and its path (often /mcp)"
  ]
]

const transportHinted: Make = (toolset, message, cause) => {
  const lower = message.toLowerCase()
  const hint = misdirected.find(([needle]) => lower.includes(needle))?.[1]
  return new LifecycleError.TransportError({
    toolset,
    message: `${toolset}: transport failure: ${hint === undefined ? message : `${hint} (${message.slice(0, 300)})`}`,
    cause
  })
}

/** Message fragments, lower-cased, in the order they are tried. */
const byMessage: ReadonlyArray<readonly [ReadonlyArray<string>, Make]> = [
  // The SDK refuses a server that answers `initialize` with a version it does not speak: the same
  // server answers the same after a restart.
  [["protocol version is not supported"], capabilityMissing],
  [misdirected.map(([needle]) => needle), transportHinted],
  [["failed to send initialized notification"], initNotification],
  [["session not found", "session missing", "no valid session"], sessionMissing],
  // The SDK's HTTP transports give up reconnecting their event stream: the server is gone.
  [["connection refused", "command not found", "maximum reconnection attempts"], unavailable],
  [
    [
      "connection reset",
      "broken pipe",
      "connection closed",
      "socket hang up",
      "premature close",
      "stream closed",
      "unexpected end",
      "end of file",
      "did not answer within"
    ],
    transport
  ]
]

const invalidToken = ["invalid_token", "invalid token"]

const messageOf = (u: unknown): string =>
  Predicate.hasProperty(u, "message") && Predicate.isString(u.message)
    ? u.message
    : Predicate.isString(u)
      ? u
      : safeString(u)

const safeString = (u: unknown): string => {
  try {
    return typeof u === "object" && u !== null ? JSON.stringify(u) : String(u)
  } catch {
    return Object.prototype.toString.call(u)
  }
}

/** The error and every error it wraps (`cause`, `AggregateError.errors`), outermost first. */
const chainOf = (u: unknown): ReadonlyArray<unknown> => {
  const out: Array<unknown> = []
  const visit = (e: unknown): void => {
    if (e === undefined || e === null || out.includes(e) || out.length >= 16) return
    out.push(e)
    if (Predicate.hasProperty(e, "errors") && Array.isArray(e.errors)) e.errors.forEach(visit)
    if (Predicate.hasProperty(e, "cause")) visit(e.cause)
  }
  visit(u)
  return out
}

const httpStatusOf = (e: unknown): number | undefined => {
  for (const key of ["status", "statusCode", "code"] as const) {
    const value = Predicate.hasProperty(e, key) ? e[key] : undefined
    if (Predicate.isNumber(value) && Number.isInteger(value) && value >= 400 && value <= 599) return value
  }
  return undefined
}

const headerOf = (e: unknown, name: string): string | undefined => {
  const headers = Predicate.hasProperty(e, "headers") ? e.headers : undefined
  if (Predicate.hasProperty(headers, "get") && Predicate.isFunction(headers.get)) {
    const value: unknown = headers.get(name)
    return Predicate.isString(value) ? value : undefined
  }
  if (!Predicate.isObject(headers)) return undefined
  // Header names are case-insensitive: a plain record may spell it `WWW-Authenticate`.
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return Predicate.isString(value) ? value : undefined
}

const hasAny = (text: string, needles: ReadonlyArray<string>): boolean => needles.some((n) => text.includes(n))

/** `text` is matched lower-cased but shown as the server wrote it (a lower-cased secret would slip past masking). */
const byStatus = (toolset: string, e: unknown, status: number, text: string, root: unknown): Classified => {
  const challenge = headerOf(e, "www-authenticate")
  const lower = text.toLowerCase()
  if ((status === 401 || status === 403) && (challenge !== undefined || hasAny(lower, invalidToken))) {
    return authRequired(toolset, `HTTP ${status}: ${text}`, root, challenge)
  }
  if ((status === 404 || status === 400) && lower.includes("session")) {
    return sessionMissing(toolset, `HTTP ${status}: ${text}`, root)
  }
  if (status === 404 || status === 410) return unavailable(toolset, `HTTP ${status}: ${text}`, root)
  return transport(toolset, `HTTP ${status}: ${text}`, root)
}

const structural = (toolset: string, e: unknown, root: unknown): Classified | undefined => {
  const text = Redaction.redact(messageOf(e))
  const code = Predicate.hasProperty(e, "code") ? e.code : undefined
  if (Predicate.isString(code) && code in byNodeCode) return byNodeCode[code]!(toolset, `${code}: ${text}`, root)
  const status = httpStatusOf(e)
  if (status !== undefined) return byStatus(toolset, e, status, text, root)
  if (Predicate.isNumber(code) && code in byRpcCode) return byRpcCode[code]!(toolset, `${text} (code ${code})`, root)
  return undefined
}

const textual = (toolset: string, text: string, root: unknown): Classified | undefined => {
  const lower = text.toLowerCase()
  for (const [needles, make] of byMessage) {
    if (hasAny(lower, needles)) return make(toolset, text, root)
  }
  // "EOF" only in capitals: as a word it is a stream end, lower-cased it hides inside others.
  if (text.includes("EOF")) return transport(toolset, text, root)
  if (hasAny(lower, invalidToken)) return authRequired(toolset, text, root)
  return undefined
}

/**
 * Maps any failure to a lifecycle error for `toolset`. Classifying a lifecycle error returns it
 * unchanged; a failure that fits no class becomes a transient `TransportError` marked
 * `unclassified`, with the original kept as its cause. Messages are redacted.
 */
export const classify = (toolset: string, u: unknown): Classified => {
  if (LifecycleError.isLifecycleError(u)) return u
  const chain = chainOf(u)
  for (const e of chain) {
    const found = structural(toolset, e, u)
    if (found !== undefined) return found
  }
  const text = Redaction.redact(chain.map(messageOf).join(": "))
  return (
    textual(toolset, text, u) ??
    new LifecycleError.TransportError({
      toolset,
      message: `${toolset}: unclassified failure: ${text}`,
      cause: u,
      unclassified: true
    })
  )
}
