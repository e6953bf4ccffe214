/**
 * The one redaction every output goes through: status, errors, logs, tool results. It masks two
 * kinds of secret as `***`. Known values: what a config resolved from the environment, its
 * literal keys and tokens (found by `internal/secretSources`, exported here: `env` and header
 * values, a Basic header's password and a cookie's values, arguments after a secret-looking flag,
 * in a server's `args` or a `headersHelper` command, URL userinfo, secret query parameters,
 * token-like path segments), and what a toolset learns at run time (OAuth tokens, headers a helper
 * prints) — a `Redactor` grows as they come, and knows each line of a multi-line value too. And
 * credential shapes, wherever they appear in a message: `Bearer …`, `token=…`, `user:pass@`.
 */
import * as Context from "effect/Context"
import { secretQueryNames } from "./internal/secretSources.ts"
import { maxDepth } from "./JsonLimits.ts"

/** What a secret is replaced with. */
export const mask = "***"

/**
 * Shorter values would mask unrelated text (a secret "1" would garble `toolsets[1]`, "ab" every word
 * with those letters): they are left alone, whole values and the lines of a multi-line one alike.
 */
export const minLength = 4

// ---------------------------------------------------------------------------------------------
// Credential shapes
// ---------------------------------------------------------------------------------------------

const secretWord =
  "token|secret|password|passwd|passphrase|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|creds"

const shapes: ReadonlyArray<readonly [RegExp, string]> = [
  // A credential (token68) has a digit or a symbol in it ("the basic configuration" is prose), and is not an
  // auth-param such as the `realm="..."` of a `WWW-Authenticate` challenge.
  [/\b(bearer|basic)\s+(?![A-Za-z0-9_-]+\s*=\s*[^\s=,])(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}/gi, "$1 ***"],
  [/\b(authorization|proxy-authorization|cookie|x-api-key)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, "$1$2***"],
  [new RegExp(`\\b([a-z0-9_-]*(?:${secretWord})[a-z0-9_-]*)(["']?\\s*[:=]\\s*["']?)[^\\s"'&,}]+`, "gi"), "$1$2***"],
  // Query parameters whose short names carry credentials: `?key=`, `&sig=`, `&session=`.
  [new RegExp(`([?&](?:${secretQueryNames.join("|")})=)[^\\s&#"']+`, "gi"), "$1***"],
  [/(\/\/[^/:@\s]+:)[^@/\s]+@/g, "$1***@"]
]

/** Masks credential shapes (bearer tokens, `token=…`, `?key=…`, URL passwords) in a message. Idempotent. */
export const redact = (text: string): string =>
  shapes.reduce((out, [pattern, replacement]) => out.replace(pattern, replacement), text)

// ---------------------------------------------------------------------------------------------
// Redactor: known values, growing at run time
// ---------------------------------------------------------------------------------------------

/**
 * Known secrets: a registry keeps one for all its toolsets. `add` takes values learnt later (OAuth
 * tokens, helper headers); a text is masked in one pass whatever the number of secrets (a text
 * without any costs one `test` and no copy), and nothing is done while none is known, so tool
 * results on the gateway's hot path pay only when the config has secrets.
 */
export interface Redactor {
  readonly add: (values: Iterable<string>) => void
  /** True while no value is known (credential shapes are still masked by `text`). */
  readonly isEmpty: () => boolean
  /** Masks the known values only: for data (tool results), where credential-like prose is the user's. */
  readonly values: (text: string) => string
  /** Masks the known values and every credential shape: for messages (errors, logs, stderr). */
  readonly text: (text: string) => string
  /**
   * `text` for a text cut short (a long stderr line): also masks the beginning of a known value
   * that ends it, however short, since the cut took the rest away and no whole value is left to match.
   */
  readonly truncated: (text: string) => string
}

const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * A value and, for a value of several lines (a PEM key in `env`), each of its lines, trimmed: a
 * server's stderr is read, kept and shown line by line, where the whole value never matches. A
 * line with no letter or digit (`-----`, `},`) is not a secret by itself and would garble unrelated
 * text; one shorter than `minLength` is left alone like any short value. A PEM's armour lines
 * (`-----BEGIN PRIVATE KEY-----`) are masked with the rest: they show only around a key, and
 * `loaded ***` tells an operator as much as the original did.
 */
