/**
 * An effect/ai agent whose tools are Toolvisor's supervised toolsets. `AgentLoop` runs the turn:
 * the model is offered every tool of the agent config, tool calls go through supervision, and
 * after each tool-call batch toolsets that are down are retried — tools that come up mid-turn
 * are offered on the next model call. Warnings and recovery notices arrive as values.
 *
 *   npx node --conditions=@toolvisor/source examples/agent-effect.ts [examples/agent.yaml]
 *
 * The model below is scripted so the example runs without an API key: it calls an echo tool once,
 * then answers with what it read. For a real model, provide a provider's `LanguageModel` layer
 * instead (for example `OpenAiLanguageModel.layer` from `@effect/ai-openai`).
 */
import * as NodePath from "node:path"
import { NodeRuntime } from "@effect/platform-node"
import { AgentLoop } from "@toolvisor/ai"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Chat from "effect/ai/Chat"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

const config = process.argv[2] ?? NodePath.join(import.meta.dirname, "agent.yaml")

const program = Effect.gen(function* () {
  const agent = yield* AgentLoop.AgentLoop
  const chat = yield* Chat.empty
  const turn = yield* agent.turn(chat, "Say hello through the echo tool.")
  for (const notice of turn.notices) {
    console.log(notice._tag === "ToolsetFailing" ? `⚠ ${notice.error}` : `✓ ${notice.toolset} is back`)
  }
  console.log(turn.text)
})

/** A stand-in for a provider: one call of the first echo tool offered, then an answer. */
const scriptedModel = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: ({ prompt, tools }) =>
      Effect.sync(() => {
        const read = prompt.content.flatMap((message) => (message.role === "tool" ? message.content : []))
        const echo = tools.find((tool) => tool.name.endsWith("echo"))
        if (read.length === 0 && echo !== undefined) {
          return [{ type: "tool-call", id: "call-1", name: echo.name, params: { message: "hello from effect/ai" } }]
        }
        const last = read.at(-1)
        const answer = last?.type === "tool-result" ? Prompt.toolModelOutputToText(last.modelOutput ?? []) : "no tool"
        return [{ type: "text", text: `The tool said: ${answer}` }]
      }),
    streamText: () => Stream.die("the scripted model does not stream")
  })
)

// runMain turns Ctrl-C into interruption: every toolset is stopped and no server outlives us.
NodeRuntime.runMain(
  program.pipe(
    Effect.provide(AgentLoop.layer()),
    Effect.provide(ToolsetRegistry.layerFile(config)),
    Effect.provide(scriptedModel)
  )
)
