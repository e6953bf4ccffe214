/**
 * The one error a config can fail with: every problem found, each as a dotted path and a message a
 * user can act on. Schema issues are flattened into that form here, unknown fields get a
 * "did you mean", and values that came from the environment are masked before anything is shown.
 */
import { Levenshtein, Redaction } from "@toolvisor/core"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"

export const Issue = Schema.Struct({ path: Schema.String, message: Schema.String })
export type Issue = typeof Issue.Type

/** A config that cannot be used. `message` lists every issue as `path: message`, one per line. */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  source: Schema.String,
  /** The format the file was read as, when one was detected: every message names it. */
  format: Schema.optionalKey(Schema.String),
  issues: Schema.Array(Issue)
}) {
  override get message(): string {
    const count = this.issues.length === 1 ? "1 problem" : `${this.issues.length} problems`
    const readAs = this.format === undefined ? "" : `read as ${this.format}; `
    return [`Invalid config ${this.source} (${readAs}${count}):`, ...this.issues.map(formatIssue)].join("\n")
  }
}

const formatIssue = (issue: Issue): string => (issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`)

/**
 * Builds the error with every secret masked: the known credential shapes by core's `Redaction`, and
 * the exact values that came from the environment.
 */
export const make = (
  source: string,
  issues: ReadonlyArray<Issue>,
  secrets: ReadonlyArray<string> = [],
  format?: string
): ConfigError =>
  new ConfigError({
    source,
    ...(format === undefined ? {} : { format }),
    issues: maskIssues(issues, secrets)
  })

/** Masks the given values and every known credential shape in each message (warnings use it too). */
export const maskIssues = (issues: ReadonlyArray<Issue>, secrets: ReadonlyArray<string>): ReadonlyArray<Issue> => {
  const values = Redaction.make(secrets).values
  const mask = (text: string) => maskShapes(values(text))
  return issues.map((issue) => ({ path: issue.path, message: mask(issue.message) }))
}

/**
 * A `${...}` span is a reference written in the file and a backquoted span is a hint (`--input
 * token=VALUE`), never a value: both are shown as written.
 */
const reference = /(\$\{[^}]*\}|`[^`]*`)/

/** Masks credential shapes in the text between references and hints, so `${GITHUB_TOKEN:-default}` stays intact. */
const maskShapes = (text: string): string =>
  text
    .split(reference)
    .map((part, index) => (index % 2 === 1 ? part : Redaction.redact(part)))
    .join("")

const identifier = /^[A-Za-z_][\w-]*$/

/** Appends a key to a dotted path: `agents.root` + `toolsets` + 2 → `agents.root.toolsets[2]`; odd keys are quoted. */
export const childPath = (path: string, key: PropertyKey): string => {
  if (typeof key === "number") return `${path}[${key}]`
  const name = String(key)
  if (!identifier.test(name)) return `${path}[${JSON.stringify(name)}]`
  return path === "" ? name : `${path}.${name}`
}

/** The closest known key within edit distance 2 (case-insensitive), if any. */
export const didYouMean = (key: string, known: ReadonlyArray<string>): string | undefined => {
  const ranked = known
    .map((candidate) => ({ candidate, cost: Levenshtein.distance(key.toLowerCase(), candidate.toLowerCase()) }))
    .filter(({ cost }) => cost <= 2)
    .sort((a, b) => a.cost - b.cost)
  return ranked[0]?.candidate
}

const unknownField = (key: string, ast: SchemaAST.AST): string => {
  const known = SchemaAST.isObjects(ast) ? ast.propertySignatures.map((property) => String(property.name)) : []
  const suggestion = didYouMean(key, known)
  return suggestion === undefined
    ? `Unknown field \`${key}\``
    : `Unknown field \`${key}\`; did you mean \`${suggestion}\`?`
}

const standard = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Flattens a Schema issue tree into path/message pairs. Unknown keys are rewritten with a
 * suggestion (the formatter only says "Expected no excess property") and missing keys name the
 * field; everything else keeps Effect's own messages, including custom ones from checks.
 */
export const fromSchemaIssue = (issue: SchemaIssue.Issue): Array<Issue> => {
  const walk = (node: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): Array<Issue> => {
    switch (node._tag) {
      case "Pointer":
        return walk(node.issue, [...path, ...node.path])
      case "Encoding":
        return walk(node.issue, path)
      case "Composite":
        return node.issues.flatMap((inner) => walk(inner, path))
      case "AnyOf":
        // A union member that was tried: its issues are the ones to show.
        return node.issues.length > 0 ? node.issues.flatMap((inner) => walk(inner, path)) : format(node, path)
      case "UnexpectedKey":
        return [{ path: join(path), message: unknownField(String(path.at(-1)), node.ast) }]
      case "MissingKey":
        return [{ path: join(path), message: `Missing required field \`${String(path.at(-1))}\`` }]
      default:
        return format(node, path)
    }
  }
  const format = (node: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): Array<Issue> =>
    standard(node).issues.map((inner) => ({
      path: join([...path, ...(inner.path ?? []).map(toKey)]),
      message: inner.message
    }))
  return walk(issue, [])
}

const toKey = (segment: PropertyKey | { readonly key: PropertyKey }): PropertyKey =>
  typeof segment === "object" ? segment.key : segment

const join = (path: ReadonlyArray<PropertyKey>): string => path.reduce<string>(childPath, "")
