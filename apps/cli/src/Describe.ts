/**
 * `toolvisor describe [CONFIG] TOOL`: one tool as a person reads it — its description, then one
 * line per argument (name, type, required, description) read from its JSON Schema, its
 * annotations, and the `call` line that would run it. Everything in it comes from the server, so
 * every line is escaped for the terminal and the `call` line is quoted for the shell it will be
 * pasted into.
 */
import type { Catalog } from "@toolvisor/runtime"
import * as Predicate from "effect/Predicate"
import * as Printable from "./Printable.ts"
import * as Shell from "./Shell.ts"

type Json = { readonly [key: string]: unknown }

const record = (u: unknown): Json => (Predicate.isObject(u) ? u : {})

/** A JSON Schema type in a few characters: `string`, `number[]`, `"a" | "b"`, `object`. */
const typeOf = (schema: Json): string => {
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ")
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type
  if (type === "array") return `${typeOf(record(schema.items))}[]`
  if (typeof type === "string") return type
  if (Array.isArray(schema.anyOf)) return schema.anyOf.map((s) => typeOf(record(s))).join(" | ")
  return "any"
}

const annotationWords: ReadonlyArray<readonly [string, string]> = [
  ["readOnlyHint", "read-only"],
  ["destructiveHint", "destructive"],
  ["idempotentHint", "idempotent"],
  ["openWorldHint", "open-world"]
]

/** The lines of an argument table: name, type, required, default and description. */
const argumentLines = (inputSchema: Json): ReadonlyArray<string> => {
  const properties = Object.entries(record(inputSchema.properties))
  const required = new Set(Array.isArray(inputSchema.required) ? inputSchema.required : [])
  if (properties.length === 0) return ["  (none)"]
  const rows = properties.map(([name, raw]) => {
    const schema = record(raw)
    const notes = [
      required.has(name) ? "required" : "optional",
      schema.default === undefined ? undefined : `default ${JSON.stringify(schema.default)}`
    ].filter((n) => n !== undefined)
    const description = typeof schema.description === "string" ? schema.description.split("\n")[0] : ""
    return [name, typeOf(schema), notes.join(", "), description ?? ""].map(Printable.line)
  })
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)))
  return rows.map((r) => `  ${r.map((cell, i) => (i < 3 ? cell.padEnd(widths[i] ?? 0) : cell)).join("  ")}`.trimEnd())
}

/** A placeholder argument object with every required argument, for the example `call` line. */
const example = (inputSchema: Json): string => {
  const required = Array.isArray(inputSchema.required) ? inputSchema.required : []
  const properties = record(inputSchema.properties)
  const sample = (schema: Json): unknown => {
    if (Array.isArray(schema.enum)) return schema.enum[0]
    if (schema.type === "number" || schema.type === "integer") return 0
    if (schema.type === "boolean") return false
    if (schema.type === "array") return []
    if (schema.type === "object") return {}
    return "…"
  }
  return JSON.stringify(
    Object.fromEntries(required.filter((n) => typeof n === "string").map((n) => [n, sample(record(properties[n]))]))
  )
}

/**
 * The whole description of one catalog entry. Its `call` line names `config` when the tool was
 * described from a config given on the command line, so it runs on the same toolsets.
 */
export const text = (entry: Catalog.Entry, config?: string): string => {
  const { tool } = entry
  const annotations = record(tool.annotations)
  const hints = annotationWords.filter(([key]) => annotations[key] === true).map(([, word]) => word)
  const title = tool.title === undefined ? "" : `  ${tool.title}`
  return [
    Printable.line(`${entry.name}  (toolset ${entry.toolset})${title}`),
    "",
    tool.description === undefined ? "(no description)" : Printable.lines(tool.description),
    "",
    "arguments:",
    ...argumentLines(tool.inputSchema),
    ...(hints.length === 0 ? [] : ["", `annotations: ${hints.join(", ")}`]),
    "",
    `call it: ${Shell.toolvisor("call", ...(config === undefined ? [] : [config]), entry.name, example(tool.inputSchema))}`
  ].join("\n")
}
