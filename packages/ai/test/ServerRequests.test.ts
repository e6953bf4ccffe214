/**
 * A server's sampling request answered by the agent's own model, and its elicitation request by
 * the app, in both adapters: the effect/ai `AgentLoop` (a scripted `LanguageModel` layer, the
 * model boundary) and the AI SDK (`MockLanguageModelV3`), over server-everything, a real server.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Elicitation } from "@toolvisor/mcp"
import { generateText, stepCountIs } from "ai"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { writeConfig } from "../../../test/support/Everything.ts"
import { config, open } from "../../../test/support/Registry.ts"
import * as AgentLoop from "../src/AgentLoop.ts"
import * as AiSdk from "../src/AiSdk.ts"
import { everything, tempDir } from "./helpers.ts"
import * as MockModel from "./MockModel.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

/** What server-everything's `trigger-sampling-request` sends the model. */
const samplingMarker = "Resource trigger-sampling-request context"

const systemOf = (prompt: ScriptedModel.Call["prompt"]) =>
  prompt.content.flatMap((message) => (message.role === "system" ? [message.content] : [])).join("\n")

describe("server requests answered by the agent", () => {
  it.live(
    "AgentLoop: the agent's LanguageModel answers a server's sampling request; server instructions join the system prompt",
    () =>
      Effect.gen(function* () {
        const model = ScriptedModel.make((call) => {
          if (JSON.stringify(call.prompt).includes(samplingMarker)) {
            return [ScriptedModel.text("the agent's model says 42"), ScriptedModel.finish("stop")]
          }
          return call.offered.includes("everything_trigger-sampling-request") &&
            ScriptedModel.toolResults(call.prompt).length === 0
            ? [
                ScriptedModel.toolCall("c1", "everything_trigger-sampling-request", { prompt: "the answer?" }),
                ScriptedModel.finish("tool-calls")
              ]
            : [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
        })
        const { registry, close } = yield* open(config([everything()])).pipe(
          Effect.provide(AgentLoop.sampling({ model: "scripted" }).pipe(Layer.provide(model.layer)))
        )
        yield* registry.start
        const loop = yield* AgentLoop.make(registry)
        const chat = yield* Chat.fromPrompt([{ role: "system", content: "You are terse." }])
        const turn = yield* loop.turn(chat, "ask the server").pipe(Effect.provide(model.layer))
        assert.strictEqual(turn.text, "done")
        const asked = model.calls.find((call) => JSON.stringify(call.prompt).includes(samplingMarker))
        assert.isDefined(asked, "the server's sampling request reached the agent's model")
        assert.strictEqual(systemOf(asked!.prompt), "You are a helpful test server.")
        const read = model.calls.flatMap((call) => ScriptedModel.toolResults(call.prompt))
        assert.include(JSON.stringify(read[0]?.result), "the agent's model says 42")
        assert.include(JSON.stringify(read[0]?.result), 'model\\": \\"scripted')
        // The chat's own system prompt first, then the toolsets' instructions (server-everything has some).
        const system = systemOf(model.calls[0]!.prompt)
        assert.isTrue(system.startsWith("You are terse.\n\n## everything\n"), system.slice(0, 80))
        yield* close
      })
  )

  it.live("AI SDK: open's model answers sampling and onElicit answers elicitation", () =>
    Effect.gen(function* () {
      const path = writeConfig(tempDir("requests"))
      const mock = MockModel.make((step) => {
        if (JSON.stringify(step.prompt).includes(samplingMarker)) return [MockModel.text("sampled by the AI SDK model")]
        const done = MockModel.toolOutputs(step.prompt).length
        if (done === 0) return [MockModel.toolCall("c1", "everything_trigger-sampling-request", { prompt: "hi" })]
        if (done === 1) return [MockModel.toolCall("c2", "everything_trigger-elicitation-request", {})]
        return [MockModel.text("done")]
      })
      const asked: Array<Elicitation.Request> = []
      const opened = yield* Effect.promise(() =>
        AiSdk.open(path, {
          model: mock.model,
          onElicit: async (request) => {
            asked.push(request)
            return { action: "accept", content: { name: "Ada Lovelace" } }
          }
        })
      )
      const result = yield* Effect.promise(() =>
        generateText({
          model: mock.model,
          tools: opened.tools,
          prepareStep: opened.prepareStep,
          stopWhen: stepCountIs(5),
          instructions: opened.instructions(),
          prompt: "sample, then ask"
        })
      )
      assert.strictEqual(result.text, "done")
      const outputs = mock.steps.flatMap((step) => MockModel.toolOutputs(step.prompt))
      const texts = outputs.map((output) => JSON.stringify(output.output))
      assert.isTrue(
        texts.some((text) => text.includes("sampled by the AI SDK model")),
        texts.join("\n")
      )
      assert.isTrue(
        texts.some((text) => text.includes("Name: Ada Lovelace")),
        texts.join("\n")
      )
      assert.strictEqual(asked[0]?.toolset, "everything")
      assert.strictEqual(asked[0]?.params.mode, "form")
      yield* Effect.promise(() => opened.close())
    })
  )
})
