/**
 * docker-agent PR #2458, end to end: toolsets whose binary does not exist yet (an MCP server and
 * a language server, each run through `env`), a model whose first tool call installs them (a real
 * `move_file` on server-filesystem), and the same turn's next model call offered their tools.
 * One warning per toolset before, one recovery notice after, none repeated.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import { generateText, stepCountIs } from "ai"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import { config, open } from "../../../test/support/Registry.ts"
import * as AgentLoop from "../src/AgentLoop.ts"
import * as AiSdk from "../src/AiSdk.ts"
import * as Reprobe from "../src/Reprobe.ts"
import { bin, everythingServer, filesystem, lsp, marked, mcp, pyProject, stagedServer, tempDir } from "./helpers.ts"
import * as MockModel from "./MockModel.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

const bestEffort = { profile: "best-effort" } as const
/** Long enough for pyright to start on a busy CI machine: the test is about the same turn, not speed. */
const wait = "30 seconds"

/** server-filesystem over a temp dir, and two toolsets whose binaries wait in its staging folder. */
const scenario = () => {
  const dir = tempDir("2458")
  const mcpBin = stagedServer(dir, "late-mcp", `"${process.execPath}" "${everythingServer}" stdio`)
  const lspBin = stagedServer(dir, "late-lsp", `"${bin("pyright-langserver")}" --stdio`)
  const toolsets = [
    filesystem(dir),
    mcp("late", "env", { args: [mcpBin.installed], lifecycle: bestEffort }),
    lsp("pyright", "env", { args: [lspBin.installed], cwd: pyProject, fileTypes: [".py"], lifecycle: bestEffort })
  ]
  const install = [
    { source: mcpBin.staged, destination: mcpBin.installed },
    { source: lspBin.staged, destination: lspBin.installed }
  ]
  return { dir, toolsets, install, hover: { file: NodePath.join(pyProject, "app.py"), line: 1, character: 5 } }
}

const failing = (toolset: string) => ({ _tag: "ToolsetFailing", toolset })
const recovered = (toolset: string) => ({ _tag: "ToolsetRecovered", toolset })
const brief = (notices: ReadonlyArray<Reprobe.Notice>) =>
  notices.map((n) => (n._tag === "ToolsetFailing" ? failing(n.toolset) : recovered(n.toolset)))

const pidsOf = (board: ReadonlyArray<{ readonly pid?: number | undefined }>) =>
  board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))

