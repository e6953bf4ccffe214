/**
 * From text to a document: YAML, or JSON with comments and trailing commas (JSONC, as VS Code,
 * Zed and Cursor write it). A syntax error names its location once and shows an excerpt of the
 * offending line. A config is someone else's file as often as not, so it is bounded before it is
 * built: nesting deeper than `JsonLimits.maxDepth` is refused at the place it goes too deep (a
 * recursive parser or decoder would overflow the stack), and so are YAML aliases that expand like
 * an alias bomb. Where readers of the same file could see different configs, the file is read as
 * its host reads it (`__proto__` is an ordinary key, YAML merge keys apply) or refused (a JSON key
 * written twice).
 */
import * as NodePath from "node:path"
import { JsonLimits } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Jsonc from "jsonc-parser"
import * as Yaml from "yaml"
import * as ConfigError from "../ConfigError.ts"

export type Syntax = "yaml" | "json"

/** How many alias expansions a YAML document may make (the `yaml` library's own default). */
export const maxAliasCount = 100

/** The most of a line an error shows: enough to see the mistake, never a whole minified file. */
export const excerptWidth = 80

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

/** Control characters would act on a terminal; tabs would misplace the caret. */
const printable = (line: string): string => line.replace(/\t/g, " ").replace(/\p{Cc}/gu, "?")

/**
 * `line N, column M` and the line with a caret under the column; a long line is cut to
 * `excerptWidth` characters around the column. An error found at a blank line (often the end of
 * the file) points at the end of the last line with text, where the cause is.
 */
const located = (text: string, line: number, column: number): string => {
  const lines = text.split(/\r?\n/)
  let at = line
  while (at > 1 && (lines[at - 1] ?? "").trim() === "") at -= 1
  const whole = lines[at - 1] ?? ""
  const col = at === line ? column : whole.length + 1
  const start = Math.max(0, Math.min(col - 1 - excerptWidth / 2, whole.length - excerptWidth))
  const end = Math.min(whole.length, start + excerptWidth)
  const shown = `${start > 0 ? "…" : ""}${printable(whole.slice(start, end))}${end < whole.length ? "…" : ""}`
  const caret = col - 1 - start + (start > 0 ? 1 : 0)
  return `line ${at}, column ${col}:\n    ${shown}\n    ${" ".repeat(Math.max(0, caret))}^`
}

/** `located` at a character offset. */
const locatedAt = (text: string, offset: number): string => {
  const before = text.slice(0, offset).split(/\r?\n/)
  return located(text, before.length, (before.at(-1)?.length ?? 0) + 1)
}

const fail = (source: string, message: string) => Effect.fail(ConfigError.make(source, [{ path: "", message }]))

const tooDeep = (source: string, text: string, offset: number) =>
  fail(source, `Refused: nested deeper than ${JsonLimits.maxDepth} levels at ${locatedAt(text, offset)}`)

/** jsonc-parser's `SyntaxKind` values it scans by (a const enum, which isolated modules cannot read). */
const kind = { openBrace: 1, closeBrace: 2, openBracket: 3, closeBracket: 4, eof: 17 } as const

/** Where a JSONC text first nests too deep, by its tokens (so comments and strings do not count). */
const jsonTooDeep = (text: string): number | undefined => {
  const scanner = Jsonc.createScanner(text, false)
  let level = 0
  for (let token: number = scanner.scan(); token !== kind.eof; token = scanner.scan()) {
    if (token === kind.openBrace || token === kind.openBracket) {
      level += 1
      if (level > JsonLimits.maxDepth) return scanner.getTokenOffset()
    } else if (token === kind.closeBrace || token === kind.closeBracket) {
      level -= 1
    }
  }
  return undefined
}

/** An object or array being built, with the keys the object has had so far. */
interface Open {
  readonly node: Record<string, unknown> | Array<unknown>
  readonly keys: Set<string>
}

/**
 * Builds the value as the hosts' `JSON.parse` reads it, which jsonc-parser's own `parse` does not:
 * there `__proto__` is assigned, which sets the object's prototype, so a file could hide a server
 * map no host sees; here it is an own key. A key written twice is refused, not last-wins: a
 * reviewer reads the first value and a host runs the last.
 */
const parseJson = (text: string, source: string): Effect.Effect<unknown, ConfigError.ConfigError> => {
  const deep = jsonTooDeep(text)
  if (deep !== undefined) return tooDeep(source, text, deep)
  let root: unknown
  let key = ""
  const open: Array<Open> = []
  let problem: ConfigError.Issue | undefined
  const add = (value: unknown) => {
    const parent = open.at(-1)
    if (parent === undefined) root = value
    else if (Array.isArray(parent.node)) parent.node.push(value)
    else Object.defineProperty(parent.node, key, { value, writable: true, enumerable: true, configurable: true })
  }
  const begin = (node: Open["node"]) => {
    add(node)
    open.push({ node, keys: new Set() })
  }
  const end = () => {
    open.pop()
  }
  Jsonc.visit(
    text,
    {
      onObjectBegin: () => begin({}),
      onArrayBegin: () => begin([]),
      onObjectEnd: end,
      onArrayEnd: end,
      onObjectProperty: (name, offset, _length, _line, _column, pathOf) => {
        const keys = open.at(-1)?.keys
        if (keys?.has(name)) {
          const path = [...pathOf(), name].reduce<string>(ConfigError.childPath, "")
          const message = `Duplicate key (readers differ on which of its values counts) at ${locatedAt(text, offset)}`
          problem ??= { path, message }
        }
        keys?.add(name)
        key = name
      },
      onLiteralValue: add,
      onError: (error, offset) => {
        const message = `Not valid JSON (${Jsonc.printParseErrorCode(error)}) at ${locatedAt(text, offset)}`
        problem ??= { path: "", message }
      }
    },
    { allowTrailingComma: true, disallowComments: false }
  )
  return problem === undefined ? Effect.succeed(root) : Effect.fail(ConfigError.make(source, [problem]))
}

