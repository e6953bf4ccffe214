/**
 * The one redaction every output goes through: status, errors, logs, tool results. It masks two
 * kinds of secret as `***`. Known values: what a config resolved from the environment, its
 * literal keys and tokens (found here: `env` and header values, arguments after a secret-looking
 * flag, URL userinfo, secret query parameters, token-like path segments), and what a toolset
 * learns at run time (OAuth tokens, headers a helper prints) — a `Redactor` grows as they come.
 * And credential shapes, wherever they appear in a message: `Bearer …`, `token=…`, `user:pass@`.
 */
import * as Context from "effect/Context"
import { maxDepth } from "./JsonLimits.ts"

/** What a secret is replaced with. */
export const mask = "***"

/** Shorter values would mask unrelated text (a secret "1" would garble `toolsets[1]`): they are left alone. */
export const minLength = 4

// ---------------------------------------------------------------------------------------------
// Credential shapes
// ---------------------------------------------------------------------------------------------

const secretWord = "token|secret|password|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential"

const shapes: ReadonlyArray<readonly [RegExp, string]> = [
  // A credential (token68) has a digit or a symbol in it ("the basic configuration" is prose), and is not an
  // auth-param such as the `realm="..."` of a `WWW-Authenticate` challenge.
  [/\b(bearer|basic)\s+(?![A-Za-z0-9_-]+\s*=\s*[^\s=,])(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}/gi, "$1 ***"],
  [/\b(authorization|proxy-authorization|cookie|x-api-key)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, "$1$2***"],
  [new RegExp(`\\b([a-z0-9_-]*(?:${secretWord})[a-z0-9_-]*)(["']?\\s*[:=]\\s*["']?)[^\\s"'&,}]+`, "gi"), "$1$2***"],
  // Query parameters whose short names carry credentials: `?key=`, `&sig=`, `&code=`.
  [/([?&](?:key|sig|signature|auth|code|pat|jwt)=)[^\s&#"']+/gi, "$1***"],
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
}

const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A value as it may be quoted: plain, URL-encoded, or inside a JSON string. */
const spellings = (value: string): ReadonlyArray<string> => [
  ...new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)])
]

/** A redactor that knows `values` (values shorter than `minLength` are ignored). */
export const make = (values: Iterable<string> = []): Redactor => {
  const known = new Set<string>()
  /** All known values, longest first (a secret that contains another is masked whole). */
  let pattern: RegExp | undefined
  /** The same without `g`: a text without secrets, the common case, costs one `test` and no copy. */
  let probe: RegExp | undefined
  const add = (more: Iterable<string>) => {
    let grew = false
    for (const value of more) {
      for (const spelling of spellings(value)) {
        if (spelling.length < minLength || known.has(spelling)) continue
        known.add(spelling)
        grew = true
      }
    }
    if (!grew) return
    const source = [...known]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join("|")
    pattern = new RegExp(source, "g")
    probe = new RegExp(source)
  }
  add(values)
  const maskValues = (text: string) =>
    pattern === undefined || probe === undefined || !probe.test(text) ? text : text.replace(pattern, mask)
  return {
    add,
    isEmpty: () => pattern === undefined,
    values: maskValues,
    text: (text) => redact(maskValues(text))
  }
}

/** Knows nothing and learns nothing: `Current` outside a toolset the runtime built. */
export const none: Redactor = { add: () => {}, isEmpty: () => true, values: (text) => text, text: redact }

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
// Where a config holds secrets
// ---------------------------------------------------------------------------------------------

const secretNameWords = new Set([
  "token",
  "tokens",
  "secret",
  "secrets",
  "password",
  "passwd",
  "pass",
  "passphrase",
  "pwd",
  "apikey",
  "key",
  "keys",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "cookie",
  "pat",
  "bearer",
  "signature",
  "sig",
  "jwt",
  "otp"
])

/**
 * Whether a name (an environment variable, a header, a flag, a query parameter) says its value is
 * a secret: one of its words is `token`, `key`, `secret`, `password`, `auth`… (`GITHUB_TOKEN`,
 * `X-Api-Key`, `--client-secret`, `apiKey`), not merely containing the letters (`KEYBOARD`).
 */
export const isSecretName = (name: string): boolean => {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
  return words.some((word) => secretNameWords.has(word)) || words.join("").includes("apikey")
}

/**
 * A value that is a setting, not a secret, unless its name says otherwise: a boolean, a number, a
 * version or a date, a word (`debug`, `INFO`), a short lower-case identifier (`us-east-1`,
 * `gpt-4o`), a media type, or a path. Masking these would garble every path, region and log level
 * in the results an agent reads; keys are long, or mixed-case, or live under a secret name.
 */
