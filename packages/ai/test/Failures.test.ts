/**
 * Tool calls that do not go well, on both stacks: the server SIGKILLed mid-turn, a toolset that
 * was stopped, a name no provider accepts, and an AI SDK call aborted in flight. In every case the
 * generation goes on and the model reads either the real result or a clear tool error.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import { generateText, stepCountIs } from "ai"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import { config, fixtureEntry, open } from "../../../test/support/Registry.ts"
import * as AgentLoop from "../src/AgentLoop.ts"
import * as AiSdk from "../src/AiSdk.ts"
import * as RegistryToolkit from "../src/RegistryToolkit.ts"
import * as ToolNames from "../src/ToolNames.ts"
import * as ToolOutput from "../src/ToolOutput.ts"
import { everything, everythingServer, mcp } from "./helpers.ts"
import * as MockModel from "./MockModel.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

const pidOf = (board: ReadonlyArray<{ readonly name: string; readonly pid?: number | undefined }>, name: string) =>
  board.find((s) => s.name === name)?.pid

describe("arguments that are not an object", () => {
  it.live("fail as InvalidArguments, and the tool does not run with none in their place", () =>
    Effect.gen(function* () {
      const calls = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-args-")), "calls")
      const { registry, close } = yield* open(
        config([fixtureEntry("fx", { prefix: "fx", env: { FIXTURE_CALLS_FILE: calls } })])
      )
      yield* registry.start
      for (const params of ["hello", null, 42, [1, 2]]) {
        const failure = yield* Effect.flip(RegistryToolkit.call(registry, "fx_echo", "fx_echo", params))
        // Replaced by {}, they ran the tool with its defaults.
        assert.strictEqual(failure.reason, "InvalidArguments")
        assert.isFalse(failure.retryable)
        assert.include(failure.message, "fx_echo did not run: its arguments must be a JSON object")
      }
      assert.isFalse(NodeFs.existsSync(calls) && NodeFs.readFileSync(calls, "utf8").includes("echo"))
      yield* close
    })
  )
})

describe("tool failures reach the model as results", () => {
  it.live(
    "effect/ai: the server is SIGKILLed mid-turn; the call waits for the restart or the model reads a clear error",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([everything()]))
        yield* registry.start
        const before = pidOf(yield* registry.snapshot, "everything")
        assert.isDefined(before)
        const model = ScriptedModel.make((call) => {
          if (call.index === 0) return [ScriptedModel.toolCall("c1", "everything_echo", { message: "first" })]
          if (call.index === 1) {
            process.kill(before!, "SIGKILL")
            return [ScriptedModel.toolCall("c2", "everything_echo", { message: "second" })]
          }
          return [ScriptedModel.text("done")]
        })
        const loop = yield* AgentLoop.make(registry)
        const turn = yield* Effect.flatMap(Chat.empty, (chat) => loop.turn(chat, "echo twice")).pipe(
          Effect.provide(model.layer)
        )
        assert.strictEqual(turn.text, "done")
        const [first, second] = ScriptedModel.toolResults(model.calls[2]!.prompt)
        assert.include(JSON.stringify(first?.result), "Echo: first")
        if (second?.isFailure) {
          const encoded = JSON.stringify(second.result)
          assert.include(encoded, '"_tag":"ToolFailure"')
          assert.include(encoded, "everything_echo")
        } else {
          assert.include(JSON.stringify(second?.result), "Echo: second")
        }
        const pid = pidOf(yield* registry.snapshot, "everything")
        yield* close
        assert.isFalse(ServerProcess.groupAlive(before!))
        if (pid !== undefined) assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )

  it.live(
    "effect/ai: a call past call_timeout is a ToolFailure the model reads, with the typed error for the program",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([everything({ lifecycle: { call_timeout: "1s" } })]))
        yield* registry.start
        const model = ScriptedModel.make((call) =>
          call.index === 0
            ? [ScriptedModel.toolCall("c1", "everything_trigger-long-running-operation", { duration: 5, steps: 5 })]
            : [ScriptedModel.text("it took too long")]
        )
        const loop = yield* AgentLoop.make(registry)
        const turn = yield* Effect.flatMap(Chat.empty, (chat) => loop.turn(chat, "run long")).pipe(
          Effect.provide(model.layer)
        )
        assert.strictEqual(turn.text, "it took too long")
        const [part] = turn.steps[0]?.response.toolResults ?? []
        assert.isTrue(part?.isFailure)
        const failure = part?.result
        assert.instanceOf(failure, ToolOutput.ToolFailure)
        if (failure instanceof ToolOutput.ToolFailure) {
          assert.strictEqual(failure.reason, "CallTimeout")
          assert.strictEqual(failure.error?._tag, "CallTimeout")
          assert.isTrue(failure.retryable)
        }
        const [read] = ScriptedModel.toolResults(model.calls[1]!.prompt)
        assert.isTrue(read?.isFailure)
        const encoded = JSON.stringify(read?.result)
        assert.include(encoded, "everything_trigger-long-running-operation (toolset everything) failed")
        assert.notInclude(encoded, '"error"')
        const pid = pidOf(yield* registry.snapshot, "everything")
        yield* close
        if (pid !== undefined) assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )

  it.live("names a provider rejects are offered in a safe form and routed back to the catalog name", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([mcp("team.tools", process.execPath, { args: [everythingServer, "stdio"] })])
      )
      yield* registry.start
      const safe = ToolNames.make(["team.tools_echo"]).toModel.get("team.tools_echo")!
      assert.match(safe, /^team_tools_echo_[0-9a-f]{8}$/)
      const supervised = yield* AiSdk.make(registry)
      assert.isTrue(Object.keys(supervised.tools).every(ToolNames.isSafe))
      const mock = MockModel.make((step) =>
        step.index === 0 ? [MockModel.toolCall("c1", safe, { message: "dotted" })] : [MockModel.text("done")]
      )
      yield* Effect.promise(() =>
        generateText({ model: mock.model, tools: supervised.tools, stopWhen: stepCountIs(3), prompt: "echo" })
      )
      assert.include(mock.steps[0]?.offered ?? [], safe)
      assert.include(JSON.stringify(MockModel.toolOutputs(mock.steps[1]!.prompt)), "Echo: dotted")
      yield* close
    })
  )

  it.live("AI SDK: aborting mid-call ends generateText at once and leaves the toolset serving", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([everything()]))
      yield* registry.start
      const pid = pidOf(yield* registry.snapshot, "everything")
      const supervised = yield* AiSdk.make(registry)
      const controller = new AbortController()
      const mock = MockModel.make(() => [
        MockModel.toolCall("long", "everything_trigger-long-running-operation", { duration: 30, steps: 30 })
      ])
      const started = Date.now()
      const outcome = yield* Effect.promise(() =>
        generateText({
          model: mock.model,
          tools: supervised.tools,
          stopWhen: stepCountIs(3),
          prompt: "run long",
          abortSignal: controller.signal,
          experimental_onToolCallStart: () => controller.abort()
        }).then(
          () => "finished",
          (error: unknown) => (error instanceof Error ? error.name : String(error))
        )
      )
      assert.strictEqual(outcome, "AbortError")
      assert.isBelow(Date.now() - started, 10_000)
      const echo = yield* registry.callTool("everything_echo", { message: "still here" })
      assert.include(JSON.stringify(echo.content), "Echo: still here")
      assert.strictEqual(pidOf(yield* registry.snapshot, "everything"), pid)
      yield* close
      if (pid !== undefined) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live(
    "AI SDK: a call past call_timeout is a tool error the model reads, with the typed error for the program",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([everything({ lifecycle: { call_timeout: "1s" } })]))
        yield* registry.start
        const supervised = yield* AiSdk.make(registry)
        const mock = MockModel.make((step) =>
          step.index === 0
            ? [MockModel.toolCall("long", "everything_trigger-long-running-operation", { duration: 5, steps: 5 })]
            : [MockModel.text("it took too long")]
        )
        const result = yield* Effect.promise(() =>
          generateText({ model: mock.model, tools: supervised.tools, stopWhen: stepCountIs(3), prompt: "run long" })
        )
        assert.strictEqual(result.text, "it took too long")
        const [read] = MockModel.toolOutputs(mock.steps[1]!.prompt)
        assert.strictEqual(read?.output.type, "error-text")
        assert.include(JSON.stringify(read?.output), "(toolset everything) failed")
        const toolError = result.steps[0]?.content.find((part) => part.type === "tool-error")
        const failure = toolError?.type === "tool-error" ? toolError.error : undefined
        assert.instanceOf(failure, ToolOutput.ToolFailure)
        if (failure instanceof ToolOutput.ToolFailure) assert.strictEqual(failure.error?._tag, "CallTimeout")
        const pid = pidOf(yield* registry.snapshot, "everything")
        yield* close
        if (pid !== undefined) assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )
})
