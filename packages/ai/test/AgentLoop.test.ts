import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { config, fixtureEntry, open } from "../../../test/support/Registry.ts"
import * as AgentLoop from "../src/AgentLoop.ts"
import { everything } from "./helpers.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

const pidsOf = (board: ReadonlyArray<{ readonly pid?: number | undefined }>) =>
  board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))

describe("AgentLoop (effect/ai)", () => {
  it.live("a scripted model calls everything_echo and reads the real result in the same turn", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([everything()]))
      yield* registry.start
      const model = ScriptedModel.make((call) =>
        call.index === 0
          ? [ScriptedModel.toolCall("c1", "everything_echo", { message: "hello" }), ScriptedModel.finish("tool-calls")]
          : [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
      )
      const loop = yield* AgentLoop.make(registry)
      const turn = yield* Effect.flatMap(Chat.empty, (chat) => loop.turn(chat, "say hello")).pipe(
        Effect.provide(model.layer)
      )
      assert.strictEqual(turn.steps.length, 2)
      assert.strictEqual(turn.text, "done")
      assert.include(model.calls[0]?.offered ?? [], "everything_echo")
      const read = ScriptedModel.toolResults(model.calls[1]!.prompt)
      assert.strictEqual(read.length, 1)
      assert.isFalse(read[0]?.isFailure)
      assert.include(JSON.stringify(read[0]?.result), "Echo: hello")
      const pids = pidsOf(yield* registry.snapshot)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live(
    "a model that calls a tool it was not offered is told so and asked again; one that keeps on fails the turn",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([fixtureEntry("fx", { prefix: "fx" })]))
        yield* registry.start
        const loop = yield* AgentLoop.make(registry)
        const corrected = ScriptedModel.make((call) =>
          call.index === 0
            ? [ScriptedModel.toolCall("c1", "fx_ech", { message: "made up" }), ScriptedModel.finish("tool-calls")]
            : call.index === 1
              ? [ScriptedModel.toolCall("c2", "fx_echo", { message: "hello" }), ScriptedModel.finish("tool-calls")]
              : [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
        )
        const chat = yield* Chat.empty
        const turn = yield* loop.turn(chat, "say hello").pipe(Effect.provide(corrected.layer))
        assert.strictEqual(turn.text, "done")
        assert.strictEqual(turn.steps.length, 2)
        const told = JSON.stringify(corrected.calls[1]?.prompt)
        assert.include(told, "it called a tool that is not offered to you")
        assert.include(told, "say hello")
        assert.include(JSON.stringify(ScriptedModel.toolResults(corrected.calls[2]!.prompt)), "hello")

        const stubborn = ScriptedModel.make(() => [
          ScriptedModel.toolCall("c", "fx_ech", {}),
          ScriptedModel.finish("tool-calls")
        ])
        const failed = yield* Effect.flip(
          Effect.flatMap(Chat.empty, (fresh) => loop.turn(fresh, "again")).pipe(Effect.provide(stubborn.layer))
        )
        assert.strictEqual(failed.reason._tag, "InvalidOutputError")
        assert.strictEqual(stubborn.calls.length, 3)
        yield* close
      })
  )

  it.live(
    "the toolkit is rebuilt only when the catalog's version moves: a tool added by list_changed joins at the next refresh",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([fixtureEntry("fx", { prefix: "fx" })]))
        yield* registry.start
        const loop = yield* AgentLoop.make(registry)
        const built = yield* loop.toolkit
        assert.deepStrictEqual(yield* loop.refresh, [])
        assert.strictEqual(yield* loop.toolkit, built, "nothing moved: the same toolkit")
        assert.notInclude(Object.keys(built.tools), "fx_dynamic_1")

        const version = (yield* registry.catalog()).version
        const added = yield* Effect.flatMap(built.handle("fx_add_tool", {}), Stream.runCollect)
        assert.isFalse(added[0]?.isFailure)
        yield* registry.catalogChanges().pipe(
          Stream.filter((catalog) => catalog.version !== version),
          Stream.runHead
        )

        yield* loop.refresh
        const rebuilt = yield* loop.toolkit
        assert.notStrictEqual(rebuilt, built)
        assert.include(Object.keys(rebuilt.tools), "fx_dynamic_1")
        yield* loop.refresh
        assert.strictEqual(yield* loop.toolkit, rebuilt, "nothing moved since: the same toolkit")
        yield* close
      })
  )
})
