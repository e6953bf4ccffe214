/**
 * The registry as Vercel AI SDK (`ai` 7) tools, for programs that never touch Effect: a live
 * `ToolSet` of `dynamicTool`s with the catalog's JSON Schemas, each `execute` routed through
 * `registry.callTool` (honouring the call's `abortSignal`), and a `prepareStep` that runs the
 * in-turn reprobe between steps. The AI SDK reads the tool set again on every step, so `refresh`
 * edits it in place when the catalog's `version` moved: a toolset that comes up mid-turn is offered
 * on the very next step. When the config defers tools, the set holds the eager ones and
 * `search_tools`, and a search adds the deferred tools it returned (see `Deferral`).
 *
 * A failed call throws a `ToolOutput.ToolFailure` (an `Error`): the AI SDK turns it into a tool
 * error the model reads, and the program finds the typed error on the step's `tool-error` part.
 *
 * `open` can be given the agent's model, which then answers its servers' sampling requests
 * (`sampling`), and an `onElicit` callback, which answers their elicitation requests; without
 * them the servers are not offered either. `instructions` is what to add to `system`.
 */
import type { Toolset } from "@toolvisor/core"
import { Elicitation, Sampling } from "@toolvisor/mcp"
import { type Catalog, Deferral, ToolsetRegistry } from "@toolvisor/runtime"
import { dynamicTool, generateText, jsonSchema, type LanguageModel, type ToolSet } from "ai"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as SamplingPrompt from "./internal/samplingPrompt.ts"
import * as RegistryToolkit from "./RegistryToolkit.ts"
import * as Reprobe from "./Reprobe.ts"
import * as ToolNames from "./ToolNames.ts"
import * as ToolOutput from "./ToolOutput.ts"

/** The agent whose tools are offered, how the reprobe behaves, and who hears its notices. */
export interface Options extends Reprobe.Options {
  /** The agent whose catalog is offered; the registry's default agent when omitted. */
  readonly agent?: string | undefined
  /** Called with every warning and recovery notice, as soon as a refresh finds it. */
  readonly onNotice?: ((notice: Reprobe.Notice) => void) | undefined
}

/** The registry's tools in the AI SDK's terms: what `generateText` and `streamText` take, kept current. */
export interface SupervisedTools {
  /**
   * Pass as `tools`: kept up to date in place by `refresh`. When tools are deferred it holds the
   * eager ones, `search_tools`, and the deferred tools this conversation's searches returned.
   */
  readonly tools: ToolSet
  /** Reprobes toolsets that are down and updates `tools` if the catalog moved; returns the notices. */
  readonly refresh: () => Promise<ReadonlyArray<Reprobe.Notice>>
  /** Pass as `prepareStep`: a refresh before every step, so new tools join the same turn. */
  readonly prepareStep: () => Promise<undefined>
  /**
   * What to tell the model about its tools (for `system`): each toolset's configured `instruction`
   * with its server's instructions, and how to find deferred tools. As of the last refresh.
   */
  readonly instructions: () => string
}

/** Runs one supervised call for the AI SDK: the result, or the failure thrown for the SDK to report. */
const execute =
  (registry: ToolsetRegistry.Registry, tool: string, modelName: string, agent: string | undefined) =>
  async (input: unknown, options: { readonly abortSignal?: AbortSignal | undefined }): Promise<Toolset.ToolResult> => {
    const exit = await Effect.runPromiseExit(RegistryToolkit.call(registry, tool, modelName, input, agent), {
      signal: options.abortSignal
    })
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }

/** One catalog tool as an AI SDK dynamic tool. */
const toAiTool = (registry: ToolsetRegistry.Registry, entry: Catalog.Entry, modelName: string, agent?: string) => {
  const description = entry.tool.description ?? entry.tool.title
  return dynamicTool({
    ...(description === undefined ? {} : { description }),
    inputSchema: jsonSchema(entry.tool.inputSchema),
    execute: execute(registry, entry.name, modelName, agent),
    toModelOutput: ({ output }) => ({
      type: "text",
      value: ToolOutput.isResult(output) ? ToolOutput.text(output) : JSON.stringify(output)
    })
  })
}

