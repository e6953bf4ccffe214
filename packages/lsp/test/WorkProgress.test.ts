/**
 * Ready means the server answers (issue 26 §6). A server finishes starting after `initialized`:
 * the handshake waits — bounded by half the `startup_timeout` — for the requests it sends then and
 * for the work-done progress it reports, so the first query gets the answer a later one would.
 * Work reported later (on opening a file) holds up the wait for that file's diagnostics. Against
 * the fake server's reported work, and real servers: bash-language-server (which answered "no
 * symbols" to a query sent at once) and pyright (which registers pull diagnostics after its setup).
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { bash, fake, fastPolicy, fixtures, open, project, pyright, textOf } from "./helpers.ts"

/** Wall-clock milliseconds `effect` took, with its value. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = Date.now()
    const value = yield* effect
    return { value, millis: Date.now() - started }
  })

describe("Ready when the server answers", () => {
  it.live("a server that reports work after initialized is Ready once it ended: the first query answers", () =>
    Effect.gen(function* () {
      const spec = fake("busy", undefined, fixtures, { FAKE_LSP_WORK_MS: "1500" })
      const { toolset, close } = yield* open({ name: "busy", spec, policy: fastPolicy() })
      const { millis } = yield* timed(toolset.start)
      assert.isAtLeast(millis, 1_400, "Ready waited for the reported work")
      const symbols = yield* toolset.callTool("lsp_document_symbols", { file: "fake-server.mjs" })
      assert.include(textOf(symbols), "settled")
      yield* close
    })
  )

  it.live("work that never ends holds Ready up for half the startup_timeout, not into a failed start", () =>
    Effect.gen(function* () {
      const spec = fake("busy", undefined, fixtures, { FAKE_LSP_WORK_MS: "never" })
      const { toolset, close } = yield* open({
        name: "busy",
        spec,
        policy: fastPolicy({ startup_timeout: "4s", restart: "never" })
      })
      const { millis } = yield* timed(toolset.start)
      assert.isAtLeast(millis, 1_500)
      assert.isBelow(millis, 4_000)
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.restarts, 0)
      yield* close
    })
  )

  it.live("diagnostics of a file whose opening set off work wait for that work, past the usual push wait", () =>
    Effect.gen(function* () {
      // Longer than the 10 s a push is waited for after an open (`DocumentDiagnostics.waits.opened`).
      const spec = fake("busy-on-open", undefined, fixtures, { FAKE_LSP_WORK_MS: "11000" })
      const { toolset, close } = yield* open({ name: "busy", spec, policy: fastPolicy() })
      yield* toolset.start
      const { value, millis } = yield* timed(toolset.callTool("lsp_diagnostics", { file: "fake-server.mjs" }))
      assert.include(textOf(value), "checked after work")
      assert.isAtLeast(millis, 10_500)
      yield* close
    })
  )

  it.live("bash-language-server: the first lsp_document_symbols after Ready lists the script's functions", () =>
    Effect.gen(function* () {
      const root = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-lsp-bash-"))
      NodeFs.writeFileSync(NodePath.join(root, "build.sh"), '#!/bin/bash\ncompile() { echo "$1"; }\nTARGET=out\n')
      const { toolset, close } = yield* open({ name: "sh", spec: bash(root), policy: fastPolicy() })
      yield* toolset.start
      const symbols = yield* toolset.callTool("lsp_document_symbols", { file: "build.sh" })
      assert.include(textOf(symbols), "function compile (line 2)")
      assert.include(textOf(symbols), "variable TARGET (line 3)")
      yield* close
    })
  )

  it.live("pyright: by Ready it has registered pull diagnostics, so the first query sees its whole setup", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "py", spec: pyright(project("py-project")), policy: fastPolicy() })
      yield* toolset.start
      const workspace = yield* toolset.callTool("lsp_workspace", {})
      assert.include(textOf(workspace), "Registered: textDocument/diagnostic")
      yield* close
    })
  )
})