export const isPlainSetting = (value: string): boolean =>
  /^(?:true|false|yes|no|on|off|none|null|-?v?\d+(?:[.-]\d+)*|[A-Z]{1,12}|[a-z][a-z0-9._-]{0,15}|[a-z]+\/[a-z0-9.+-]+)$/.test(
    value
  ) || /^(?:\/|~\/|\.\.?\/|[A-Za-z]:[\\/])[^\s]*$/.test(value)

/** Known token prefixes (OpenAI, GitHub, Slack, GitLab, AWS, Google). */
const tokenPrefix = /^(?:sk-|pk-|rk-|gh[pousr]_|github_pat_|xox[abprs]-|glpat-|AKIA|AIza)/

/**
 * A value shaped like a credential whatever it is called: one long run of token characters with
 * digits and letters in mixed case (or very long, or with a known token prefix).
 */
export const looksLikeToken = (value: string): boolean => {
  if (value.length < 16 || !/^[A-Za-z0-9._~+/=:-]+$/.test(value) || value.includes("://")) return false
  if (/^[./~]/.test(value)) return false
  if (tokenPrefix.test(value)) return true
  if (value.length < 20 || !/[0-9]/.test(value) || !/[A-Za-z]/.test(value)) return false
  return (/[a-z]/.test(value) && /[A-Z]/.test(value)) || value.length >= 32
}

/** The credential of an `Authorization`-style value: the part after `Bearer ` or `Basic `, and the whole. */
const withCredential = (value: string): ReadonlyArray<string> => {
  const scheme = /^\s*[A-Za-z][A-Za-z0-9-]*\s+(\S+)\s*$/.exec(value)
  return scheme?.[1] === undefined ? [value] : [value, scheme[1]]
}

/** A named value's secrets: all of it when the name says so, else only if it is not a plain setting. */
const namedValue = (name: string, value: string): ReadonlyArray<string> => {
  if (value === "") return []
  if (/^https?:\/\//i.test(value)) return urlSecrets(value)
  if (isSecretName(name)) return withCredential(value)
  // Anything else that is neither a plain setting nor prose (words with spaces) may be a key.
  return isPlainSetting(value) || /\s/.test(value) ? [] : [value]
}

/** The secrets in an `env` record: see `namedValue`. */
export const envSecrets = (env: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(env).flatMap(([name, value]) => namedValue(name, value))

/** The secrets in literal header values: credential-bearing headers whole and their token, others unless plain. */
export const headerSecrets = (headers: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(headers).flatMap(([name, value]) => namedValue(name, value))

/**
 * The secrets in a URL: its userinfo, the values of secret-looking query parameters (`api_key`,
 * `token`, `key`, `sig`…), and path segments shaped like tokens (`/sk-…/sse`, a webhook's key).
 */
export const urlSecrets = (text: string): ReadonlyArray<string> => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return []
  }
  const found: Array<string> = []
  if (url.password !== "") found.push(url.password, decodeURIComponent(url.password))
  if (url.username !== "" && (url.password === "" || looksLikeToken(url.username))) {
    found.push(url.username, decodeURIComponent(url.username))
  }
  for (const [name, value] of url.searchParams) {
    if (value !== "" && (isSecretName(name) || /^(?:code|sig|pat|jwt)$/i.test(name) || looksLikeToken(value))) {
      found.push(value, encodeURIComponent(value))
    }
  }
  for (const segment of url.pathname.split("/")) {
    const decoded = safeDecode(segment)
    if (looksLikeToken(decoded)) found.push(segment, decoded)
  }
  return found
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The secrets in a command line: the argument after a secret-looking flag (`--api-key X`,
 * `--token X`, `-p` is not one), the value of `--flag=X` and `NAME=X` with a secret-looking
 * name, `Authorization: Bearer X` header arguments, URLs' secrets, and token-shaped arguments.
 */
export const argSecrets = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const found: Array<string> = []
  args.forEach((arg, index) => {
    const flag = /^--?([A-Za-z][\w.-]*)$/.exec(arg)
    const next = args[index + 1]
    if (flag?.[1] !== undefined && isSecretName(flag[1]) && next !== undefined && !next.startsWith("-")) {
      found.push(...withCredential(next))
      return
    }
    const assigned = /^(?:--?)?([A-Za-z_][\w.-]*)=([\s\S]+)$/.exec(arg)
    if (assigned?.[1] !== undefined && assigned[2] !== undefined && isSecretName(assigned[1])) {
      found.push(...withCredential(assigned[2]))
      return
    }
    const header = /^([A-Za-z][\w-]*)\s*:\s*(\S[\s\S]*)$/.exec(arg)
    if (header?.[1] !== undefined && header[2] !== undefined && isSecretName(header[1])) {
      found.push(...withCredential(header[2]))
      return
    }
    const value = assigned?.[2] ?? arg
    if (/^https?:\/\//i.test(value)) found.push(...urlSecrets(value))
    else if (looksLikeToken(value)) found.push(value)
  })
  return found
}
