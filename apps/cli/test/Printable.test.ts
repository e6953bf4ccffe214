/**
 * What a server's text becomes on a terminal and in a pasted command line: every character that
 * acts, or prints nothing, shown as an escape that reads back as itself.
 */
import * as NodeChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import * as Printable from "../src/Printable.ts"
import * as Shell from "../src/Shell.ts"

/** Invisible or reordering characters a name may hide: zero-width, joiners, marks, BOM, separators, soft hyphen, a tag. */
const invisible = ["\u200b", "\u200d", "\u061c", "\ufeff", "\u2028", "\u2029", "\u00ad", "\u{e0041}", "\u202e"]

describe("Printable", () => {
  it("escapes format characters and separators as well as controls, in a line, in text and in JSON", () => {
    const name = `a${invisible.join("b")}c`
    const line = Printable.line(name)
    assert.strictEqual(
      line,
      "a\\u200bb\\u200db\\u061cb\\ufeffb\\u2028b\\u2029b\\xadb\\u{e0041}b\\u202ec",
      "every one escaped"
    )
    assert.notMatch(line, /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u)
    assert.strictEqual(Printable.lines(`x\n\ty${invisible[0]}`), "x\n\ty\\u200b", "line breaks and tabs kept")
    const json = Printable.json({ name })
    assert.notMatch(json, /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u)
    assert.deepStrictEqual(JSON.parse(json), { name }, "the same value once parsed")
  })

  it("a command line's $'…' word reads back in bash as the name itself, C1 and astral characters included", () => {
    const name = `evil_c1\u009b2J${invisible.join("")}'\\`
    const word = Shell.word(name)
    assert.notMatch(word, /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u)
    const echoed = NodeChildProcess.execFileSync("bash", ["-c", `printf %s ${word}`], { encoding: "utf8" })
    assert.strictEqual(echoed, name)
  })
})