/** The AI SDK tools of one catalog, keyed by the names the model sees. */
export const fromCatalog = (
  registry: ToolsetRegistry.Registry,
  catalog: Catalog.Catalog,
  options: Pick<Options, "agent"> = {}
): ToolSet => {
  const names = ToolNames.ofCatalog(catalog)
  const tools: ToolSet = {}
  for (const entry of catalog.tools) {
    const modelName = names.toModel.get(entry.name) ?? entry.name
    tools[modelName] = toAiTool(registry, entry, modelName, options.agent)
  }
  return tools
}

/** `search_tools` for one conversation: what it returns joins `loaded` and, through `loaded`, the tool set. */
const searchAiTool = (
  registry: ToolsetRegistry.Registry,
  names: () => ToolNames.ToolNames,
  loaded: Set<string>,
  onLoad: () => void,
  agent: string | undefined
) =>
  dynamicTool({
    description: Deferral.description,
    inputSchema: jsonSchema(Deferral.parameters),
    execute: async (input, options) => {
      const { query, limit } = Deferral.argsOf(input)
      const asked = Deferral.catalogQuery(query, (name) => names().fromModel.get(name))
      const exit = await Effect.runPromiseExit(registry.searchTools(asked, { limit, agent }), {
        signal: options.abortSignal
      })
      if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
      Deferral.load(loaded, exit.value)
      onLoad()
      const text = Deferral.render(exit.value, query, (name) => names().toModel.get(name) ?? name)
      return { content: [{ type: "text", text }] }
    },
    toModelOutput: ({ output }) => ({
      type: "text",
      value: ToolOutput.isResult(output) ? ToolOutput.text(output) : JSON.stringify(output)
    })
  })

/**
 * The registry's tools for the AI SDK, as an Effect (for apps that have a registry in hand). One
 * value is one conversation: what its searches loaded is its own.
 */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<SupervisedTools, ToolsetRegistry.UnknownAgent, Scope.Scope> =>
  Effect.gen(function* () {
    const reprobe = yield* Reprobe.make(registry, options)
    const tools: ToolSet = {}
    /** What each model name was built from, so an unchanged tool keeps its object across refreshes. */
    const built = new Map<string, Toolset.Tool>()
    const loaded = new Set<string>()
    let catalog = yield* registry.catalog(options.agent)
    let names = ToolNames.ofCatalog(catalog)
    const search = searchAiTool(
      registry,
      () => names,
      loaded,
      () => sync(catalog),
      options.agent
    )

    const sync = (next: Catalog.Catalog) => {
      if (next !== catalog) names = ToolNames.ofCatalog(next)
      catalog = next
      const offered = new Set<string>()
      for (const entry of next.tools) {
        if (!Deferral.isOffered(entry, loaded)) continue
        const modelName = names.toModel.get(entry.name) ?? entry.name
        offered.add(modelName)
        if (built.get(modelName) === entry.tool) continue
        tools[modelName] = toAiTool(registry, entry, modelName, options.agent)
        built.set(modelName, entry.tool)
      }
      if (Deferral.hasDeferred(next)) {
        offered.add(Deferral.name)
        tools[Deferral.name] = search
      }
      for (const modelName of Object.keys(tools)) {
        if (offered.has(modelName)) continue
        delete tools[modelName]
        built.delete(modelName)
      }
    }

    sync(catalog)

    const refreshEffect = Effect.gen(function* () {
      const notices = yield* reprobe.check
      const next = yield* Effect.option(registry.catalog(options.agent))
      if (Option.isSome(next) && next.value.version !== catalog.version) sync(next.value)
      for (const notice of notices) options.onNotice?.(notice)
      return notices
    })

    const refresh = () => Effect.runPromise(refreshEffect)
    return {
      tools,
      refresh,
      prepareStep: () => refresh().then(() => undefined),
      instructions: () => Deferral.instructions(catalog)
    }
  })

/** Tools over a registry the caller owns: closing them leaves the registry running. */
export interface Closeable extends SupervisedTools {
  /** Ends a reprobe still in flight; the registry itself is left as it is. */
  readonly close: () => Promise<void>
}

