/**
 * A registry's catalog as an `effect/ai` Toolkit: one `Tool.dynamic` per catalog tool, its JSON
 * Schema passed through, its MCP annotations mapped to `Tool.Readonly` / `Destructive` /
 * `Idempotent` / `OpenWorld`, and its handler routed to `registry.callTool`, so every call goes
 * through supervision (a restarting toolset is waited for, a dead one fails typed).
 *
 * Tools use `failureMode: "return"`: a typed failure — the toolset crashed, timed out, is failed —
 * becomes a `ToolFailure` result the model reads, never a defect that ends the generation. The
 * typed error stays on `ToolFailure.error` for the program.
 */
import type { Toolset } from "@toolvisor/core"
import { type Catalog, Deferral, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Prompt from "effect/ai/Prompt"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import * as ToolNames from "./ToolNames.ts"
import * as ToolOutput from "./ToolOutput.ts"

/** The shape of every tool in a supervised toolkit. */
export type SupervisedTool = Tool.Tool<
  string,
  {
    readonly parameters: typeof Schema.Unknown
    readonly success: typeof ToolOutput.Result
    readonly failure: typeof ToolOutput.ToolFailure
    readonly failureMode: "return"
  }
>

/** A supervised toolkit's tools, by the names the model sees (`ToolNames`). */
export type Tools = Record<string, SupervisedTool>

/** A toolkit with its handlers bound, ready for `LanguageModel.generateText({ toolkit })`. */
export type SupervisedToolkit = Toolkit.WithHandler<Tools>

/** Which of the registry's agents a toolkit serves. */
export interface Options {
  /** The agent whose catalog is offered; the registry's default agent when omitted. */
  readonly agent?: string | undefined
}

/** The model reads a result as its text, the same text an MCP client would show. */
const toModelOutput = (result: Toolset.ToolResult): ReadonlyArray<Prompt.ToolModelOutputPart> => [
  Prompt.textPart({ text: ToolOutput.text(result) })
]

/** Sets only the hints the server gave: an absent hint keeps effect/ai's own default. */
const annotated = (tool: SupervisedTool, hints: Toolset.ToolAnnotations | undefined): SupervisedTool => {
  let out = tool.annotate(Tool.Strict, false)
  if (hints === undefined) return out
  if (hints.title !== undefined) out = out.annotate(Tool.Title, hints.title)
  if (hints.readOnlyHint !== undefined) out = out.annotate(Tool.Readonly, hints.readOnlyHint)
  if (hints.destructiveHint !== undefined) out = out.annotate(Tool.Destructive, hints.destructiveHint)
  if (hints.idempotentHint !== undefined) out = out.annotate(Tool.Idempotent, hints.idempotentHint)
  if (hints.openWorldHint !== undefined) out = out.annotate(Tool.OpenWorld, hints.openWorldHint)
  return out
}

/**
 * One supervised call: the registry's result, a tool-reported error or a typed failure, each as
 * the model should read it.
 */
export const call = (
  registry: ToolsetRegistry.Registry,
  tool: string,
  modelName: string,
  params: unknown,
  agent?: string
): Effect.Effect<Toolset.ToolResult, ToolOutput.ToolFailure> =>
  // Arguments are an object, by MCP; anything else (a string the model encoded twice, `null`) ran
  // the tool with no arguments at all, as if the model had asked for its defaults.
  !Predicate.isObject(params) || Array.isArray(params)
    ? Effect.fail(ToolOutput.invalidArguments(modelName, params))
    : registry.callTool(tool, params, agent).pipe(
        Effect.mapError((error) => ToolOutput.failure(modelName, error)),
        Effect.flatMap((result) =>
          result.isError === true ? Effect.fail(ToolOutput.reported(modelName, result)) : Effect.succeed(result)
        )
      )

type Handler = (params: unknown) => Effect.Effect<Toolset.ToolResult, ToolOutput.ToolFailure>

/** One tool for the model with its handler bound. */
export interface Bound {
  readonly tool: SupervisedTool
  readonly handler: Handler
}

/** A catalog's tools built for the model, once per catalog: toolkits of any part of it are cut from these. */
export interface Built {
  readonly names: ToolNames.ToolNames
  readonly tools: ReadonlyArray<Bound & { readonly entry: Catalog.Entry }>
}

const dynamicTool = (
  modelName: string,
  description: string | undefined,
  parameters: { readonly [key: string]: unknown }
) =>
  Tool.dynamic(modelName, {
    parameters,
    ...(description === undefined ? {} : { description }),
    success: ToolOutput.Result,
    failure: ToolOutput.ToolFailure,
    failureMode: "return",
    toModelOutput
  })

/** Every tool of a catalog, deferred ones included, each routed to `registry.callTool`. */
export const build = (registry: ToolsetRegistry.Registry, catalog: Catalog.Catalog, options: Options = {}): Built => {
  const names = ToolNames.ofCatalog(catalog)
  const tools = catalog.tools.map((entry) => {
    const modelName = names.toModel.get(entry.name) ?? entry.name
    const tool = annotated(
      dynamicTool(modelName, entry.tool.description ?? entry.tool.title, entry.tool.inputSchema),
      entry.tool.annotations
    )
    const handler: Handler = (params) => call(registry, entry.name, modelName, params, options.agent)
    return { entry, tool, handler }
  })
  return { names, tools }
}

/**
 * The `search_tools` tool of one conversation: it searches the registry and records the deferred
 * tools it returns in `loaded`, the conversation's own set.
 */
export const searchTool = (
  registry: ToolsetRegistry.Registry,
  names: ToolNames.ToolNames,
  loaded: Set<string>,
  options: Options = {}
): Bound => ({
  tool: annotated(dynamicTool(Deferral.name, Deferral.description, Deferral.parameters), { readOnlyHint: true }),
  handler: (params) => {
    const { query, limit } = Deferral.argsOf(params)
    const asked = Deferral.catalogQuery(query, (name) => names.fromModel.get(name))
    return registry.searchTools(asked, { limit, agent: options.agent }).pipe(
      Effect.map((result) => {
        Deferral.load(loaded, result)
        const text = Deferral.render(result, query, (name) => names.toModel.get(name) ?? name)
        return { content: [{ type: "text", text }] }
      }),
      Effect.mapError((error) => ToolOutput.failure(Deferral.name, error))
    )
  }
})

/** A toolkit of these tools, handlers bound, ready for `LanguageModel.generateText({ toolkit })`. */
export const toolkitOf = (tools: ReadonlyArray<Bound>): Effect.Effect<SupervisedToolkit> => {
  const handlers: Record<string, Handler> = {}
  for (const { tool, handler } of tools) handlers[tool.name] = handler
  const toolkit = Toolkit.make(...tools.map(({ tool }) => tool))
  return Effect.flatMap(toolkit.toHandlers(handlers), (context) => Effect.provideContext(toolkit, context))
}

/**
 * The toolkit of one catalog, every tool offered (deferred ones too: `AgentLoop` offers those
 * through `search_tools`). Cheap enough to run after every tool-call batch.
 */
export const fromCatalog = (
  registry: ToolsetRegistry.Registry,
  catalog: Catalog.Catalog,
  options: Options = {}
): Effect.Effect<SupervisedToolkit> => toolkitOf(build(registry, catalog, options).tools)

/** The toolkit of the registry's current catalog. */
export const make = (registry: ToolsetRegistry.Registry, options: Options = {}) =>
  Effect.flatMap(registry.catalog(options.agent), (catalog) => fromCatalog(registry, catalog, options))
