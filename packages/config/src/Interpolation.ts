/**
 * `${VAR}` and `${VAR:-default}` expansion from the environment, in the fields that carry
 * commands, arguments, URLs and credentials. Every value taken from the environment is returned
 * as a secret, so the caller can mask it wherever the config is shown.
 */
import * as ConfigError from "./ConfigError.ts"

export type Env = Readonly<Record<string, string | undefined>>

export interface Expansion<A> {
  readonly value: A
  /** Values that came from the environment (never the defaults written in the file). */
  readonly secrets: ReadonlyArray<string>
  /** What could not be expanded: a missing variable, a malformed reference. */
  readonly problems: ReadonlyArray<string>
}

const reference = /\$\$|\$\{([^}]*)(\})?/g
const variable = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/

/**
 * Expands one string. `$$` is a literal `$`; a lone `$` stays as written. As in the shell, the
 * default of `${VAR:-default}` applies when VAR is unset or empty.
 */
export const expand = (text: string, env: Env): Expansion<string> => {
  const secrets: Array<string> = []
  const problems: Array<string> = []
  const value = text.replace(reference, (match, body: string | undefined, closed: string | undefined) => {
    if (match === "$$") return "$"
    if (closed === undefined) {
      problems.push(`Unterminated \`\${\` in "${text.slice(0, 40)}"; write $$ for a literal $`)
      return match
    }
    const parsed = variable.exec(body ?? "")
    if (parsed === null) {
      problems.push(`\`${match}\` is not a variable reference; use \${NAME} or \${NAME:-default}`)
      return match
    }
    const [, name = "", fallback] = parsed
    const found = env[name]
    if (fallback !== undefined && (found === undefined || found === "")) return fallback
    if (found === undefined) {
      problems.push(`Environment variable ${name} is not set (write \${${name}:-default} for a default)`)
      return ""
    }
    if (found !== "") secrets.push(found)
    return found
  })
  return { value, secrets, problems }
}

export interface EntryExpansion {
  readonly value: unknown
  readonly secrets: ReadonlyArray<string>
  /** Each problem at the path of the string it was found in. */
  readonly issues: ReadonlyArray<ConfigError.Issue>
}

/** The entry fields whose strings are expanded; `remote` is entered to reach its `url` and `headers`. */
const expandedFields = new Set(["command", "args", "env", "url", "headers"])

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Expands a raw (not yet decoded) toolset entry, so a missing variable is reported together with
 * the Schema's own issues and URL checks see the expanded value. Anything that is not a string
 * where a string belongs is left for the Schema to reject.
 */
export const expandEntry = (entry: unknown, path: string, env: Env): EntryExpansion => {
  const secrets: Array<string> = []
  const issues: Array<ConfigError.Issue> = []
  const tree = (value: unknown, at: string): unknown => {
    if (typeof value === "string") {
      const expansion = expand(value, env)
      secrets.push(...expansion.secrets)
      issues.push(...expansion.problems.map((message) => ({ path: at, message })))
      return expansion.value
    }
    if (Array.isArray(value)) return value.map((item, index) => tree(item, ConfigError.childPath(at, index)))
    if (isRecord(value)) return mapEntries(value, (key, item) => tree(item, ConfigError.childPath(at, key)))
    return value
  }
  const fields = (value: unknown, at: string): unknown =>
    isRecord(value)
      ? mapEntries(value, (key, item) =>
          key === "remote"
            ? fields(item, ConfigError.childPath(at, key))
            : expandedFields.has(key)
              ? tree(item, ConfigError.childPath(at, key))
              : item
        )
      : value
  const value = fields(entry, path)
  return { value, secrets, issues }
}

const mapEntries = (
  record: Readonly<Record<string, unknown>>,
  f: (key: string, value: unknown) => unknown
): Record<string, unknown> => Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(key, value)]))
