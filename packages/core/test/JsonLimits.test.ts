import { describe, expect, it } from "vitest"
import * as JsonLimits from "../src/JsonLimits.ts"

const nest = (n: number): unknown => {
  let v: unknown = 1
  for (let i = 0; i < n; i++) v = i % 2 === 0 ? [v] : { k: v }
  return v
}

describe("JsonLimits", () => {
  it("counts scalars as 0 and each array or object as one level", () => {
    expect(JsonLimits.depth(1)).toBe(0)
    expect(JsonLimits.depth(null)).toBe(0)
    expect(JsonLimits.depth([])).toBe(1)
    expect(JsonLimits.depth({ a: [1, { b: 2 }] })).toBe(3)
  })

  it("walks a value far deeper than the stack without overflowing, and stops at the limit", () => {
    const deep = nest(200_000)
    expect(JsonLimits.isTooDeep(deep)).toBe(true)
    expect(JsonLimits.depth(deep, 10)).toBe(11)
    expect(JsonLimits.isTooDeep(nest(JsonLimits.maxDepth))).toBe(false)
    expect(JsonLimits.isTooDeep(nest(JsonLimits.maxDepth + 1))).toBe(true)
  })

  it("measures JSON text without parsing it, skipping brackets inside strings", () => {
    expect(JsonLimits.textDepth('{"a":[1,{"b":"[[[{{{"}]}')).toBe(3)
    expect(JsonLimits.textDepth('"\\"[["')).toBe(0)
    expect(JsonLimits.textDepth("[".repeat(1_000_000), 64)).toBe(65)
  })
})
