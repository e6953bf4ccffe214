/**
 * From text to a document: YAML, or JSON with comments and trailing commas (JSONC, as VS Code,
 * Zed and Cursor write it). A syntax error names its location once and shows the offending line.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Jsonc from "jsonc-parser"
import * as Yaml from "yaml"
import * as ConfigError from "./ConfigError.ts"

export type Syntax = "yaml" | "json"

/** Leading `//` or block comments are allowed before a JSONC document's first brace. */
const jsonStart = /^(?:\s*\/\/[^\n]*\n|\s*\/\*[\s\S]*?\*\/)*\s*[{[]/

export const guess = (text: string): Syntax => (jsonStart.test(text) ? "json" : "yaml")

/** The file's syntax by extension; other names are guessed from the content. */
export const syntaxOf = (path: string, text: string): Syntax => {
  const extension = NodePath.extname(path).toLowerCase()
  if (extension === ".json" || extension === ".jsonc") return "json"
  if (extension === ".yaml" || extension === ".yml") return "yaml"
  return guess(text)
}

/**
 * `line N, column M` and the line itself with a caret under the column. An error found at a blank
 * line (often the end of the file) points at the end of the last line with text, where the cause is.
 */
const located = (text: string, line: number, column: number): string => {
  const lines = text.split(/\r?\n/)
  let at = line
  while (at > 1 && (lines[at - 1] ?? "").trim() === "") at -= 1
  const shown = (lines[at - 1] ?? "").replace(/\t/g, " ")
  const col = at === line ? column : shown.length + 1
  return `line ${at}, column ${col}:\n    ${shown}\n    ${" ".repeat(Math.max(0, col - 1))}^`
}

const fail = (source: string, message: string) => Effect.fail(ConfigError.make(source, [{ path: "", message }]))

const parseJson = (text: string, source: string): Effect.Effect<unknown, ConfigError.ConfigError> => {
  const errors: Array<Jsonc.ParseError> = []
  const value: unknown = Jsonc.parse(text, errors, { allowTrailingComma: true, disallowComments: false })
  const [first] = errors
  if (first === undefined) return Effect.succeed(value)
  const before = text.slice(0, first.offset).split(/\r?\n/)
  const line = before.length
  const column = (before.at(-1)?.length ?? 0) + 1
  return fail(source, `Not valid JSON (${Jsonc.printParseErrorCode(first.error)}) at ${located(text, line, column)}`)
}

/** The yaml library repeats the position in its message ("at line 3, column 5: …"); it is shown once here. */
const yamlMessage = (message: string): string =>
  (message.split("\n")[0] ?? message).replace(/\s*at line \d+, column \d+:?\s*$/, "")

const parseYaml = (text: string, source: string): Effect.Effect<unknown, ConfigError.ConfigError> => {
  const document = Yaml.parseDocument(text)
  const [error] = document.errors
  if (error === undefined) return Effect.succeed(document.toJS())
  const where = error.linePos?.[0]
  const at = where === undefined ? "" : ` at ${located(text, where.line, where.col)}`
  return fail(source, `Not valid YAML (${yamlMessage(error.message)})${at}`)
}

export const parse = (text: string, syntax: Syntax, source: string): Effect.Effect<unknown, ConfigError.ConfigError> =>
  syntax === "json" ? parseJson(text, source) : parseYaml(text, source)
