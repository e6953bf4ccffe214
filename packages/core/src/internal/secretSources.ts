/**
 * Where a config holds secrets, for `Redaction` (which exports these): which names say a value is
 * a secret, which values look like one whatever their name, and the secrets in `env` and header
 * records, URLs, command lines and shell commands. Pure functions of the config's text: what they
 * find is masked by a `Redactor` wherever it shows.
 */

/**
 * Query parameters whose short names carry credentials in a URL, besides any name `isSecretName`
 * accepts: an OAuth `code`, a signature, a session id (`session`, `sid`), an `access` grant, and
 * an application key (`appid`, which some APIs take as their only key).
 */
export const secretQueryNames: ReadonlyArray<string> = [
  "key",
  "sig",
  "signature",
  "auth",
  "code",
  "pat",
  "jwt",
  "session",
  "sessionid",
  "session_id",
  "sid",
  "access",
  "appid",
  "app_id"
]

/** Short words that name a secret only as a whole word of a name: `API_KEY`, `DB_PW`, `--pat`, `X-Auth`. */
const secretNameWords = new Set([
  "key",
  "keys",
  "pass",
  "pwd",
  "pw",
  "auth",
  "authorization",
  "cookie",
  "pat",
  "bearer",
  "signature",
  "sig",
  "jwt",
  "otp"
])

/** Words that name a secret wherever they stand in a name, run together with others or not. */
const secretNameFragments = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "credential",
  "creds",
  "apikey",
  "appkey",
  "accesskey",
  "privatekey",
  "authkey",
  "signingkey",
  "encryptionkey",
  "masterkey",
  "sessionkey"
]

/** What holds a fragment without naming a secret: a tokenizer (`TOKENIZERS_PARALLELISM`), a secretary. */
const lookAlikes = /tokeni[sz]|secretar/g

/** Words that make a `token` a count of model tokens: `MAX_TOKENS`, `TOKEN_LIMIT`, `TOKENS_PER_MINUTE`. */
const countWords = new Set(["max", "min", "num", "count", "limit", "budget", "per"])

/**
 * Whether a name (an environment variable, a header, a flag, a query parameter) says its value is
 * a secret, case and separators aside (`_`, `-`, `.`, camelCase). Two rules:
 * - a short word counts as a whole word only: `key`, `pass`, `pwd`, `pw`, `auth`, `cookie`, `pat`,
 *   `sig`, `jwt`… (`X-Api-Key`, `DB_PW`), so `KEYBOARD`, `PASSENGER`, `AUTHOR` are not secrets' names;
 * - a long one counts anywhere, also run together with other words: `password`, `passwd`,
 *   `passphrase`, `secret`, `token`, `credential`, `creds`, and `apikey`, `privatekey`,
 *   `accesskey`, `appkey`, `authkey`… (`PGPASSWORD`, `APITOKEN`, `PRIVATEKEY`, `MY_CREDS`, `clientSecret`).
 * Except where the fragment means something else: a tokenizer (`TOKENIZER_MODEL`), a secretary,
 * and a count of model tokens, a `token` beside `max`, `min`, `num`, `count`, `limit`, `budget`
 * or `per` (`MAX_TOKENS`, `TOKEN_LIMIT`), whose number masked would garble every result that
 * holds it. A name that only looks harmless (`MAXTOKENS`, run together) is still a secret's: a
 * value masked by mistake costs less than a key let out.
 */
export const isSecretName = (name: string): boolean => {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
  if (words.some((word) => secretNameWords.has(word))) return true
  const counts = words.some((word) => countWords.has(word))
  const compact = words
    .filter((word) => !(counts && (word === "token" || word === "tokens")))
    .join("")
    .replace(lookAlikes, "")
  return secretNameFragments.some((fragment) => compact.includes(fragment))
}

/** Whether a URL's query parameter carries a credential: a secret's name, or a short one URLs use for one. */
const isSecretQueryName = (name: string): boolean => isSecretName(name) || secretQueryNames.includes(name.toLowerCase())

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

/**
 * The secrets of a value known to be a credential, under the header (or flag, or variable) `name`:
 * all of it; after an auth scheme the credential alone (`Bearer X`: X), which a server may quote
 * bare; for `Basic`, also what it decodes to, `user:password` and the password, which a server may
 * decode and quote; and a cookie header's values (`a=X; b=Y`: X and Y) that may be credentials.
 */
export const credentialSecrets = (name: string, value: string): ReadonlyArray<string> => {
  if (/^(?:set-)?cookie$/i.test(name)) return [value, ...cookieValues(value)]
  const scheme = /^\s*([A-Za-z][A-Za-z0-9-]*)\s+(\S+)\s*$/.exec(value)
  if (scheme?.[1] === undefined || scheme[2] === undefined) return [value]
  return [value, scheme[2], ...(scheme[1].toLowerCase() === "basic" ? basicSecrets(scheme[2]) : [])]
}

