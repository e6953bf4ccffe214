import { assert, describe, it } from "@effect/vitest"
import * as HttpUrl from "../src/HttpUrl.ts"
import * as Levenshtein from "../src/Levenshtein.ts"

describe("the small shared helpers", () => {
  it("Levenshtein.distance counts single-character edits", () => {
    assert.strictEqual(Levenshtein.distance("mcp", "mpc"), 2)
    assert.strictEqual(Levenshtein.distance("toolsets", "toolset"), 1)
    assert.strictEqual(Levenshtein.distance("", "abc"), 3)
    assert.strictEqual(Levenshtein.distance("same", "same"), 0)
  })

  it("HttpUrl.is takes absolute http and https URLs only", () => {
    assert.isTrue(HttpUrl.is("https://example.com/mcp"))
    assert.isTrue(HttpUrl.is("http://127.0.0.1:8808/mcp"))
    assert.isFalse(HttpUrl.is("ftp://example.com"))
    assert.isFalse(HttpUrl.is("/relative/path"))
    assert.isFalse(HttpUrl.is("not a url"))
  })
})
