/** The catalogs' columns: names shown whole, one hostile name not widening every row. */
import { assert, describe, it } from "@effect/vitest"
import * as Output from "../src/Output.ts"

describe("Output.columns", () => {
  it("aligns the rows on the names that fit; a name past its share overflows its own row only", () => {
    const long = `mail_${"x".repeat(195)}`
    const lines = Output.columns(
      [
        ["fx_echo", "fx", "Echoes"],
        [long, "hostile", "Long"],
        ["fx_sleep", "fx", "Sleeps"]
      ],
      120
    )
    assert.deepStrictEqual(lines[0], "fx_echo   fx       Echoes")
    assert.deepStrictEqual(lines[2], "fx_sleep  fx       Sleeps")
    // Whole, as a call must name it, and followed by its other cells.
    assert.strictEqual(lines[1]?.startsWith(`${long}  hostile`), true)
  })
})
