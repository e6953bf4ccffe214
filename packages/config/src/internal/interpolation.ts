/**
 * Variable expansion in the fields that carry commands, arguments, URLs and credentials, in every
 * spelling the supported hosts use: `${VAR}` and `${VAR:-default}` (shell, Claude Code),
 * `${env:VAR}` (Cursor, VS Code), `${env.VAR}` and `${env.VAR || 'default'}` (docker-agent's
 * JavaScript templates), `${input:id}` (VS Code), and the host-defined names such as
 * `${workspaceFolder}` and `${userHome}`. Every value taken from the environment or an input is
 * returned as a secret (unless plainly a setting, see `isSecret`), so the caller can mask it
 * wherever the config is shown. What the environment lacks (an unset variable, an input with no
 * value) is no fault of the file: the reference stays as written and is reported apart from the
 * text's own problems, so that only the toolset that needs it is held back.
 */

import { Redaction } from "@toolvisor/core"
import * as Predicate from "effect/Predicate"
import type * as AgentConfig from "../AgentConfig.ts"
import * as ConfigError from "../ConfigError.ts"

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
  /**
   * The file's host has no syntax for a default (VS Code): an unset variable's message suggests
   * none, since `${VAR:-default}` would break the file in that host.
   */
  readonly noDefaults?: boolean | undefined
  /**
   * The text is a secret's (its name says so: `DB_PASSWORD`, `Authorization`): a problem says
   * where in it, never what it holds. Elsewhere a problem quotes the text from the reference on,
   * never what comes before it (a token written in clear, then `${`).
   */
  readonly secret?: boolean | undefined
}

/** A variable (or VS Code input) the environment does not have, and what to do about it. */
export interface Missing {
  /** The variable's name, or `input:<id>`. */
  readonly variable: string
  readonly message: string
}

export interface Expansion<A> {
  readonly value: A
  /** Values that came from the environment or an input (never the defaults written in the file). */
  readonly secrets: ReadonlyArray<string>
  /** What is wrong with the text itself: a malformed or unterminated reference. */
  readonly problems: ReadonlyArray<string>
  /**
   * What the environment lacks: a variable that is not set, an input with no value. The
   * reference stays in the value as written: the text is fine, only this environment cannot run it.
   */
  readonly missing: ReadonlyArray<Missing>
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
  | { readonly _tag: "Missing"; readonly missing: Missing }
  | { readonly _tag: "Malformed" }

const fromEnv = (env: Env, variable: string, fallback: string | undefined, hint: string): Lookup => {
  const found = env[variable]
  if (fallback !== undefined && (found === undefined || found === "")) {
    return { _tag: "Found", value: fallback, secret: false }
  }
  if (found === undefined) return notSet(variable, hint)
  return { _tag: "Found", value: found, secret: isSecret(variable, found) }
}

const notSet = (variable: string, hint: string): Lookup => ({
  _tag: "Missing",
  missing: { variable, message: `Environment variable ${variable} is not set${hint}` }
})

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
    const hint = options.noDefaults === true ? "" : ` (write \${${variable}:-default} for a default)`
    return fromEnv(env, variable, fallback, hint)
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
    missing: {
      variable: `input:${id}`,
      message: `Input ${id}${about} has no value${known}: pass \`--input ${id}=VALUE\` or set ${inputVariable(id)}`
    }
  }
}

/**
 * Expands one string. `$$` is a literal `$`. As in the shell, the default of `${VAR:-default}`
 * applies when VAR is unset or empty. A reference to what is missing is left as written.
 */