interface YamlShape {
  /** Where a collection first nests too deep. */
  readonly tooDeep: number | undefined
  /** Where the first alias is: where to look when aliases expand too much. */
  readonly firstAlias: number | undefined
}

const isCollection = (token: Yaml.CST.Token): boolean =>
  token.type === "block-map" || token.type === "block-seq" || token.type === "flow-collection"

/** The collection that opens nesting level `maxDepth + 1` on the parser's stack of open nodes, if any. */
const tooDeepOn = (stack: ReadonlyArray<Yaml.CST.Token>): Yaml.CST.Token | undefined => {
  if (stack.length <= JsonLimits.maxDepth) return undefined
  let level = 0
  for (const token of stack) {
    if (isCollection(token)) level += 1
    if (level > JsonLimits.maxDepth) return token
  }
  return undefined
}

/**
 * Feeds the YAML to the `yaml` library's parser (which keeps its open nodes on a stack, not the
 * call stack) one token at a time, and stops as soon as that stack is too deep: a hostile file
 * costs only the part of it read up to there, and the recursive composer never sees it.
 */
const yamlShape = (text: string): YamlShape => {
  const parser = new Yaml.Parser()
  let firstAlias: number | undefined
  for (const lexeme of new Yaml.Lexer().lex(text)) {
    if (firstAlias === undefined && Yaml.CST.tokenType(lexeme) === "alias") firstAlias = parser.offset
    Array.from(parser.next(lexeme))
    const deep = tooDeepOn(parser.stack)
    if (deep !== undefined) return { tooDeep: deep.offset, firstAlias }
  }
  return { tooDeep: undefined, firstAlias }
}

/** The yaml library repeats the position in its message ("at line 3, column 5: …"); it is shown once here. */
const yamlMessage = (message: string): string =>
  (message.split("\n")[0] ?? message).replace(/\s*at line \d+, column \d+:?\s*$/, "").slice(0, 200)

const isNumberOrBoolean = (value: unknown): boolean => typeof value === "number" || typeof value === "boolean"

/**
 * docker-agent's Go YAML decodes a number or boolean into a string field as the text written, so
 * `args: [--python, 3.10]` passes `3.10` where a JavaScript number would pass `3.1`. Such scalars
 * of `args` lists and `env` maps become that text.
 */
const keepWrittenText = (document: Yaml.Document): void =>
  Yaml.visit(document, {
    Pair: (_, pair) => {
      const field = Yaml.isScalar(pair.key) ? pair.key.value : undefined
      const values =
        field === "args" && Yaml.isSeq(pair.value)
          ? pair.value.items
          : field === "env" && Yaml.isMap(pair.value)
            ? pair.value.items.map((entry) => entry.value)
            : []
      for (const value of values) {
        if (Yaml.isScalar(value) && isNumberOrBoolean(value.value) && value.source !== undefined) {
          value.value = value.source
        }
      }
    }
  })

const parseYaml = (text: string, source: string): Effect.Effect<unknown, ConfigError.ConfigError> => {
  const shape = yamlShape(text)
  if (shape.tooDeep !== undefined) return tooDeep(source, text, shape.tooDeep)
  // Merge keys (`<<: *base`), as docker-agent's Go YAML reads them; what they bring in is an
  // alias's expansion, counted against `maxAliasCount` like any other.
  const document = Yaml.parseDocument(text, { merge: true })
  const [error] = document.errors
  if (error !== undefined) {
    const where = error.linePos?.[0]
    const at = where === undefined ? "" : ` at ${located(text, where.line, where.col)}`
    return fail(source, `Not valid YAML (${yamlMessage(error.message)})${at}`)
  }
  keepWrittenText(document)
  const bomb = (cause: unknown) => cause instanceof ReferenceError && /alias count/i.test(cause.message)
  return Effect.try({
    try: (): unknown => document.toJS({ maxAliasCount }),
    catch: (cause) => {
      if (!bomb(cause)) return ConfigError.make(source, [{ path: "", message: `Not valid YAML (${String(cause)})` }])
      const at = shape.firstAlias === undefined ? "" : `; its first alias is at ${locatedAt(text, shape.firstAlias)}`
      const message = `Refused: its YAML aliases expand past ${maxAliasCount} nodes, as an alias bomb does${at}`
      return ConfigError.make(source, [{ path: "", message }])
    }
  }).pipe(
    // Aliases can nest what the text does not: an anchor holding an alias of a deeper anchor.
    Effect.filterOrFail(
      (value) => !JsonLimits.isTooDeep(value),
      () =>
        ConfigError.make(source, [
          { path: "", message: `Refused: nested deeper than ${JsonLimits.maxDepth} levels through its YAML aliases` }
        ])
    )
  )
}

/** Windows editors may start a UTF-8 file with a byte order mark, which JSON parsers do not skip. */
const withoutBom = (text: string): string => (text.startsWith("\uFEFF") ? text.slice(1) : text)

export const parse = (text: string, syntax: Syntax, source: string): Effect.Effect<unknown, ConfigError.ConfigError> =>
  syntax === "json" ? parseJson(withoutBom(text), source) : parseYaml(withoutBom(text), source)
