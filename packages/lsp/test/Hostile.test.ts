/**
 * A language server that misbehaves on purpose (`test/fixtures/hostile/lsp.mjs`): an answer too
 * big or too deep costs its call a moment, not its deadline, and the session stays in step.
 */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as LspSpec from "../src/LspSpec.ts"
import { fastPolicy, fixtures, open, textOf } from "./helpers.ts"

const server = NodePath.resolve(import.meta.dirname, "../../../test/fixtures/hostile/lsp.mjs")
const file = NodePath.join(fixtures, "py-project/app.py")

/** Long, so that a call that waits for it is told from one that fails at once. */
const policy = fastPolicy({ call_timeout: "60s" })

const hostile = () => LspSpec.make({ command: process.execPath, args: [server], cwd: fixtures })

/** A hover's failure and how long it took to come. */
const failedHover = (toolset: Toolset.Toolset, line: number) =>
  Effect.gen(function* () {
    const start = Date.now()
    const error = yield* Effect.flip(toolset.callTool("lsp_hover", { file, line, character: 1 }))
    return { error, millis: Date.now() - start }
  })

describe("a hostile language server", () => {
  it.live("a 20 MiB answer fails its call at once, naming its size; the next call on the session works", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "hostile", spec: hostile(), policy })
      yield* toolset.start
      const pid = (yield* toolset.state).pid
      const { error, millis } = yield* failedHover(toolset, 1)
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ToolCallFailed")
      assert.include(error.message, "hostile/lsp_hover: textDocument/hover failed: the server's answer is 20.0 MiB")
      assert.include(error.message, "over the limit of 16 MiB; the request ran")
      assert.include(textOf(yield* toolset.callTool("lsp_hover", { file, line: 9, character: 1 })), "hover on line 9")
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.pid, pid)
      yield* close
    })
  )

  it.live("an answer nested 100 000 deep fails its call at once; the next call on the session works", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "hostile", spec: hostile(), policy })
      yield* toolset.start
      const { error, millis } = yield* failedHover(toolset, 2)
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ToolCallFailed")
      assert.include(error.message, "nested deeper than 64 levels")
      assert.include(textOf(yield* toolset.callTool("lsp_hover", { file, line: 9, character: 1 })), "hover on line 9")
      yield* close
    })
  )
})
