/**
 * The live view's frame with hostile text in every part of it — a toolset named with a newline
 * and an escape sequence, an error that sets the title, event lines and a page of a command's
 * output that clear the screen, a typed C1 character — keeps its shape (exactly `height` lines)
 * and lets no control character through but its own colours. At 80 columns, with the names a
 * new user gives the servers of the README, every toolset's PID stays on screen.
 */
import { assert, describe, it } from "@effect/vitest"
import type { State } from "@toolvisor/core"
import * as Screen from "../src/Screen.ts"

const esc = "\u001b"
const hostile = `${esc}[2J${esc}]0;pwned\u0007\u009b31m\u202e`

const snapshot = (name: string, state: State.State, error?: string, pid?: number): State.StatusSnapshot => ({
  name,
  kind: "mcp-stdio",
  state,
  since: 0,
  restarts: 0,
  attempt: 0,
  toolsVersion: 0,
  ...(error === undefined ? {} : { lastError: { tag: "ServerCrashed", message: error } }),
  ...(pid === undefined ? {} : { pid })
})

/** Every control character except the colour codes (ESC [ digits m) the table paints states with. */
const actingRanges = "\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069"
const acting = new RegExp(`[${actingRanges}]`)
const withoutColours = (line: string) => line.split(new RegExp(`${esc}\\[[0-9;]*m`)).join("")

describe("the live view's frame", () => {
  it("escapes what servers and typing put in it, and keeps exactly its height", () => {
    const view: Screen.View = {
      title: `agent${hostile}.yaml`,
      board: [snapshot(`evil\nname${hostile}`, "Failed", `crashed ${hostile}\nsecond line`), snapshot("ok", "Ready")],
      frame: 0,
      events: (count) => Array.from({ length: count }, (_, i) => `event ${i} ${hostile}`),
      page: undefined,
      message: `tool error: ${hostile}`,
      typed: `call x \u009b2J`
    }
    for (const shown of [
      view,
      { ...view, page: { title: `call${hostile}`, lines: [`result ${hostile}`], offset: 0 } }
    ]) {
      const lines = Screen.render(shown, 100, 24)
      assert.strictEqual(lines.length, 24)
      for (const line of lines) assert.isNull(acting.exec(withoutColours(line)), JSON.stringify(line))
      assert.isTrue(
        lines.some((l) => l.startsWith("evil\\nname\\x1b[2J")),
        "the name is one cell, escaped"
      )
    }
  })

  it("wraps a long answer into rows no wider than the terminal, at spaces where it can, losing nothing", () => {
    const long = `broken: Failed: ${"word ".repeat(30)}${"x".repeat(50)}`
    const rows = Screen.wrap([long, "short"], 40)
    for (const row of rows) assert.isAtMost(Array.from(row).length, 40, row)
    assert.strictEqual(rows.at(-1), "short")
    assert.isTrue(rows.slice(0, -1).every((row) => !row.startsWith(" ") && !row.endsWith(" ")))
    assert.strictEqual(rows.slice(0, -1).join(" ").replace(/x /g, "x"), long.trimEnd())
  })

  it("keeps every PID on an 80-column terminal, giving up KIND instead, with a long error alongside", () => {
    const names = ["filesystem", "memory", "sequential-thinking", "pyright", "bash-language-server"]
    const board = names.map((name, i) =>
      i === 1
        ? snapshot(name, "Restarting", "server exited unexpectedly (code 1): a long reason ".repeat(3), 4_194_301)
        : snapshot(name, "Ready", undefined, 4_194_300 - i)
    )
    const view: Screen.View = {
      title: "agent.yaml",
      board,
      frame: 0,
      events: () => [],
      page: undefined,
      message: "",
      typed: ""
    }
    const lines = Screen.render(view, 80, 24).map(withoutColours)
    const header = lines.find((l) => l.startsWith("TOOLSET")) ?? ""
    assert.match(header, /\bPID\b/)
    assert.notMatch(header, /\bKIND\b/)
    for (const s of board) {
      const row = lines.find((l) => l.startsWith(`${s.name} `)) ?? ""
      assert.include(row, String(s.pid), row)
      assert.isAtMost(Array.from(row).length, 80)
    }
  })
})