/** The registry's tools for the AI SDK, as a Promise. */
export const toolvisorTools = async (registry: ToolsetRegistry.Registry, options: Options = {}): Promise<Closeable> => {
  const scope = Effect.runSync(Scope.make())
  const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  try {
    return { ...(await Effect.runPromise(Scope.provide(make(registry, options), scope))), close }
  } catch (error) {
    await close()
    throw error
  }
}

/** Tools over a registry `open` started and owns: closing them stops its toolsets. */
export interface Opened extends SupervisedTools, AsyncDisposable {
  readonly registry: ToolsetRegistry.Registry
  /**
   * Another conversation over the same toolsets: its own tool set, whose searches load tools for
   * it alone. `close` it when the conversation ends; closing the `Opened` ends it too.
   */
  readonly chat: () => Promise<Closeable>
  /** Stops every toolset; no server outlives it. */
  readonly close: () => Promise<void>
}

/**
 * Sampling answered by an AI SDK model: each `sampling/createMessage` of a server becomes one
 * `generateText` call of `model`, its messages as text. The app is the only caller, so requests
 * are answered whatever their origin.
 */
export const sampling = (model: LanguageModel): Sampling.Service => ({
  createMessage: (request) => {
    const asked = SamplingPrompt.of(request.params)
    return Effect.tryPromise({
      try: (abortSignal) =>
        generateText({
          model,
          ...(asked.system === undefined ? {} : { instructions: asked.system }),
          messages: asked.turns.map((turn) => ({ role: turn.role, content: turn.text })),
          maxOutputTokens: asked.maxTokens,
          abortSignal
        }),
      catch: (cause) =>
        new Sampling.Declined({
          toolset: request.toolset,
          message: `the agent's model failed: ${cause instanceof Error ? cause.message : String(cause)}`,
          cause
        })
    }).pipe(
      Effect.map((result) =>
        SamplingPrompt.result(
          result.text,
          result.response.modelId,
          result.finishReason === "length" ? "maxTokens" : "endTurn"
        )
      )
    )
  },
  tools: false,
  withoutOrigin: "handle"
})

/** What `open` offers the servers: the agent's model for sampling, the app's answer to elicitation. */
export interface Features {
  /** Answers the servers' sampling requests (`sampling`). */
  readonly model?: LanguageModel | undefined
  /** Answers the servers' elicitation requests: a form to fill in or a URL to open, shown to the user. */
  readonly onElicit?: ((request: Elicitation.Request) => Promise<Elicitation.Result>) | undefined
}

/** A callback that fails is a user who cancelled: the server is answered either way. */
const elicitWith = (onElicit: NonNullable<Features["onElicit"]>) =>
  Elicitation.layer((request) => Effect.promise(() => onElicit(request).catch(() => ({ action: "cancel" as const }))), {
    withoutOrigin: "handle"
  })

const featuresLayer = ({ model, onElicit }: Features) =>
  Layer.mergeAll(
    model === undefined ? Layer.empty : Layer.succeed(Sampling.Sampling, sampling(model)),
    onElicit === undefined ? Layer.empty : elicitWith(onElicit)
  )

/**
 * Starts the toolsets of a config file (docker-agent YAML or `mcpServers` JSON) and returns their
 * tools for the AI SDK. `await using` (or `close`) stops them all.
 */
export const open = async (
  path: string,
  options: Options & ToolsetRegistry.FileOptions & Features = {}
): Promise<Opened> => {
  const runtime = ManagedRuntime.make(
    ToolsetRegistry.layerFile(path, options).pipe(Layer.provide(featuresLayer(options)))
  )
  try {
    const registry = await runtime.runPromise(
      Effect.gen(function* () {
        return yield* ToolsetRegistry.ToolsetRegistry
      })
    )
    const supervised = await toolvisorTools(registry, options)
    const chats = new Set<Closeable>()
    const close = async () => {
      await Promise.all([...chats].map((other) => other.close()))
      await supervised.close()
      await runtime.dispose()
    }
    const chat = async (): Promise<Closeable> => {
      const other = await toolvisorTools(registry, options)
      chats.add(other)
      return {
        ...other,
        close: () => {
          chats.delete(other)
          return other.close()
        }
      }
    }
    return { ...supervised, registry, chat, close, [Symbol.asyncDispose]: close }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
