/**
 * `run --json` as a script drives it: commands answered concurrently with their ids, a tools
 * line only when the catalog changes, the end of stdin ending the run, and a hostile line (nested
 * too deep, or too long) refused at once with a typed error while the run goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { isAlive, mcpEntry, Session, writeConfig, yaml } from "./helpers.ts"

const ready = (toolset: string) => (line: { readonly [key: string]: unknown }) =>
  line.type === "status" && line.toolset === toolset && line.state === "Ready"

describe("toolvisor run --json", () => {
  it("answers a status while a slow call is in flight, each answer with its command's id", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 3000 }, id: "slow" })
      session.send({ cmd: "status", id: 7 })
      session.send({ cmd: "restart", toolset: "nope", id: "bad" })
      await session.waitFor((l) => l.type === "result" && l.id === 7, mark)
      await session.waitFor((l) => l.type === "error" && l.id === "bad" && l.tag === "UnknownToolset", mark)
      assert.isUndefined(
        session.json().find((l) => l.id === "slow"),
        "the status waited for the call"
      )
      const call = await session.waitFor((l) => l.type === "result" && l.id === "slow", mark)
      assert.include(JSON.stringify(call.result), "slept 3000")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("prints the catalog when it changes, never a listing of toolsets that were not started yet", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("a"), mcpEntry("b")])), "--json"])
    try {
      await session.waitFor((l) => l.type === "tools" && l.complete === true)
      const tools = session.json().filter((l) => l.type === "tools")
      assert.isAtMost(tools.length, 2)
      for (const line of tools) assert.notInclude(JSON.stringify(line.missing), '"Stopped"')
      const mark = session.lines.length
      session.send({ cmd: "call", tool: "a_add_tool", id: 1 })
      const changed = await session.waitFor((l) => l.type === "tools", mark)
      assert.include(JSON.stringify(changed.tools), "a_dynamic_1")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("the end of stdin ends the run after the last answer, and no server outlives it", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      const up = await session.waitFor(ready("fx"))
      session.send({ cmd: "call", tool: "fx_echo", args: { message: "last words" }, id: 1 })
      session.child.stdin.end()
      assert.strictEqual(await session.exited(), 0, session.stderr)
      assert.include(JSON.stringify(session.json().find((l) => l.id === 1)), "last words")
      assert.isFalse(isAlive(Number(up.pid)))
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("refuses a command nested too deep or too long with a typed error line, and keeps answering", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`
      session.child.stdin.write(`{"cmd":"call","tool":"fx_echo","args":{"message":"x","deep":${deep}},"id":"deep"}\n`)
      const tooDeep = await session.waitFor((l) => l.type === "error", mark)
      assert.strictEqual(tooDeep.tag, "TooDeep")
      assert.include(String(tooDeep.message), "64")
      const long = `{"cmd":"status","pad":"${"x".repeat(16 * 1024 * 1024)}"}`
      session.child.stdin.write(`${long}\n`)
      const tooLarge = await session.waitFor((l) => l.type === "error" && l.tag === "TooLarge", mark)
      assert.include(String(tooLarge.message), String(long.length))
      session.send({ cmd: "status", id: "after" })
      await session.waitFor((l) => l.type === "result" && l.id === "after", mark)
    } finally {
      session.child.kill("SIGKILL")
    }
  }, 120_000)
})
