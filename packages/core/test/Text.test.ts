import { assert, describe, it } from "@effect/vitest"
import * as HttpUrl from "../src/internal/httpUrl.ts"
import * as Levenshtein from "../src/internal/levenshtein.ts"

describe("the small shared helpers", () => {
  it("Levenshtein.distance counts single-character edits", () => {
    assert.strictEqual(Levenshtein.distance("mcp", "mpc"), 2)
    assert.strictEqual(Levenshtein.distance("toolsets", "toolset"), 1)
    assert.strictEqual(Levenshtein.distance("", "abc"), 3)
    assert.strictEqual(Levenshtein.distance("same", "same"), 0)
  })

  it("Levenshtein.distance with a bound gives the exact distance within it, and past it any larger number, at once", () => {
    assert.strictEqual(Levenshtein.distance("toolsets", "toolset", 2), 1)
    assert.strictEqual(Levenshtein.distance("kitten", "sitting", 3), 3)
    assert.isAbove(Levenshtein.distance("kitten", "sitting", 2), 2)
    // A hostile name: the whole product of the lengths took seconds; the band takes a row's width.
    const started = performance.now()
    assert.isAbove(Levenshtein.distance("q".repeat(20_000), "p".repeat(20_000), 5), 5)
    assert.isAbove(Levenshtein.distance("q".repeat(100_000), "x", 40), 40)
    assert.isBelow(performance.now() - started, 1_000)
  })

  it("HttpUrl.is takes absolute http and https URLs only", () => {
    assert.isTrue(HttpUrl.is("https://example.com/mcp"))
    assert.isTrue(HttpUrl.is("http://127.0.0.1:8808/mcp"))
    assert.isFalse(HttpUrl.is("ftp://example.com"))
    assert.isFalse(HttpUrl.is("/relative/path"))
    assert.isFalse(HttpUrl.is("not a url"))
  })
})
