/**
 * Variable expansion in the fields that carry commands, arguments, URLs and credentials, in every
 * spelling the supported hosts use: `${VAR}` and `${VAR:-default}` (shell, Claude Code),
 * `${env:VAR}` (Cursor, VS Code), `${env.VAR}` and `${env.VAR || 'default'}` (docker-agent's
 * JavaScript templates), `${input:id}` (VS Code), and the host-defined names such as
 * `${workspaceFolder}` and `${userHome}`. Every value taken from the environment or an input is
 * returned as a secret (unless plainly a setting, see `isSecret`), so the caller can mask it
 * wherever the config is shown.
 */

import { Redaction } from "@toolvisor/core"
import * as Predicate from "effect/Predicate"
import * as ConfigError from "./ConfigError.ts"

export type Env = Readonly<Record<string, string | undefined>>

/** A VS Code `inputs` entry: what to ask for, and the value given on the command line if any. */
export interface Input {
  readonly description?: string | undefined
  readonly value?: string | undefined
  /** VS Code `password: true`: the value is a secret. */
  readonly password?: boolean | undefined
}

export interface Options {
  /** Names a host defines itself, such as `workspaceFolder`, `userHome`, `CLAUDE_PLUGIN_ROOT`. */
  readonly builtins?: Readonly<Record<string, string>> | undefined
  /** VS Code `inputs`, by id. */
  readonly inputs?: ReadonlyMap<string, Input> | undefined
  /** Go's `os.Expand` form `$VAR` (docker-agent's `env` values); elsewhere a lone `$` stays as written. */
  readonly bare?: boolean | undefined
}

export interface Expansion<A> {
  readonly value: A
  /** Values that came from the environment or an input (never the defaults written in the file). */
  readonly secrets: ReadonlyArray<string>
  /** What could not be expanded: a missing variable, a malformed reference. */
  readonly problems: ReadonlyArray<string>
}

const reference = /\$\$|\$\{([^}]*)(\})?|\$([A-Za-z_][A-Za-z0-9_]*)/g
const name = "[A-Za-z_][A-Za-z0-9_]*"
const shellForm = new RegExp(`^(${name})(?::-([\\s\\S]*))?$`)
const colonForm = new RegExp(`^env:(${name})$`)
const jsForm = new RegExp(`^\\s*env\\.(${name})\\s*(?:\\|\\|\\s*(?:'([^']*)'|"([^"]*)"))?\\s*$`)
const inputForm = /^input:([\w.-]+)$/

/** `--input id=value` and `TOOLVISOR_INPUT_<ID>` both supply a VS Code input; this is the variable's name. */
export const inputVariable = (id: string): string => `TOOLVISOR_INPUT_${id.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`

type Lookup =
  | { readonly _tag: "Found"; readonly value: string; readonly secret: boolean }
  | { readonly _tag: "Missing"; readonly problem: string }
  | { readonly _tag: "Malformed" }

const fromEnv = (env: Env, variable: string, fallback: string | undefined, hint: string): Lookup => {
  const found = env[variable]
  if (fallback !== undefined && (found === undefined || found === "")) {
    return { _tag: "Found", value: fallback, secret: false }
  }
  if (found === undefined) return { _tag: "Missing", problem: `Environment variable ${variable} is not set${hint}` }
  return { _tag: "Found", value: found, secret: isSecret(variable, found) }
}

/**
 * A value from the environment is a secret unless it is plainly a setting (a path, a number, a
 * word such as `debug`) under a name that does not say otherwise: `${HOME}` masked in every
 * result would garble each path an agent reads, while `${API_KEY}` is masked whatever it holds.
 */
const isSecret = (name: string, value: string, password = false): boolean =>
  value !== "" && (password || Redaction.isSecretName(name) || !Redaction.isPlainSetting(value))

const lookup = (body: string, env: Env, options: Options): Lookup => {
  const builtin = options.builtins?.[body]
  if (builtin !== undefined) return { _tag: "Found", value: builtin, secret: false }
  const shell = shellForm.exec(body)
  if (shell !== null) {
    const [, variable = "", fallback] = shell
    return fromEnv(env, variable, fallback, ` (write \${${variable}:-default} for a default)`)
  }
  const colon = colonForm.exec(body)
  if (colon !== null) return fromEnv(env, colon[1] ?? "", undefined, "")
  const js = jsForm.exec(body)
  if (js !== null) {
    const [, variable = "", single, double] = js
    return fromEnv(env, variable, single ?? double, ` (write \${env.${variable} || 'default'} for a default)`)
  }
  const input = inputForm.exec(body)
  if (input !== null) return fromInput(input[1] ?? "", env, options)
  return { _tag: "Malformed" }
}

