/**
 * What `toolvisor_status` tells a host about each state a toolset can be in: nothing to fix for a
 * Ready one, the login command for one that needs it, no false promise for a permanent error or
 * a spent crash loop, and the reprobe (with its cooldown) for one that failed to start — on one
 * escaped line per toolset.
 */
import { assert, describe, it } from "@effect/vitest"
import type { State } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as StatusTool from "../src/StatusTool.ts"

const snapshot = (name: string, state: State.State, tag?: string): State.StatusSnapshot => ({
  name,
  kind: "mcp-stdio",
  state,
  since: 0,
  restarts: 0,
  attempt: 0,
  toolsVersion: 0,
  ...(tag === undefined ? {} : { lastError: { tag, message: `${name}: went wrong\u001b[2J` } })
})

const cooldown = Duration.seconds(10)

describe("toolvisor_status", () => {
  it("hints what brings each toolset back", () => {
    assert.isUndefined(StatusTool.hint(snapshot("ok", "Ready"), cooldown))
    assert.include(StatusTool.hint(snapshot("up", "Starting"), cooldown), "once it is Ready")
    assert.include(StatusTool.hint(snapshot("gh", "Failed", "AuthRequired"), cooldown), "toolvisor auth gh")
    assert.include(StatusTool.hint(snapshot("cap", "Failed", "CapabilityMissing"), cooldown), "a retry cannot fix")
    assert.strictEqual(
      StatusTool.hint(snapshot("down", "Failed", "ServerUnavailable"), cooldown),
      "calling one of its tools starts it again, at most once every 10s"
    )
    assert.include(
      StatusTool.hint(snapshot("loop", "Failed", "ServerCrashed"), cooldown),
      "POST /toolsets/loop/restart"
    )
    assert.include(StatusTool.hint(snapshot("off", "Stopped"), cooldown), "stopped on request")
  })

  it("answers one escaped line per toolset, and the status DTO with its hint", () => {
    const board = [snapshot("ok", "Ready"), snapshot("down", "Stopped", "ServerUnavailable")]
    const result = StatusTool.result(board, undefined, cooldown)
    const text = String(result.content[0]?.text)
    const lines = text.split("\n")
    assert.strictEqual(lines.length, 3)
    assert.strictEqual(lines[0], "2 toolsets; some tools are missing.")
    assert.match(
      lines[2] ?? "",
      /^down: Failed, no tools\. Last error: ServerUnavailable: went wrong\\x1b\[2J\. Hint: /
    )
    assert.notInclude(text, "\u001b")
    const toolsets = result.structuredContent?.toolsets
    assert.isTrue(Array.isArray(toolsets))
    assert.deepInclude(Array.isArray(toolsets) ? toolsets[1] : undefined, { toolset: "down", state: "Stopped" })
  })
})