/** A Basic credential's `user:password` and password; nothing when it is not base64 of such text. */
const basicSecrets = (credential: string): ReadonlyArray<string> => {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(credential)) return []
  const decoded = Buffer.from(credential, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  const binary = [...decoded].some((char) => char < " " || char === "\u007f" || char === "\ufffd")
  return colon < 0 || binary ? [] : [decoded, decoded.slice(colon + 1)]
}

/**
 * The values of a `Cookie` header that may be credentials: under a secret's or a session's name
 * (`session`, `sid`, `PHPSESSID`, `auth_token`), or not a plain setting (`theme=dark` is one).
 * Never a flag or a number (`consent=true`, `n=3`), whose mask would garble every `true` and `3`.
 */
const cookieValues = (header: string): ReadonlyArray<string> =>
  header.split(";").flatMap((cookie) => {
    const equals = cookie.indexOf("=")
    const name = cookie.slice(0, Math.max(0, equals)).trim()
    const value = cookie
      .slice(equals + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
    if (equals < 0 || /^(?:true|false|yes|no|on|off|none|null|undefined|\d+)?$/i.test(value)) return []
    return isSecretQueryName(name) || /sess/i.test(name) || !isPlainSetting(value) ? [value] : []
  })

/** A named value's secrets: all of it when the name says so, else only if it is not a plain setting. */
const namedValue = (name: string, value: string): ReadonlyArray<string> => {
  if (value === "") return []
  if (/^https?:\/\//i.test(value)) return urlSecrets(value)
  if (isSecretName(name)) return credentialSecrets(name, value)
  // Anything else that is neither a plain setting nor prose (words with spaces) may be a key.
  return isPlainSetting(value) || /\s/.test(value) ? [] : [value]
}

/** The secrets in an `env` record: see `namedValue`. */
export const envSecrets = (env: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(env).flatMap(([name, value]) => namedValue(name, value))

/**
 * The secrets in literal header values: those under a secret-looking name as `credentialSecrets`
 * takes them apart (`Authorization`: the token, a Basic password; `Cookie`: its values), others
 * unless they are plain settings.
 */
export const headerSecrets = (headers: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(headers).flatMap(([name, value]) => namedValue(name, value))

/**
 * The secrets in a URL: its userinfo, the values of secret-looking query parameters (any name
 * `isSecretName` accepts, `apiKey`, `access_token`, and short ones URLs use for credentials:
 * `key`, `sig`, `code`, `session`, `sid`, `access`, `appid`…), and path segments shaped like
 * tokens (`/sk-…/sse`, a webhook's key).
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
    if (value !== "" && (isSecretQueryName(name) || looksLikeToken(value))) {
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
      found.push(...credentialSecrets(flag[1], next))
      return
    }
    const assigned = /^(?:--?)?([A-Za-z_][\w.-]*)=([\s\S]+)$/.exec(arg)
    if (assigned?.[1] !== undefined && assigned[2] !== undefined && isSecretName(assigned[1])) {
      found.push(...credentialSecrets(assigned[1], assigned[2]))
      return
    }
    const header = /^([A-Za-z][\w-]*)\s*:\s*(\S[\s\S]*)$/.exec(arg)
    if (header?.[1] !== undefined && header[2] !== undefined && isSecretName(header[1])) {
      found.push(...credentialSecrets(header[1], header[2]))
      return
    }
    const value = assigned?.[2] ?? arg
    if (/^https?:\/\//i.test(value)) found.push(...urlSecrets(value))
    else if (looksLikeToken(value)) found.push(value)
  })
  return found
}

/**
 * The secrets in a shell command (a `headersHelper`): `argSecrets` of its words, split as the shell
 * splits them (quotes, backslashes, `;`, `|`, `&`, redirections), so `--client-secret X` and
 * `API_KEY=X` are found as in a server's `args`. A `$VAR` is the shell's, a name and not a value.
 */
export const commandSecrets = (command: string): ReadonlyArray<string> =>
  argSecrets(shellWords(command)).filter((value) => !/^\$(?:\w+|\{[^}]*\})$/.test(value))

/** The words of a shell command, near enough to find its arguments (no expansions). */
const shellWords = (command: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let word: string | undefined
  let quote: string | undefined
  for (let at = 0; at < command.length; at++) {
    const char = command.charAt(at)
    const escaped = char === "\\" && quote !== "'" && at + 1 < command.length
    if (escaped) word = (word ?? "") + command.charAt(++at)
    else if (quote !== undefined) {
      if (char === quote) quote = undefined
      else word = (word ?? "") + char
    } else if (char === "'" || char === '"') {
      quote = char
      word ??= ""
    } else if (/[\s;|&()<>]/.test(char)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else word = (word ?? "") + char
  }
  if (word !== undefined) words.push(word)
  return words
}
