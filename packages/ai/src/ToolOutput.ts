/**
 * What a model reads back from a tool call, the same for every agent stack: the result's text
 * (structured content when there is no text), and for a failed call a `ToolFailure` whose message
 * names the tool, its toolset and what happened, so the model can retry, pick another tool or
 * tell the user — a failure is a result it reads, never a crashed generation.
 */
import { LifecycleError, type Toolset } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** What `text` reads of a result: MCP's shape, as the registry or the transcript holds it. */
export interface Readable {
  readonly content: ReadonlyArray<{ readonly [key: string]: unknown }>
  readonly structuredContent?: { readonly [key: string]: unknown } | undefined
}

type Content = Readable["content"][number]

/** One content item as text; binary items are named, not inlined. */
const contentText = (item: Content): string => {
  if (typeof item.text === "string") return item.text
  const resource = item.resource
  if (item.type === "resource" && typeof resource === "object" && resource !== null) {
    if ("text" in resource && typeof resource.text === "string") return resource.text
    if ("uri" in resource && typeof resource.uri === "string") return `[resource ${resource.uri}]`
  }
  const type = typeof item.type === "string" ? item.type : "content"
  if (typeof item.uri === "string") return `[${type} ${item.uri}]`
  return `[${type}${typeof item.mimeType === "string" ? ` ${item.mimeType}` : ""} omitted]`
}

/** The text a model reads for a result: its content items, or its structured content as JSON. */
export const text = (result: Readable): string =>
  result.content.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : result.content.map(contentText).join("\n")

/** Whether a value is a tool result: an object with a content array. */
export const isResult = (u: unknown): u is Toolset.ToolResult => Predicate.isObject(u) && Array.isArray(u.content)

/**
 * A tool result as a Schema, so an effect/ai tool can put it in the transcript. A declared schema
 * with a guard, not a struct: effect/ai encodes every result, and a struct of records costs more
 * per call than the stdio round trip it carries (measured in test/bench/ai.bench.ts).
 */
export const Result: Schema.declare<Toolset.ToolResult> = Schema.declare(isResult)

/**
 * A tool call that did not give a result, as the model sees it. `reason` is the typed error's
 * tag (`ServerCrashed`, `CallTimeout`, `UnknownTool`…), `ToolReportedError` when the tool answered
 * with `isError`, or `InvalidArguments` when the model's arguments were not an object (the tool did
 * not run); `retryable` says whether the same call may succeed later. The typed error itself rides
 * along in `error` for the program, outside the encoded form the model reads.
 */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  tool: Schema.String,
  reason: Schema.String,
  message: Schema.String,
  retryable: Schema.Boolean
}) {
  declare readonly error?: ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent | undefined
}

/** Whether calling the same tool again later may succeed. */
export const isRetryable = (error: ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent): boolean =>
  LifecycleError.isLifecycleError(error)
    ? LifecycleError.isTransient(error)
    : error._tag === "UnknownTool" && error.incomplete

/** The failure a model reads for a typed call error; the error stays attached for the program. */
export const failure = (tool: string, error: ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent): ToolFailure => {
  const retryable = isRetryable(error)
  const toolset = "toolset" in error ? ` (toolset ${error.toolset})` : ""
  const hint = retryable ? " The toolset is supervised: the same call may succeed shortly." : ""
  return Object.assign(
    new ToolFailure({
      tool,
      reason: error._tag,
      message: `${tool}${toolset} failed: ${error.message.replace(/\.$/, "")}.${hint}`,
      retryable
    }),
    { error }
  )
}

/** The failure a model reads when its arguments are not a JSON object: the tool did not run. */
export const invalidArguments = (tool: string, params: unknown): ToolFailure =>
  new ToolFailure({
    tool,
    reason: "InvalidArguments",
    message: `${tool} did not run: its arguments must be a JSON object, got ${params === null ? "null" : Array.isArray(params) ? "an array" : typeof params}.`,
    retryable: false
  })

/** The failure a model reads when the tool itself answered with `isError`. */
export const reported = (tool: string, result: Readable): ToolFailure =>
  new ToolFailure({ tool, reason: "ToolReportedError", message: text(result), retryable: false })
