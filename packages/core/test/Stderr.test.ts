/**
 * The stderr tail masks before it cuts: a line longer than `maxLineBytes` is cut after its known
 * secrets and credential shapes are masked, so a secret the cut falls in shows no part of itself.
 */
import * as NodeStream from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import * as Stderr from "../src/internal/stderr.ts"
import * as Redaction from "../src/Redaction.ts"

const secret = "Zx9kQ2mP7vL4nR8tY1wE"

/** The lines a tail keeps of `text`, written in one chunk. */
const tailOf = (text: string, redactor: Redaction.Redactor) => {
  const tail = new Stderr.Tail(10, redactor)
  const stream = new NodeStream.PassThrough()
  tail.read(stream)
  stream.write(Buffer.from(text))
  tail.stop()
  return tail.lines()
}

describe("Stderr.Tail", () => {
  it("masks a known secret that the cut at maxLineBytes falls in, wherever it falls", () => {
    const redactor = Redaction.make([secret])
    for (const before of [Stderr.maxLineBytes - 19, Stderr.maxLineBytes - 1, Stderr.maxLineBytes - 10]) {
      const [line = ""] = tailOf(`${"x".repeat(before)}${secret} and more\n`, redactor)
      assert.notInclude(line, secret.slice(0, 4), `cut ${Stderr.maxLineBytes - before} bytes into the secret`)
      assert.isAtMost(Buffer.byteLength(line), Stderr.maxLineBytes + 40)
      assert.strictEqual(line.slice(0, before + 1), `${"x".repeat(before)}*`, "the mask stands where the secret began")
    }
  })

  it("masks the beginning of a secret longer than what is kept past the cut", () => {
    const long = `Lk${"7qW3".repeat(600)}`
    const redactor = Redaction.make([long])
    const [line = ""] = tailOf(`${"x".repeat(Stderr.maxLineBytes - 30)}${long}\n`, redactor)
    assert.notInclude(line, long.slice(0, 4))
  })

  it("masks a credential shape the cut falls in", () => {
    const [line = ""] = tailOf(
      `${"x".repeat(Stderr.maxLineBytes - 28)} Authorization: Bearer abcdef0123456789\n`,
      Redaction.none
    )
    assert.notInclude(line, "abc")
  })

  it("masks the lines of a multi-line secret, each shown on a line of its own", () => {
    const pem =
      "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\nq8Zr5Tb3Wm9Kp2Lx7Nv4\n-----END PRIVATE KEY-----\n"
    const lines = tailOf(`loaded credential ${pem}`, Redaction.make([pem]))
    assert.deepStrictEqual(lines, ["loaded credential ***", "***", "***", "***"])
  })

  it("counts what it does not show of a long line, and keeps a short line whole", () => {
    const lines = tailOf(`${"y".repeat(5000)}\nshort line\n`, Redaction.none)
    assert.deepStrictEqual(lines, [`${"y".repeat(Stderr.maxLineBytes)}… (4000 more bytes)`, "short line"])
  })
})