const parts = (value: string): ReadonlyArray<string> =>
  /[\r\n]/.test(value)
    ? [
        value,
        ...value
          .split(/\r\n|\r|\n/)
          .map((line) => line.trim())
          .filter((line) => /[A-Za-z0-9]/.test(line))
      ]
    : [value]

/** A value as it may be quoted: plain, URL-encoded, or inside a JSON string. */
const spellings = (value: string): ReadonlyArray<string> => [
  ...new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)])
]

/**
 * The longest value matched whole. V8 refuses a regular expression that holds one literal of some
 * 32 K characters: a longer value would make every mask throw (with the value in the error's
 * message), so it is matched in pieces of this length instead, each masked where it shows.
 */
const maxPiece = 4096

const pieces = (spelling: string): ReadonlyArray<string> =>
  spelling.length <= maxPiece
    ? [spelling]
    : Array.from({ length: Math.ceil(spelling.length / maxPiece) }, (_, i) =>
        spelling.slice(i * maxPiece, (i + 1) * maxPiece)
      )

/** A redactor that knows `values` (values shorter than `minLength` are ignored). */
export const make = (values: Iterable<string> = []): Redactor => {
  const known = new Set<string>()
  /** The known values, longest first. */
  let sorted: ReadonlyArray<string> = []
  /** All known values, longest first (a secret that contains another is masked whole). */
  let pattern: RegExp | undefined
  /** The same without `g`: a text without secrets, the common case, costs one `test` and no copy. */
  let probe: RegExp | undefined
  const add = (more: Iterable<string>) => {
    let grew = false
    for (const value of more) {
      for (const spelling of parts(value).flatMap(spellings).flatMap(pieces)) {
        if (spelling.length < minLength || known.has(spelling)) continue
        known.add(spelling)
        grew = true
      }
    }
    if (!grew) return
    sorted = [...known].sort((a, b) => b.length - a.length)
    const source = sorted.map(escapeRegExp).join("|")
    pattern = new RegExp(source, "g")
    probe = new RegExp(source)
  }
  add(values)
  const maskValues = (text: string) =>
    pattern === undefined || probe === undefined || !probe.test(text) ? text : text.replace(pattern, mask)
  /** The text with the longest beginning of a known value that ends it masked. */
  const maskCutValue = (text: string) => {
    let from = text.length
    for (const value of sorted) {
      // Only a proper beginning: a whole value is masked already. Each value only looks for an earlier start.
      for (let at = Math.max(0, text.length - value.length + 1); at < from; at++) {
        if (text.charCodeAt(at) === value.charCodeAt(0) && value.startsWith(text.slice(at))) {
          from = at
          break
        }
      }
    }
    return from === text.length ? text : `${text.slice(0, from)}${mask}`
  }
  return {
    add,
    isEmpty: () => pattern === undefined,
    values: maskValues,
    text: (text) => redact(maskValues(text)),
    truncated: (text) => redact(maskCutValue(maskValues(text)))
  }
}

/** Knows nothing and learns nothing: `Current` outside a toolset the runtime built. */
export const none: Redactor = {
  add: () => {},
  isEmpty: () => true,
  values: (text) => text,
  text: redact,
  truncated: redact
}

/**
 * The redactor of the toolset being built: the runtime provides its redactor around a toolset's
 * construction, and the toolset's fibers keep it, so code that meets a secret at connect time (an
 * OAuth token, a header helper's output) adds it with
 * `Effect.map(Redaction.Current, (redactor) => redactor.add([value]))`.
 */
export const Current = Context.Reference<Redactor>("@toolvisor/core/Redaction", { defaultValue: () => none })

// ---------------------------------------------------------------------------------------------
// Masking values: JSON and errors
// ---------------------------------------------------------------------------------------------

/**
 * A JSON value with `maskText` applied to every string in it, the same value when nothing
 * changed (the original is never modified). Binary payloads (`data` and `blob` beside a
 * `mimeType`) are left whole; a part nested deeper than `JsonLimits.maxDepth` is replaced by the
 * mask rather than let out unread.
 */
