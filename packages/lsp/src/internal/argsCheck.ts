/**
 * Accepts a tool's arguments in a few property reads. Schema's decoder walks a general AST: run
 * before every request, on a CPU that has just woken from waiting for the server, it took about
 * 20 µs of a 1 ms hover. The arguments of every LSP tool are a flat object of strings, integers,
 * booleans and string literals, which this checks directly.
 *
 * It only ever accepts what the Schema accepts: it is built from the Schema's own JSON Schema,
 * gives up (`undefined`) on any keyword it does not know, and leaves a rejection to the Schema
 * decoder, whose message names each bad argument. Explicit nulls are left to it too, since it
 * drops them before decoding.
 */
import * as Predicate from "effect/Predicate"

export type Check = (args: { readonly [key: string]: unknown }) => boolean

type Field = (value: unknown) => boolean

/** Keywords that document a field without constraining it. */
const annotations = new Set(["description", "title", "examples", "default"])

const keysWithin = (schema: object, known: ReadonlyArray<string>) =>
  Object.keys(schema).every((key) => annotations.has(key) || known.includes(key))

const numberOr = (value: unknown, fallback: number): number | undefined =>
  value === undefined ? fallback : typeof value === "number" ? value : undefined

const field = (schema: { readonly [key: string]: unknown }): Field | undefined => {
  switch (schema.type) {
    case "string": {
      const { enum: literals } = schema
      if (literals !== undefined) {
        if (!keysWithin(schema, ["type", "enum"]) || !Array.isArray(literals)) return undefined
        return (value) => typeof value === "string" && literals.includes(value)
      }
      const minLength = numberOr(schema.minLength, 0)
      if (!keysWithin(schema, ["type", "minLength"]) || minLength === undefined) return undefined
      return (value) => typeof value === "string" && value.length >= minLength
    }
    case "integer": {
      const minimum = numberOr(schema.minimum, Number.MIN_SAFE_INTEGER)
      const maximum = numberOr(schema.maximum, Number.MAX_SAFE_INTEGER)
      if (!keysWithin(schema, ["type", "minimum", "maximum"]) || minimum === undefined || maximum === undefined) {
        return undefined
      }
      return (value) => Number.isSafeInteger(value) && (value as number) >= minimum && (value as number) <= maximum
    }
    case "boolean":
      return keysWithin(schema, ["type"]) ? (value) => typeof value === "boolean" : undefined
    default:
      return undefined
  }
}

/** A check for arguments that `schema` (a tool's input JSON Schema) describes, if it is a flat one. */
export const compile = (schema: { readonly [key: string]: unknown }): Check | undefined => {
  const { properties, required = [] } = schema
  if (
    schema.type !== "object" ||
    !keysWithin(schema, ["type", "properties", "required", "additionalProperties"]) ||
    (schema.additionalProperties !== undefined && schema.additionalProperties !== true) ||
    !Array.isArray(required)
  ) {
    return undefined
  }
  const fields: Array<{ readonly name: string; readonly check: Field; readonly required: boolean }> = []
  for (const [name, property] of Object.entries(Predicate.isObject(properties) ? properties : {})) {
    const check = Predicate.isObject(property) ? field(property) : undefined
    if (check === undefined) return undefined
    fields.push({ name, check, required: required.includes(name) })
  }
  if (required.some((name) => !fields.some((known) => known.name === name))) return undefined
  // An indexed loop: the iterator protocol costs more than the checks on code that runs rarely
  // enough to stay unoptimized, which is how an agent calls tools.
  return (args) => {
    for (let i = 0; i < fields.length; i++) {
      const { name, check, required } = fields[i] as (typeof fields)[number]
      if (!Object.hasOwn(args, name)) {
        if (required) return false
      } else if (!check(args[name])) {
        return false
      }
    }
    return true
  }
}
