/**
 * A `LanguageModel` that plays a script instead of calling a provider: each model call gets the
 * tools it was offered and the prompt so far, and answers with encoded response parts. It records
 * every call, so a test can assert what the model was offered and what it read back.
 */
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

/** A tool definition as a provider is sent it: the part of a request that costs tokens per tool. */
export interface Definition {
  readonly name: string
  readonly description: string | undefined
  readonly parameters: unknown
}

export interface Call {
  readonly index: number
  readonly offered: ReadonlyArray<string>
  readonly definitions: ReadonlyArray<Definition>
  readonly prompt: Prompt.Prompt
}

export type Script = (call: Call) => ReadonlyArray<Response.PartEncoded>

const usage = {
  inputTokens: { uncached: 0, total: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 }
}

export const toolCall = (id: string, name: string, params: unknown): Response.PartEncoded => ({
  type: "tool-call",
  id,
  name,
  params
})

export const text = (value: string): Response.PartEncoded => ({ type: "text", text: value })

export const finish = (reason: "stop" | "tool-calls"): Response.PartEncoded => ({ type: "finish", reason, usage })

/** The text of every tool result the prompt holds, in order, as the model would read it. */
export const toolResults = (
  prompt: Prompt.Prompt
): ReadonlyArray<{ readonly name: string; readonly isFailure: boolean; readonly result: unknown }> =>
  prompt.content.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) =>
          part.type === "tool-result" ? [{ name: part.name, isFailure: part.isFailure, result: part.result }] : []
        )
      : []
  )

export const make = (script: Script) => {
  const calls: Array<Call> = []
  const generate = (options: LanguageModel.ProviderOptions) =>
    Effect.sync(() => {
      const call = {
        index: calls.length,
        offered: options.tools.map((t) => t.name),
        definitions: options.tools.map((t) => ({
          name: t.name,
          description: Tool.getDescription(t),
          parameters: Tool.getJsonSchema(t)
        })),
        prompt: options.prompt
      }
      calls.push(call)
      return Array.from(script(call))
    })
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: generate,
      // The loops under test use generateText; a stream would be a different script.
      streamText: () => Stream.die("the scripted model does not stream")
    })
  )
  return { calls, layer }
}
