/**
 * A scripted AI SDK model over `MockLanguageModelV3` from `ai/test`: each step gets the tools it
 * was offered and the prompt so far and answers with content parts. It records every step, so a
 * test can assert what the model was offered and what it read back.
 */
import { MockLanguageModelV3 } from "ai/test"

type CallOptions = Parameters<MockLanguageModelV3["doGenerate"]>[0]
type Content = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>["content"][number]

export interface Step {
  readonly index: number
  readonly offered: ReadonlyArray<string>
  readonly prompt: CallOptions["prompt"]
}

export type Script = (step: Step) => ReadonlyArray<Content>

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 }
}

export const toolCall = (toolCallId: string, toolName: string, input: unknown): Content => ({
  type: "tool-call",
  toolCallId,
  toolName,
  input: JSON.stringify(input)
})

export const text = (value: string): Content => ({ type: "text", text: value })

/** What the model read back for each tool call: the output the AI SDK put in the prompt. */
export const toolOutputs = (prompt: CallOptions["prompt"]) =>
  prompt.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) =>
          part.type === "tool-result" ? [{ name: part.toolName, output: part.output }] : []
        )
      : []
  )

export const make = (script: Script) => {
  const steps: Array<Step> = []
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const step = { index: steps.length, offered: (options.tools ?? []).map((t) => t.name), prompt: options.prompt }
      steps.push(step)
      const content = Array.from(script(step))
      const calls = content.some((part) => part.type === "tool-call")
      return {
        content,
        finishReason: { unified: calls ? "tool-calls" : "stop", raw: undefined },
        usage,
        warnings: []
      }
    }
  })
  return { model, steps }
}
