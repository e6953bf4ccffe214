/**
 * A language server that misbehaves on purpose (`test/fixtures/hostile/lsp.mjs`, and the fake
 * server's "flood" and "raw" modes): an answer too big or too deep costs its call a moment, not
 * its deadline, and the session stays in step; a stream that can no longer be followed ends the
 * session at once; a flood of diagnostics leaves memory and answers bounded.
 */
import * as NodePath from "node:path"
import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import { assert, describe, it } from "@effect/vitest"
import type { Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as Diagnostics from "../src/internal/diagnostics.ts"
import * as ToolHandlers from "../src/internal/toolHandlers.ts"
import * as LspSpec from "../src/LspSpec.ts"
import { fake, fastPolicy, fixtures, open, textOf } from "./helpers.ts"

const server = NodePath.resolve(import.meta.dirname, "../../../test/fixtures/hostile/lsp.mjs")
const file = NodePath.join(fixtures, "py-project/app.py")

/** Long, so that a call that waits for it is told from one that fails at once. */
const policy = fastPolicy({ call_timeout: "60s" })

const hostile = () => LspSpec.make({ command: process.execPath, args: [server], cwd: fixtures })

/** The fake server answering a hover with `parts`, written in one go (see fake-server.mjs). */
const raw = (parts: ReadonlyArray<string | object>) =>
  fake("raw", undefined, fixtures, { FAKE_LSP_RAW: JSON.stringify(parts) })

/** A hover's failure and how long it took to come. */
const failedHover = (toolset: Toolset.Toolset, line: number) =>
  Effect.gen(function* () {
    const start = Date.now()
    const error = yield* Effect.flip(toolset.callTool("lsp_hover", { file, line, character: 1 }))
    return { error, millis: Date.now() - start }
  })

/**
 * A hover answered with `header` fails at once with a TransportError that says `why`, and the
 * server is restarted at once: no wait for an exit that will not come, nor for health checks.
 */
const endsAtOnce = (header: string, why: string) =>
  Effect.gen(function* () {
    const { toolset, close } = yield* open({ name: "broken", spec: raw([header]), policy })
    yield* toolset.start
    const pid = (yield* toolset.state).pid
    const transitions = yield* toolset.events.pipe(
      Stream.takeUntil((t) => t.from === "Restarting" && t.snapshot.state === "Ready"),
      Stream.runCollect,
      Effect.forkChild({ startImmediately: true })
    )
    const { error, millis } = yield* failedHover(toolset, 1)
    assert.isBelow(millis, 500)
    assert.strictEqual(error._tag, "TransportError")
    assert.include(error.message, `broken: ${why}`)
    const [restarting, ready] = yield* Fiber.join(transitions)
    assert.strictEqual(restarting?.snapshot.state, "Restarting")
    assert.deepStrictEqual(restarting?.snapshot.lastError, { tag: "TransportError", message: error.message })
    assert.isBelow((ready?.snapshot.since ?? Infinity) - (restarting?.snapshot.since ?? 0), 5_000)
    assert.notStrictEqual(ready?.snapshot.pid, pid)
    yield* close
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

  it.live(
    "a Content-Length of 99 999 999 999 ends the session at once: the call fails naming it, the server restarts",
    () =>
      endsAtOnce(
        "Content-Length: 99999999999\r\n\r\n",
        "the server sent a Content-Length of 99999999999 bytes, past the 256 MiB it would skip"
      )
  )

  it.live("headers without a valid Content-Length end the session just as fast", () =>
    endsAtOnce("Content-Length: lots\r\n\r\n", "the server sent headers without a valid Content-Length")
  )

  it.live("two answers to one request: the first is the answer, the second is dropped; the session stays Ready", () =>
    Effect.gen(function* () {
      const spec = raw([{ result: { contents: "first" } }, { result: { contents: "second" } }])
      const { toolset, close } = yield* open({ name: "twice", spec, policy })
      yield* toolset.start
      const pid = (yield* toolset.state).pid
      for (const line of [1, 2]) {
        assert.strictEqual(textOf(yield* toolset.callTool("lsp_hover", { file, line, character: 1 })), "first")
      }
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.pid, pid)
      yield* close
    })
  )

  it.live(
    "an answer not in the protocol's shape fails its call with a typed error, at once; the session stays Ready",
    () =>
      Effect.gen(function* () {
        for (const contents of [null, 42, [1, 2]]) {
          const { toolset, close } = yield* open({ name: "odd", spec: raw([{ result: { contents } }]), policy })
          yield* toolset.start
          const { error, millis } = yield* failedHover(toolset, 1)
          assert.isBelow(millis, 5_000)
          assert.strictEqual(error._tag, "ToolCallFailed", JSON.stringify(contents))
          assert.match(
            error.message,
            /^odd\/lsp_hover: the server's answer is not what the protocol gives \(.+\); the request ran$/
          )
          assert.notInclude(error.message, "    at ")
          assert.strictEqual((yield* toolset.state).state, "Ready")
          yield* close
        }
      })
  )

  it.live(
    "diagnostics for thousands of files: only the workspace's are kept, as many as the limits say; answers list a few and count the rest",
    () =>
      Effect.gen(function* () {
        const { toolset, close } = yield* open({ name: "flood", spec: fake("flood"), policy })
        yield* toolset.start
        // The server publishes for 3000 missing files inside the workspace and 3000 outside it, then
        // 5000 diagnostics for this file, before it answers.
        yield* toolset.callTool("lsp_document_symbols", { file })
        const { documents, perDocument } = Diagnostics.limits
        const workspace = yield* toolset.callTool("lsp_workspace", {})
        const listing =
          textOf(workspace)
            .split("\n")
            .find((line) => line.startsWith("Documents with diagnostics:")) ?? ""
        assert.include(listing, "flood/missing-")
        assert.notInclude(listing, "nonexistent-toolvisor-flood")
        assert.isTrue(listing.endsWith(`, … ${documents - ToolHandlers.listedDocuments} more`), listing)
        assert.isBelow(textOf(workspace).length, 8_000)
        assert.strictEqual(workspace.structuredContent?.documentsWithDiagnostics, documents)
        const listed = workspace.structuredContent?.diagnostics
        assert.strictEqual(Array.isArray(listed) ? listed.length : 0, ToolHandlers.listedDocuments)

        const own = yield* toolset.callTool("lsp_diagnostics", { file })
        const lines = textOf(own).split("\n")
        assert.strictEqual(lines[0], "5000 diagnostics in py-project/app.py:")
        assert.lengthOf(lines, perDocument + 2)
        assert.strictEqual(lines.at(-1), `… ${5000 - perDocument} more`)
        assert.strictEqual(own.structuredContent?.count, 5000)
        yield* close
      })
  )

  it.live(
    "a flood faster than it is handled waits in the server's pipe, not in this process: memory stays bounded",
    () =>
      Effect.gen(function* () {
        // 20 000 publishes of 50 diagnostics each, about 90 MB, before the server answers.
        const spec = fake("flood", undefined, fixtures, { FAKE_LSP_FLOOD: "10000", FAKE_LSP_FLOOD_EACH: "50" })
        const { toolset, close } = yield* open({ name: "flood", spec, policy })
        yield* toolset.start
        // What is held, not what awaits collection: measured after a full collection.
        NodeV8.setFlagsFromString("--expose-gc")
        const gc = NodeVm.runInNewContext("gc") as () => void
        const held = () => {
          gc()
          return process.memoryUsage().heapUsed
        }
        const before = held()
        let peak = before
        const sampler = setInterval(() => {
          peak = Math.max(peak, held())
        }, 100)
        yield* toolset
          .callTool("lsp_document_symbols", { file })
          .pipe(Effect.ensuring(Effect.sync(() => clearInterval(sampler))))
        // Unpaused, the connection's queue held the flood: hundreds of MB.
        assert.isBelow((peak - before) / 2 ** 20, 60)
        assert.strictEqual((yield* toolset.state).state, "Ready")
        yield* close
      })
  )
})
