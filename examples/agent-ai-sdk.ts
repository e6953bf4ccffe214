/**
 * A Vercel AI SDK agent whose tools are Toolvisor's supervised toolsets — no Effect required.
 * `AiSdk.open` starts the toolsets of an agent config; `tools` and `prepareStep` go straight into
 * `generateText`. Every call goes through supervision, and before each step toolsets that are
 * down are retried, so tools that come up mid-turn are offered on the next step.
 *
 *   npx node --conditions=@toolvisor/source examples/agent-ai-sdk.ts [examples/agent.yaml]
 *
 * The model below is scripted (`MockLanguageModelV3`) so the example runs without an API key;
 * pass any AI SDK model instead, e.g. `openai("gpt-5")` from `@ai-sdk/openai`.
 */
import * as NodePath from "node:path"
import { AiSdk } from "@toolvisor/ai"
import { generateText, stepCountIs } from "ai"
import { MockLanguageModelV3 } from "ai/test"

const config = process.argv[2] ?? NodePath.join(import.meta.dirname, "agent.yaml")

/** A stand-in for a provider: one call of the first echo tool offered, then an answer. */
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt, tools }) => {
    const read = prompt.flatMap((message) => (message.role === "tool" ? message.content : []))
    const echo = tools?.find((tool) => tool.name.endsWith("echo"))
    const usage = {
      inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 0, text: 0, reasoning: 0 }
    }
    if (read.length === 0 && echo !== undefined) {
      const input = JSON.stringify({ message: "hello from the AI SDK" })
      return {
        content: [{ type: "tool-call", toolCallId: "call-1", toolName: echo.name, input }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: []
      }
    }
    const last = read.at(-1)
    const answer = last?.type === "tool-result" && last.output.type === "text" ? last.output.value : "no tool"
    return {
      content: [{ type: "text", text: `The tool said: ${answer}` }],
      finishReason: { unified: "stop", raw: undefined },
      usage,
      warnings: []
    }
  }
})

const toolvisor = await AiSdk.open(config, {
  onNotice: (notice) =>
    console.log(notice._tag === "ToolsetFailing" ? `⚠ ${notice.error}` : `✓ ${notice.toolset} is back`)
})
try {
  const result = await generateText({
    model,
    tools: toolvisor.tools,
    prepareStep: toolvisor.prepareStep,
    stopWhen: stepCountIs(5),
    prompt: "Say hello through the echo tool."
  })
  console.log(result.text)
} finally {
  await toolvisor.close()
}