export const json = (value: unknown, maskText: (text: string) => string): unknown => walk(value, maskText, 0)

/** `json` for an object (a tool result, a tool): an object of the same shape. */
export const record = <A extends object>(value: A, maskText: (text: string) => string): A =>
  walkRecord(value, maskText, 0)

const walk = (value: unknown, maskText: (text: string) => string, depth: number): unknown => {
  if (typeof value === "string") return maskText(value)
  if (value === null || typeof value !== "object") return value
  if (depth >= maxDepth) return mask
  if (!Array.isArray(value)) return walkRecord(value, maskText, depth)
  let out: Array<unknown> | undefined
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i]
    const masked = walk(item, maskText, depth + 1)
    if (masked !== item) out ??= value.slice()
    if (out !== undefined) out[i] = masked
  }
  return out ?? value
}

const walkRecord = <A extends object>(value: A, maskText: (text: string) => string, depth: number): A => {
  const binary = "mimeType" in value && typeof value.mimeType === "string"
  let out: A | undefined
  // `for…in` rather than `Object.entries`: no array per object, which is most of the cost of a small result.
  for (const key in value) {
    if (!Object.hasOwn(value, key) || (binary && (key === "data" || key === "blob"))) continue
    const item: unknown = value[key]
    const masked = walk(item, maskText, depth + 1)
    if (masked !== item) out = Object.assign(out ?? { ...value }, { [key]: masked })
  }
  return out ?? value
}

/** How deep a chain of causes is followed. */
const causeDepth = 8

/**
 * A copy of an error — same class, same fields — whose message, stack, stderr lines, challenge
 * and chain of causes are masked; the same error when nothing needed masking.
 */
export const error = <E extends object>(e: E, maskText: (text: string) => string): E => maskError(e, maskText, 0)

const maskError = <E extends object>(e: E, maskText: (text: string) => string, depth: number): E => {
  const changes: Array<readonly [string, unknown]> = []
  const change = (key: string, masked: unknown, original: unknown) => {
    if (masked !== original) changes.push([key, masked])
  }
  if ("message" in e && typeof e.message === "string") change("message", maskText(e.message), e.message)
  if ("stack" in e && typeof e.stack === "string") change("stack", maskText(e.stack), e.stack)
  if ("challenge" in e && typeof e.challenge === "string") change("challenge", maskText(e.challenge), e.challenge)
  if ("stderr" in e && Array.isArray(e.stderr)) change("stderr", json(e.stderr, maskText), e.stderr)
  if ("cause" in e && typeof e.cause === "object" && e.cause !== null && depth < causeDepth) {
    change("cause", maskError(e.cause, maskText, depth + 1), e.cause)
  }
  if (changes.length === 0) return e
  const descriptors: PropertyDescriptorMap = Object.getOwnPropertyDescriptors(e)
  for (const [key, value] of changes) {
    const enumerable = descriptors[key]?.enumerable ?? false
    descriptors[key] = { value, enumerable, writable: true, configurable: true }
  }
  // Effect's errors keep their constructor arguments under a symbol, and `toJSON` (hence
  // `JSON.stringify`) reads the message from there: those arguments are masked too.
  for (const symbol of Object.getOwnPropertySymbols(e)) {
    const held: unknown = descriptors[symbol]?.value
    if (typeof held !== "object" || held === null || Array.isArray(held)) continue
    const within = changes.filter(([key]) => Object.hasOwn(held, key))
    if (within.length > 0)
      descriptors[symbol] = { ...descriptors[symbol], value: { ...held, ...Object.fromEntries(within) } }
  }
  const copy: E = Object.create(Object.getPrototypeOf(e))
  Object.defineProperties(copy, descriptors)
  return copy
}

// ---------------------------------------------------------------------------------------------
// Where a config holds secrets (internal/secretSources.ts)
// ---------------------------------------------------------------------------------------------

export {
  argSecrets,
  commandSecrets,
  credentialSecrets,
  envSecrets,
  headerSecrets,
  isPlainSetting,
  isSecretName,
  looksLikeToken,
  urlSecrets
} from "./internal/secretSources.ts"