const fromInput = (id: string, env: Env, options: Options): Lookup => {
  const declared = options.inputs?.get(id)
  const value = declared?.value ?? env[inputVariable(id)]
  if (value !== undefined) return { _tag: "Found", value, secret: isSecret(id, value, declared?.password === true) }
  const about = declared?.description === undefined ? "" : ` ("${declared.description}")`
  const known = declared === undefined ? "; it is not declared under inputs" : ""
  return {
    _tag: "Missing",
    problem: `Input ${id}${about} has no value${known}: pass \`--input ${id}=VALUE\` or set ${inputVariable(id)}`
  }
}

/**
 * Expands one string. `$$` is a literal `$`. As in the shell, the default of `${VAR:-default}`
 * applies when VAR is unset or empty.
 */
export const expand = (text: string, env: Env, options: Options = {}): Expansion<string> => {
  const secrets: Array<string> = []
  const problems: Array<string> = []
  const value = text.replace(
    reference,
    (match, body: string | undefined, closed: string | undefined, bare: string | undefined) => {
      if (match === "$$") return "$"
      if (bare !== undefined) {
        if (options.bare !== true) return match
        const found = fromEnv(env, bare, undefined, "")
        if (found._tag !== "Found") {
          problems.push(`Environment variable ${bare} is not set`)
          return ""
        }
        if (found.secret) secrets.push(found.value)
        return found.value
      }
      if (closed === undefined) {
        problems.push(`Unterminated \`\${\` in "${text.slice(0, 40)}"; write $$ for a literal $`)
        return match
      }
      const found = lookup(body ?? "", env, options)
      switch (found._tag) {
        case "Malformed":
          problems.push(
            `\`${match}\` is not a variable reference; use \${NAME}, \${NAME:-default}, \${env:NAME} or \${env.NAME}`
          )
          return match
        case "Missing":
          problems.push(found.problem)
          return ""
        case "Found":
          if (found.secret) secrets.push(found.value)
          return found.value
      }
    }
  )
  return { value, secrets, problems }
}

export interface EntryExpansion {
  readonly value: unknown
  readonly secrets: ReadonlyArray<string>
  /** Each problem at the path of the string it was found in. */
  readonly issues: ReadonlyArray<ConfigError.Issue>
}

/** The entry fields whose strings are expanded; `remote` is entered to reach its `url` and `headers`. */
const expandedFields = new Set([
  "command",
  "args",
  "env",
  "url",
  "serverUrl",
  "httpUrl",
  "headers",
  "cwd",
  "working_dir",
  "envFile",
  "env_file"
])

/**
 * Expands a raw (not yet decoded) toolset entry, so a missing variable is reported together with
 * the Schema's own issues and URL checks see the expanded value. Anything that is not a string
 * where a string belongs is left for the Schema to reject. `bare` applies to `env` values only,
 * where docker-agent expands them with Go's `os.Expand`.
 */
export const expandEntry = (entry: unknown, path: string, env: Env, options: Options = {}): EntryExpansion => {
  const secrets: Array<string> = []
  const issues: Array<ConfigError.Issue> = []
  const tree = (value: unknown, at: string, bare: boolean): unknown => {
    if (typeof value === "string") {
      const expansion = expand(value, env, { ...options, bare })
      secrets.push(...expansion.secrets)
      issues.push(...expansion.problems.map((message) => ({ path: at, message })))
      return expansion.value
    }
    if (Array.isArray(value)) return value.map((item, index) => tree(item, ConfigError.childPath(at, index), bare))
    if (Predicate.isObject(value))
      return mapEntries(value, (key, item) => tree(item, ConfigError.childPath(at, key), bare))
    return value
  }
  const fields = (value: unknown, at: string): unknown =>
    Predicate.isObject(value)
      ? mapEntries(value, (key, item) =>
          key === "remote" || (key === "command" && Predicate.isObject(item))
            ? fields(item, ConfigError.childPath(at, key))
            : expandedFields.has(key) || (key === "path" && at.endsWith(".command"))
              ? tree(item, ConfigError.childPath(at, key), key === "env" && options.bare === true)
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
