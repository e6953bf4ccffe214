import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import { config, open } from "../../runtime/test/helpers.ts"
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
})
