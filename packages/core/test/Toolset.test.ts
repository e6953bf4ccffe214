import { assert, describe, it } from "@effect/vitest"
import * as Toolset from "../src/Toolset.ts"

describe("Toolset", () => {
  it("stripNulls passes arguments without a null on as they are, and drops only the null-valued keys", () => {
    const clean = { a: "x", b: 0, c: false, d: undefined, e: { f: null } }
    assert.strictEqual(Toolset.stripNulls(clean), clean, "no copy when there is nothing to strip")
    assert.deepStrictEqual(Toolset.stripNulls({ a: "x", b: null, c: 0, d: null }), { a: "x", c: 0 })
    const inherited: { readonly [key: string]: unknown } = Object.create({ fromPrototype: null })
    assert.strictEqual(Toolset.stripNulls(inherited), inherited, "only own keys count")
  })

  it("isSafeToRepeat holds for read-only and idempotent tools only", () => {
    const tool = (annotations: Toolset.ToolAnnotations | undefined): Toolset.Tool => ({
      name: "t",
      inputSchema: { type: "object" },
      annotations
    })
    assert.isTrue(Toolset.isSafeToRepeat(tool({ readOnlyHint: true })))
    assert.isTrue(Toolset.isSafeToRepeat(tool({ idempotentHint: true })))
    assert.isFalse(Toolset.isSafeToRepeat(tool({ destructiveHint: false })))
    assert.isFalse(Toolset.isSafeToRepeat(tool(undefined)))
    assert.isFalse(Toolset.isSafeToRepeat(undefined))
  })
})