export const expand = (text: string, env: Env, options: Options = {}): Expansion<string> => {
  const secrets: Array<string> = []
  const problems: Array<string> = []
  const missing: Array<Missing> = []
  const value = text.replace(
    reference,
    (match, body: string | undefined, closed: string | undefined, bare: string | undefined, offset: number) => {
      if (match === "$$") return "$"
      if (closed === undefined && bare === undefined) {
        problems.push(`Unterminated \`\${\` ${where(text, offset, options)}; write $$ for a literal $`)
        return match
      }
      if (bare !== undefined && options.bare !== true) return match
      const found = bare === undefined ? lookup(body ?? "", env, options) : fromEnv(env, bare, undefined, "")
      switch (found._tag) {
        case "Malformed":
          problems.push(
            `${options.secret === true ? `The reference ${where(text, offset, options)}` : `\`${Redaction.redact(match)}\``} is not a variable reference; use \${NAME}, \${NAME:-default}, \${env:NAME} or \${env.NAME}`
          )
          return match
        case "Missing":
          missing.push(found.missing)
          return match
        case "Found":
          if (found.secret) secrets.push(found.value)
          return found.value
      }
    }
  )
  return { value, secrets, problems, missing }
}

/** Where a problem is in `text`: quoted from `offset` on, cut, unless the text is a secret's. */
const where = (text: string, offset: number, options: Options): string => {
  if (options.secret === true)
    return `at character ${offset + 1} of the value (not shown: its name says it is a secret)`
  const from = text.slice(offset)
  return `in "${Redaction.redact(from.length > 40 ? `${from.slice(0, 40)}…` : from)}"`
}

/** Whether a value still holds a reference to something missing (see `Expansion.missing`). */
export const hasReference = (text: string): boolean => /\$\{[^}]*\}/.test(text)

export interface EntryExpansion {
  readonly value: unknown
  readonly secrets: ReadonlyArray<string>
  /** Each problem of the text, at the path of the string it was found in: the file's to fix. */
  readonly issues: ReadonlyArray<ConfigError.Issue>
  /** What the environment lacks, at the path of the string that needs it: the entry cannot run here. */
  readonly missing: ReadonlyArray<AgentConfig.Unresolved>
}

/**
 * The entry fields whose strings are expanded (every string inside them); `remote` and Zed's
 * `command` object are entered to reach theirs. `headersHelper` is not among them: it is a shell
 * command, and its shell expands `${VAR}` itself, quoting included — a value pasted into the
 * command's text first would be read as shell syntax.
 */
export const expandedFields: ReadonlyArray<string> = [
  "command",
  "args",
  "env",
  "cwd",
  "working_dir",
  "envFile",
  "url",
  "serverUrl",
  "httpUrl",
  "headers",
  "oauth",
  "env_file"
]

/** docker-agent's `callbackRedirectURL` names the port it listens on as `${callbackPort}`: not a variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the placeholder kept as written
const oauthBuiltins = { callbackPort: "${callbackPort}" }

/** How the strings of one field are read: `$VAR` only in `env`, where docker-agent reads it. */
const fieldOptions = (key: string, options: Options): Options =>
  key === "env"
    ? options
    : key === "oauth"
      ? { ...options, bare: false, builtins: { ...options.builtins, ...oauthBuiltins } }
      : { ...options, bare: false }

/**
 * Expands a raw (not yet decoded) toolset entry, so a problem in a reference is reported together
 * with the Schema's own issues and URL checks see the expanded value. Anything that is not a
 * string where a string belongs is left for the Schema to reject. `bare` applies to `env` values
 * only, where docker-agent expands them with Go's `os.Expand`.
 */
export const expandEntry = (entry: unknown, path: string, env: Env, options: Options = {}): EntryExpansion => {
  const secrets: Array<string> = []
  const issues: Array<ConfigError.Issue> = []
  const missing: Array<AgentConfig.Unresolved> = []
  const tree = (value: unknown, at: string, read: Options, key?: string): unknown => {
    if (typeof value === "string") {
      const expansion = expand(
        value,
        env,
        key !== undefined && Redaction.isSecretName(key) ? { ...read, secret: true } : read
      )
      secrets.push(...expansion.secrets)
      issues.push(...expansion.problems.map((message) => ({ path: at, message })))
      missing.push(...expansion.missing.map((lack) => ({ path: at, ...lack })))
      return expansion.value
    }
    if (Array.isArray(value)) return value.map((item, index) => tree(item, ConfigError.childPath(at, index), read))
    if (Predicate.isObject(value))
      return mapEntries(value, (key, item) => tree(item, ConfigError.childPath(at, key), read, key))
    return value
  }
  const fields = (value: unknown, at: string): unknown =>
    Predicate.isObject(value)
      ? mapEntries(value, (key, item) =>
          key === "remote" || (key === "command" && Predicate.isObject(item))
            ? fields(item, ConfigError.childPath(at, key))
            : expandedFields.includes(key) || (key === "path" && at.endsWith(".command"))
              ? tree(item, ConfigError.childPath(at, key), fieldOptions(key, options))
              : item
        )
      : value
  const value = fields(entry, path)
  return { value, secrets, issues, missing }
}

const mapEntries = (
  record: Readonly<Record<string, unknown>>,
  f: (key: string, value: unknown) => unknown
): Record<string, unknown> => Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(key, value)]))
