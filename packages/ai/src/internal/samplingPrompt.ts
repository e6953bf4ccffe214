/**
 * A server's sampling request as plain turns for an agent's model: its system prompt and its
 * messages, each as text. Text is what every model reads; an image or audio part is named, not
 * sent (the agent's model may not take it, and the server's bytes are not passed to a provider
 * unseen). The model's answer goes back as one text message.
 */
import type { Sampling } from "@toolvisor/mcp"

export interface Turn {
  readonly role: "user" | "assistant"
  readonly text: string
}

export interface SamplingPrompt {
  readonly system: string | undefined
  readonly turns: ReadonlyArray<Turn>
  readonly maxTokens: number
}

type Params = Sampling.Request["params"]
type Content = Params["messages"][number]["content"]
type Part = Exclude<Content, ReadonlyArray<unknown>>

const textOf = (part: Part): string => {
  switch (part.type) {
    case "text":
      return part.text
    case "image":
    case "audio":
      return `[${part.type} (${part.mimeType}) omitted]`
    default:
      return `[${part.type} omitted]`
  }
}

/**
 * The most tokens a server may have the agent's model write for it. A server asks for what its
 * answer needs; `maxTokens: 1e15` reached the provider as is, a budget no answer needs.
 */
export const maxTokens = 16_384

export const of = (params: Params): SamplingPrompt => ({
  system: params.systemPrompt,
  maxTokens: Math.min(params.maxTokens, maxTokens),
  turns: params.messages.map((message) => ({
    role: message.role,
    text: (Array.isArray(message.content) ? message.content : [message.content]).map(textOf).join("\n")
  }))
})

/** The model's text as the server is answered. */
export const result = (text: string, model: string, stopped: "endTurn" | "maxTokens"): Sampling.Result => ({
  role: "assistant",
  content: { type: "text", text },
  model,
  stopReason: stopped
})
