import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Diagnostics from "../src/internal/diagnostics.ts"
import * as LspSpec from "../src/LspSpec.ts"
import type * as LspToolset from "../src/LspToolset.ts"
import { fake, fastPolicy, fixtures, open, processesWith, textOf, toolNames, until } from "./helpers.ts"

const someFile = NodePath.join(fixtures, "py-project/app.py")

/** Polls until the toolset's session has `file` open, i.e. the tool call got as far as its request. */
const untilOpen = (toolset: LspToolset.LspToolset, file: string) =>
  toolset.supervisor
    .use((session) => Effect.sync(() => session.documents.open().some((d) => d.path === file)))
    .pipe(
      Effect.repeat({ until: (isOpen) => isOpen, schedule: Schedule.spaced("20 millis") }),
      Effect.timeout("10 seconds")
    )

describe("LspToolset lifecycle", () => {
  it.live("a missing binary is ServerUnavailable and leaves a required toolset Stopped", () =>
    Effect.gen(function* () {
      const spec = LspSpec.make({ command: "/nonexistent/toolvisor-missing-lsp", cwd: fixtures })
      const { toolset, close } = yield* open({ name: "missing", spec, policy: fastPolicy({ required: true }) })
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      assert.include(error.message, "there is no /nonexistent/toolvisor-missing-lsp")
      assert.strictEqual((yield* toolset.state).state, "Stopped")
      yield* close
    })
  )

  it.live("an env-wrapped missing binary exits at once: ServerUnavailable with exit code 127 and stderr", () =>
    Effect.gen(function* () {
      const spec = LspSpec.make({ command: "env", args: ["-C", "/tmp", "toolvisor-missing-binary"], cwd: fixtures })
      const { toolset, close } = yield* open({ name: "wrapped", spec, policy: fastPolicy({ required: true }) })
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      if (error._tag !== "ServerUnavailable") return
      assert.strictEqual(error.exitCode, 127)
      assert.include((error.stderr ?? []).join("\n"), "toolvisor-missing-binary")
      assert.strictEqual((yield* toolset.state).state, "Stopped")
      yield* close
    })
  )

  it.live("a server that never answers initialize is InitTimeout; closing leaves no process", () =>
    Effect.gen(function* () {
      const spec = fake("silent")
      const marker = spec.args[1] ?? ""
      const { toolset, close } = yield* open({
        name: "silent",
        spec,
        policy: fastPolicy({ startup_timeout: "1s", required: true })
      })
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "InitTimeout")
      // Which setting to raise, for the server that is only slow.
      assert.include(error.message, "silent: did not connect within 1s (lifecycle.startup_timeout;")
      assert.strictEqual((yield* toolset.state).state, "Stopped")
      assert.lengthOf(processesWith(marker), 1)
      yield* close
      assert.deepStrictEqual(processesWith(marker), [])
    })
  )

  it.live("a wedged server: the request times out with CallTimeout, the probe degrades and restarts it", () =>
    Effect.gen(function* () {
      const spec = fake("wedge")
      const marker = spec.args[1] ?? ""
      const { toolset, close } = yield* open({
        name: "wedged",
        spec,
        policy: fastPolicy({ call_timeout: "1s", health: { interval: "500ms", timeout: "300ms", failures: 2 } })
      })
      const seen = yield* toolset.events.pipe(
        Stream.takeUntil((t) => t.from === "Restarting" && t.snapshot.state === "Ready"),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* toolset.start
      const pid = (yield* toolset.state).pid ?? 0
      const startedAt = Date.now()
      const error = yield* Effect.flip(toolset.callTool("lsp_diagnostics", { file: someFile }))
      assert.strictEqual(error._tag, "CallTimeout")
      assert.isBelow(Date.now() - startedAt, 5_000)
      const states = (yield* Fiber.join(seen)).map((t) => t.snapshot.state)
      assert.deepStrictEqual(states, ["Starting", "Ready", "Degraded", "Restarting", "Ready"])
      const status = yield* toolset.state
      assert.notStrictEqual(status.pid, pid)
      assert.isFalse(ServerProcess.groupAlive(pid))
      yield* close
      assert.deepStrictEqual(processesWith(marker), [])
    })
  )

  it.live(
    "server-to-client requests are answered; dynamic (un)registration updates the catalogue and bumps toolsVersion; an error answer is ToolCallFailed",
    () =>
      Effect.gen(function* () {
        const { toolset, close } = yield* open({ name: "dynamic", spec: fake("dynamic"), policy: fastPolicy() })
        yield* toolset.start
        const registered = yield* until(toolset, (s) => s.toolCount === 3)
        assert.include(toolNames(yield* toolset.tools), "lsp_hover")
        // The server's error answer is a typed failure that names the method, its code and message.
        const failed = yield* Effect.flip(toolset.callTool("lsp_hover", { file: someFile, line: 99, character: 1 }))
        assert.strictEqual(failed._tag, "ToolCallFailed")
        assert.include(failed.message, "dynamic/lsp_hover: textDocument/hover failed: no symbol on line 99")
        assert.strictEqual(failed._tag === "ToolCallFailed" ? failed.code : undefined, -32803)
        const hover = yield* toolset.callTool("lsp_hover", { file: someFile, line: 1, character: 1 })
        // The server registered hover only after the client answered its requests.
        assert.include(textOf(hover), '"configuration":[{}]')
        const unregistered = yield* until(toolset, (s) => s.toolCount === 2)
        assert.isAbove(unregistered.toolsVersion, registered.toolsVersion)
        assert.deepStrictEqual(toolNames(yield* toolset.tools), ["lsp_workspace", "lsp_diagnostics"])
        const gone = yield* Effect.flip(toolset.callTool("lsp_hover", { file: someFile, line: 1, character: 1 }))
        assert.strictEqual(gone._tag, "ToolNotFound")
        yield* close
      })
  )

  it.live("bad arguments are isError results that name the argument; the session stays Ready", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "args", spec: fake("dynamic"), policy: fastPolicy() })
      yield* toolset.start
      const missing = yield* toolset.callTool("lsp_diagnostics", {})
      assert.isTrue(missing.isError)
      assert.include(textOf(missing), 'at ["file"]')
      const wrongType = yield* toolset.callTool("lsp_diagnostics", { file: 42 })
      assert.isTrue(wrongType.isError)
      assert.include(textOf(wrongType), "Expected string")
      const absent = yield* toolset.callTool("lsp_diagnostics", { file: "no/such/file.py" })
      assert.isTrue(absent.isError)
      assert.include(textOf(absent), "file: cannot read")
      const unknown = yield* Effect.flip(toolset.callTool("lsp_nope", {}))
      assert.strictEqual(unknown._tag, "ToolNotFound")
      assert.strictEqual((yield* toolset.state).state, "Ready")
      yield* close
    })
  )

  it.live("a request that is never answered fails with CallTimeout at call_timeout; the session stays Ready", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({
        name: "hang",
        spec: fake("hang"),
        policy: fastPolicy({ call_timeout: "1s" })
      })
      yield* toolset.start
      const startedAt = Date.now()
      const error = yield* Effect.flip(toolset.callTool("lsp_hover", { file: someFile, line: 1, character: 1 }))
      const elapsed = Date.now() - startedAt
      assert.strictEqual(error._tag, "CallTimeout")
      assert.include(error.message, "did not complete within 1s")
      assert.isAtLeast(elapsed, 900)
      assert.isBelow(elapsed, 3_000)
      assert.strictEqual((yield* toolset.state).state, "Ready")
      yield* close
    })
  )

  it.live("a request in flight fails as soon as the server dies, with its exit, not at call_timeout", () =>
    Effect.gen(function* () {
      const spec = fake("hang")
      const marker = spec.args[1] ?? ""
      const { toolset, close } = yield* open({ name: "hang", spec, policy: fastPolicy({ restart: "never" }) })
      yield* toolset.start
      const call = yield* Effect.forkChild(
        Effect.flip(toolset.callTool("lsp_hover", { file: someFile, line: 1, character: 1 })),
        { startImmediately: true }
      )
      yield* untilOpen(toolset, someFile)
      const killedAt = Date.now()
      process.kill((yield* toolset.state).pid ?? 0, "SIGKILL")
      const error = yield* Fiber.join(call)
      assert.strictEqual(error._tag, "ServerCrashed", error.message)
      assert.include(error.message, "signal SIGKILL")
      assert.isBelow(Date.now() - killedAt, 3_000)
      yield* close
      assert.deepStrictEqual(processesWith(marker), [])
    })
  )

  it.live("stop while a request is in flight: the request fails with NotStarted, no process is left", () =>
    Effect.gen(function* () {
      const spec = fake("hang")
      const marker = spec.args[1] ?? ""
      const { toolset, close } = yield* open({ name: "hang", spec, policy: fastPolicy() })
      yield* toolset.start
      const call = yield* Effect.forkChild(
        Effect.flip(toolset.callTool("lsp_hover", { file: someFile, line: 1, character: 1 })),
        { startImmediately: true }
      )
      yield* untilOpen(toolset, someFile)
      yield* toolset.stop
      const error = yield* Fiber.join(call)
      assert.strictEqual(error._tag, "NotStarted")
      assert.include(error.message, "closed while the request was in flight")
      assert.deepStrictEqual(processesWith(marker), [])
      yield* close
    })
  )

  it.live("pull diagnostics registered after Ready: the refresh request is answered and lsp_diagnostics pulls", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-lsp-pull-"))
      const file = NodePath.join(dir, "notes.txt")
      NodeFs.writeFileSync(file, "first\nTODO second\n")
      const { toolset, close } = yield* open({ name: "pull", spec: fake("pull", undefined, dir), policy: fastPolicy() })
      yield* toolset.start
      const pid = (yield* toolset.state).pid
      // Called before the registration arrives: it starts waiting for a push, then pulls.
      const startedAt = Date.now()
      const first = yield* toolset.callTool("lsp_diagnostics", { file })
      assert.isBelow(Date.now() - startedAt, 5_000)
      assert.strictEqual(first.structuredContent?.mode, "pull")
      assert.include(textOf(first), "notes.txt:2:1: warning [fake]: todo on line 2")
      NodeFs.writeFileSync(file, "TODO first\nsecond\nthird TODO\n")
      const second = yield* toolset.callTool("lsp_diagnostics", { file })
      assert.strictEqual(second.structuredContent?.version, 2)
      assert.include(textOf(second), "2 diagnostics")
      assert.include(textOf(second), "notes.txt:1:1: warning [fake]: todo on line 1")
      assert.include(textOf(second), "notes.txt:3:1: warning [fake]: todo on line 3")
      // The fake exits if `workspace/diagnostic/refresh` gets an error, as pyright does.
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.pid, pid)
      yield* close
    })
  )

  it.live("pulled diagnostics past limits.perDocument: the first are listed, the rest counted", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-lsp-pull-"))
      const file = NodePath.join(dir, "notes.txt")
      const count = Diagnostics.limits.perDocument + 100
      NodeFs.writeFileSync(file, "TODO\n".repeat(count))
      const { toolset, close } = yield* open({ name: "pull", spec: fake("pull", undefined, dir), policy: fastPolicy() })
      yield* toolset.start
      const result = yield* toolset.callTool("lsp_diagnostics", { file })
      assert.strictEqual(result.structuredContent?.mode, "pull")
      assert.strictEqual(result.structuredContent?.count, count)
      const lines = textOf(result).split("\n")
      assert.strictEqual(lines[0], `${count} diagnostics in notes.txt:`)
      assert.strictEqual(
        lines[Diagnostics.limits.perDocument],
        `notes.txt:${Diagnostics.limits.perDocument}:1: warning [fake]: todo on line ${Diagnostics.limits.perDocument}`
      )
      assert.deepStrictEqual(lines.slice(Diagnostics.limits.perDocument + 1), ["… 100 more"])
      yield* close
    })
  )
})
