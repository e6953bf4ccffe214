/**
 * The live view in a real terminal of 80×24 (tmux renders the screen, as a person would see
 * it): a SIGKILLed server shows in the event pane with its signal, the backoff countdown and the
 * recovery, and stays readable after the table has moved on; log lines land in the pane, never
 * over the prompt; nothing wraps or scrolls away.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { cliArgs, isAlive, mcpEntry, root, writeConfig, yaml } from "./helpers.ts"

const tmux = (args: ReadonlyArray<string>) => NodeChildProcess.execFileSync("tmux", args, { encoding: "utf8" })

/** A tmux session of its own, running the CLI at `width`×`height`. */
const terminal = (name: string, command: ReadonlyArray<string>, width: number, height: number) => {
  const line = command.map((a) => `'${a}'`).join(" ")
  tmux(["new-session", "-d", "-s", name, "-x", String(width), "-y", String(height), "-c", root, line])
  return {
    screen: () => tmux(["capture-pane", "-p", "-t", name]).replace(/\n$/, "").split("\n"),
    type: (text: string) => tmux(["send-keys", "-t", name, text, "Enter"]),
    close: () => {
      try {
        tmux(["kill-session", "-t", name])
      } catch {
        // The session ends by itself when the CLI exits.
      }
    }
  }
}

/** Polls the screen until `p` holds, or fails with the last screen. */
const waitForScreen = async (screen: () => ReadonlyArray<string>, p: (text: string) => boolean, within = 60_000) => {
  const deadline = Date.now() + within
  for (;;) {
    const text = screen().join("\n")
    if (p(text)) return text
    if (Date.now() > deadline) throw new Error(`screen never matched:\n${text}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("toolvisor run on an 80×24 terminal", () => {
  it("shows a SIGKILL in the event pane with the countdown and the recovery; tools pages, the table stays", async () => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-live-view-"))
    const pidFile = NodePath.join(dir, "pid")
    const config = writeConfig(
      yaml([
        mcpEntry("victim", [
          `        env: { FIXTURE_PID_FILE: "${pidFile}" }`,
          "        lifecycle: { backoff: { initial: 1500ms, max: 2s } }"
        ]),
        // A name as long as users give their servers: KIND gives way, the PID still shows.
        mcpEntry("sequential-thinking-server"),
        [
          "      - type: mcp",
          "        name: gone",
          "        command: /nonexistent/toolvisor-no-such-server",
          "        lifecycle: { profile: best-effort }"
        ]
      ])
    )
    const term = terminal(`toolvisor-${process.pid}`, [process.execPath, ...cliArgs(["run", config])], 80, 24)
    try {
      await waitForScreen(
        term.screen,
        (t) => /victim\s.*Ready/.test(t) && /sequential-thinking-server\s.*Ready/.test(t)
      )
      // The run's log lines land in the event pane, above the message line and the prompt.
      const logged = (await waitForScreen(term.screen, (t) => t.includes("WARN optional toolset did not start"))).split(
        "\n"
      )
      const warn = logged.findIndex((l) => l.includes("WARN optional toolset did not start"))
      assert.isAbove(
        warn,
        logged.findIndex((l) => l.startsWith("── events"))
      )
      assert.isBelow(warn, 22)
      assert.match(logged[23] ?? "", /^>/)
      const pid = Number(NodeFs.readFileSync(pidFile, "utf8"))
      const table = term.screen()
      assert.match(table[1] ?? "", /^TOOLSET\s+STATE\s+RESTARTS\s+TOOLS\s+PID/, "KIND gives way, PID stays")
      assert.match(table.find((l) => l.startsWith("victim ")) ?? "", new RegExp(`\\b${pid}\\b`))
      process.kill(pid, "SIGKILL")
      const waiting = await waitForScreen(term.screen, (t) => t.includes("retrying in"))
      assert.match(waiting, /victim Ready → Restarting\s+retrying in \d\.\d s, attempt 1\/5/)
      const back = await waitForScreen(term.screen, (t) => /victim Restarting → Ready/.test(t))
      // After the recovery the crash is still on screen, with its signal.
      assert.match(back, /victim Ready → Restarting[\s\S]*SIGKILL[\s\S]*victim Restarting → Ready\s+restart 1/)
      assert.isFalse(isAlive(pid))

      term.type("tools")
      const tools = await waitForScreen(term.screen, (t) => t.includes("── tools: 1–"))
      const lines = tools.split("\n")
      assert.strictEqual(lines.length, 24)
      for (const line of lines) assert.isAtMost(Array.from(line).length, 80, `wider than 80: ${line}`)
      assert.match(lines[1] ?? "", /^TOOLSET\s+STATE\s+RESTARTS\s+TOOLS\s+PID/)
      assert.match(lines[23] ?? "", /^>/)
      term.type("quit")
      await waitForScreen(
        () => {
          try {
            return term.screen()
          } catch {
            return ["(session ended)"]
          }
        },
        (t) => t === "(session ended)"
      )
    } finally {
      term.close()
      NodeFs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("status shows every error whole, wrapped in the pane, where the table and the message line cut it", async () => {
    // A server that dies at start, saying why at length; the words are in its environment, not its command line.
    const reason = `could not open the database ${"and then some more words ".repeat(4)}END-OF-THE-REASON`
    const config = writeConfig(
      yaml([
        mcpEntry("bystander"),
        [
          "      - type: mcp",
          "        name: broken",
          `        command: "${process.execPath}"`,
          '        args: ["-e", "console.error(process.env.REASON); process.exit(3)"]',
          `        env: { REASON: "${reason}" }`,
          "        lifecycle: { profile: best-effort }"
        ]
      ])
    )
    const term = terminal(`toolvisor-status-${process.pid}`, [process.execPath, ...cliArgs(["run", config])], 80, 24)
    try {
      await waitForScreen(term.screen, (t) => /broken\s.*Failed/.test(t) && /bystander\s.*Ready/.test(t))
      term.type("status")
      const shown = await waitForScreen(term.screen, (t) => t.includes("── status: "))
      const lines = shown.split("\n")
      for (const line of lines) assert.isAtMost(Array.from(line).length, 80, `wider than 80: ${line}`)
      const pane = lines.slice(lines.findIndex((l) => l.startsWith("── status: ")) + 1).join(" ")
      assert.include(pane, "END-OF-THE-REASON", shown)
      assert.include(pane.replace(/\s+/g, " "), reason, "every word of it, in order")
      term.type("quit")
    } finally {
      term.close()
    }
  })
})
