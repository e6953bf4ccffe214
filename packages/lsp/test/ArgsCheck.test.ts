import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as ArgsCheck from "../src/internal/argsCheck.ts"
import * as LspTools from "../src/LspTools.ts"

/** Values for one argument: right and wrong types, bounds, literals, and what JSON cannot carry. */
const pool: ReadonlyArray<unknown> = [
  "a.ts",
  "",
  "incoming",
  "subtypes",
  1,
  2,
  0,
  -1,
  1.5,
  2 ** 31 - 1,
  2 ** 31,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  null,
  undefined,
  {},
  []
]
const absent = Symbol("absent")

/** Every combination of pool values (or absence) over `names`, plus an unknown key on some. */
const inputs = (names: ReadonlyArray<string>): Array<{ [key: string]: unknown }> => {
  let rows: Array<{ [key: string]: unknown }> = [{}]
  for (const name of names) {
    rows = rows.flatMap((row) => [...pool, absent].map((value) => (value === absent ? row : { ...row, [name]: value })))
  }
  return rows.flatMap((row, i) => (i % 7 === 0 ? [row, { ...row, extra: 1 }] : [row]))
}

describe("ArgsCheck", () => {
  it("compiles for every LSP tool, and accepts exactly what the tool's Schema accepts", () => {
    for (const definition of LspTools.all) {
      const check = ArgsCheck.compile(LspTools.inputSchema(definition))
      assert.isDefined(check, definition.name)
      const schemaAccepts = Schema.is(definition.args)
      const names = Object.keys((LspTools.inputSchema(definition).properties ?? {}) as object)
      let accepted = 0
      for (const args of inputs(names)) {
        // Nulls are the Schema decoder's business (it drops them first): the check must pass on them.
        const hasNull = Object.values(args).includes(null)
        const fast = check?.(args) ?? false
        if (hasNull) assert.isFalse(fast, `${definition.name} ${JSON.stringify(args)}`)
        else assert.strictEqual(fast, schemaAccepts(args), `${definition.name} ${JSON.stringify(args)}`)
        if (fast) accepted++
      }
      assert.isAbove(accepted, 0, definition.name)
    }
  })

  it("gives up on what it does not know, so the Schema decides", () => {
    const object = (properties: object, extra: object = {}) => ({ type: "object", properties, ...extra })
    assert.isUndefined(ArgsCheck.compile({ type: "array" }))
    assert.isUndefined(ArgsCheck.compile(object({ a: { type: "string", pattern: "^x" } })))
    assert.isUndefined(ArgsCheck.compile(object({ a: { type: "number" } })))
    assert.isUndefined(ArgsCheck.compile(object({ a: { anyOf: [{ type: "string" }] } })))
    assert.isUndefined(ArgsCheck.compile(object({}, { additionalProperties: false })))
    assert.isUndefined(ArgsCheck.compile(object({}, { required: ["a"] })))
  })

  it("the validator returns accepted arguments as they are and still names bad ones", () => {
    const validate = LspTools.validator(LspTools.hover)
    const args = { file: "a.ts", line: 3, character: 5 }
    const decoded = validate(args)
    assert.isTrue(decoded._tag === "Success" && decoded.success === args)
    const bad = validate({ file: "a.ts", line: 0, character: 5 })
    assert.isTrue(bad._tag === "Failure" && bad.failure.includes('at ["line"]'))
  })
})