describe("in-turn reprobe (docker-agent #2458)", () => {
  it.live("effect/ai: a tool call installs two missing servers and the same turn's next model call uses them", () =>
    Effect.gen(function* () {
      const { toolsets, install, hover } = scenario()
      const { registry, close } = yield* open(config(toolsets))
      yield* registry.start
      const model = ScriptedModel.make((call) => {
        if (call.index === 0) {
          return install.map((args, i) => ScriptedModel.toolCall(`install-${i}`, "fs_move_file", args))
        }
        if (call.index === 1) {
          return [
            ScriptedModel.toolCall("late-echo", "late_echo", { message: "here now" }),
            ScriptedModel.toolCall("late-hover", "lsp_hover", hover)
          ]
        }
        return [ScriptedModel.text("done")]
      })
      const loop = yield* AgentLoop.make(registry, { wait })
      const chat = yield* Chat.empty
      const turn = yield* loop.turn(chat, "install the servers, then use them").pipe(Effect.provide(model.layer))

      assert.strictEqual(turn.text, "done")
      const [first, second, third] = model.calls
      assert.include(first?.offered ?? [], "fs_move_file")
      assert.notInclude(first?.offered ?? [], "late_echo")
      assert.notInclude(first?.offered ?? [], "lsp_hover")
      assert.includeMembers([...(second?.offered ?? [])], ["late_echo", "lsp_hover"])
      const read = ScriptedModel.toolResults(third!.prompt).slice(2)
      assert.deepStrictEqual(
        read.map((r) => [r.name, r.isFailure]),
        [
          ["late_echo", false],
          ["lsp_hover", false]
        ]
      )
      assert.include(JSON.stringify(read[0]?.result), "Echo: here now")
      assert.include(JSON.stringify(read[1]?.result), "greet")

      assert.deepStrictEqual(
        turn.steps.map((s) => brief(s.notices)),
        [[failing("late"), failing("pyright")], [recovered("late"), recovered("pyright")], []]
      )
      const next = yield* loop.turn(chat, "again").pipe(Effect.provide(model.layer))
      assert.deepStrictEqual(next.notices, [])

      const pids = pidsOf(yield* registry.snapshot)
      assert.strictEqual(pids.length, 3)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live("AI SDK: prepareStep offers the installed servers' tools on the next step of the same generateText", () =>
    Effect.gen(function* () {
      const { toolsets, install, hover } = scenario()
      const { registry, close } = yield* open(config(toolsets))
      yield* registry.start
      const notices: Array<Reprobe.Notice> = []
      const supervised = yield* AiSdk.make(registry, { wait, onNotice: (n) => notices.push(n) })
      const mock = MockModel.make((step) => {
        if (step.index === 0) return install.map((args, i) => MockModel.toolCall(`install-${i}`, "fs_move_file", args))
        if (step.index === 1) {
          return [
            MockModel.toolCall("late-echo", "late_echo", { message: "here now" }),
            MockModel.toolCall("late-hover", "lsp_hover", hover)
          ]
        }
        return [MockModel.text("done")]
      })
      const result = yield* Effect.promise(() =>
        generateText({
          model: mock.model,
          tools: supervised.tools,
          prepareStep: supervised.prepareStep,
          stopWhen: stepCountIs(5),
          prompt: "install the servers, then use them"
        })
      )
      assert.strictEqual(result.text, "done")
      const [first, second, third] = mock.steps
      assert.notInclude(first?.offered ?? [], "late_echo")
      assert.includeMembers([...(second?.offered ?? [])], ["late_echo", "lsp_hover"])
      const read = MockModel.toolOutputs(third!.prompt).slice(2)
      assert.deepStrictEqual(
        read.map((r) => [r.name, r.output.type]),
        [
          ["late_echo", "text"],
          ["lsp_hover", "text"]
        ]
      )
      assert.include(JSON.stringify(read[0]?.output), "Echo: here now")
      assert.deepStrictEqual(brief(notices), [
        failing("late"),
        failing("pyright"),
        recovered("late"),
        recovered("pyright")
      ])

      const pids = pidsOf(yield* registry.snapshot)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live("a toolset that stays down is warned about once, however many batches it misses", () =>
    Effect.gen(function* () {
      const dir = tempDir("down")
      const missing = NodePath.join(dir, "bin", "never-installed")
      const { registry, close } = yield* open(config([mcp("down", "env", { args: [missing], lifecycle: bestEffort })]))
      yield* registry.start
      const reprobe = yield* Reprobe.make(registry)
      const checks = yield* Effect.forEach([1, 2, 3, 4], () => reprobe.check)
      assert.deepStrictEqual(checks.map(brief), [[failing("down")], [], [], []])
      assert.isFalse(NodeFs.existsSync(missing))
      yield* close
    })
  )

  it.live("a server that hangs on initialize holds a check up for `wait` at most, not its startup_timeout", () =>
    Effect.gen(function* () {
      const lifecycle = { ...bestEffort, startup_timeout: "3s" }
      const mark = `hangs-${process.pid}-${Date.now()}`
      const hangs = mcp("hangs", "env", { args: [`TOOLVISOR_TEST_MARK=${mark}`, "sleep", "300"], lifecycle })
      const { registry, close } = yield* open(config([hangs]))
      yield* registry.start
      const reprobe = yield* Reprobe.make(registry, { wait: "200 millis" })
      const started = Date.now()
      yield* reprobe.check
      assert.isBelow(Date.now() - started, 2_000)
      const board = yield* registry.snapshot
      assert.strictEqual(board[0]?.state, "Starting", "the restart goes on in the background")
      assert.strictEqual(marked("TOOLVISOR_TEST_MARK", mark).length, 1)
      yield* close
      assert.deepStrictEqual(marked("TOOLVISOR_TEST_MARK", mark), [])
    })
  )
})
