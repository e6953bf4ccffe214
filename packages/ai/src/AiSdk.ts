/**
 * The registry as Vercel AI SDK (`ai` 7) tools, for programs that never touch Effect: a live
 * `ToolSet` of `dynamicTool`s with the catalog's JSON Schemas, each `execute` routed through
 * `registry.callTool` (honouring the call's `abortSignal`), and a `prepareStep` that runs the
 * in-turn reprobe between steps. The AI SDK reads the tool set again on every step, so `refresh`
 * edits it in place when the catalog's `version` moved: a toolset that comes up mid-turn is offered
 * on the very next step.
 *
 * A failed call throws a `ToolOutput.ToolFailure` (an `Error`): the AI SDK turns it into a tool
 * error the model reads, and the program finds the typed error on the step's `tool-error` part.
 */
import type { Toolset } from "@toolvisor/core"
import { type Catalog, Runtime, ToolsetRegistry } from "@toolvisor/runtime"
import { dynamicTool, jsonSchema, type ToolSet } from "ai"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as RegistryToolkit from "./RegistryToolkit.ts"
import * as Reprobe from "./Reprobe.ts"
import * as ToolNames from "./ToolNames.ts"
import * as ToolOutput from "./ToolOutput.ts"

export interface Options extends Reprobe.Options {
  /** The agent whose catalog is offered; the registry's default agent when omitted. */
  readonly agent?: string | undefined
  /** Called with every warning and recovery notice, as soon as a refresh finds it. */
  readonly onNotice?: ((notice: Reprobe.Notice) => void) | undefined
}

export interface SupervisedTools {
  /** Pass as `tools`: kept up to date in place by `refresh`. */
  readonly tools: ToolSet
  /** Reprobes toolsets that are down and updates `tools` if the catalog moved; returns the notices. */
  readonly refresh: () => Promise<ReadonlyArray<Reprobe.Notice>>
  /** Pass as `prepareStep`: a refresh before every step, so new tools join the same turn. */
  readonly prepareStep: () => Promise<undefined>
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
  const names = ToolNames.make(catalog.tools.map((entry) => entry.name))
  const tools: ToolSet = {}
  for (const entry of catalog.tools) {
    const modelName = names.toModel.get(entry.name) ?? entry.name
    tools[modelName] = toAiTool(registry, entry, modelName, options.agent)
  }
  return tools
}

/** The registry's tools for the AI SDK, as an Effect (for apps that have a registry in hand). */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<SupervisedTools, ToolsetRegistry.UnknownAgent, Scope.Scope> =>
  Effect.gen(function* () {
    const reprobe = yield* Reprobe.make(registry, options)
    const tools: ToolSet = {}
    /** What each model name was built from, so an unchanged tool keeps its object across refreshes. */
    const built = new Map<string, Toolset.Tool>()
    let version: number | undefined

    const sync = (catalog: Catalog.Catalog) => {
      const names = ToolNames.make(catalog.tools.map((entry) => entry.name))
      for (const modelName of Object.keys(tools)) {
        if (!names.fromModel.has(modelName)) {
          delete tools[modelName]
          built.delete(modelName)
        }
      }
      for (const entry of catalog.tools) {
        const modelName = names.toModel.get(entry.name) ?? entry.name
        if (built.get(modelName) === entry.tool) continue
        tools[modelName] = toAiTool(registry, entry, modelName, options.agent)
        built.set(modelName, entry.tool)
      }
      version = catalog.version
    }

    sync(yield* registry.catalog(options.agent))

    const refreshEffect = Effect.gen(function* () {
      const notices = yield* reprobe.check
      const catalog = yield* Effect.option(registry.catalog(options.agent))
      if (Option.isSome(catalog) && catalog.value.version !== version) sync(catalog.value)
      for (const notice of notices) options.onNotice?.(notice)
      return notices
    })

    const refresh = () => Effect.runPromise(refreshEffect)
    return { tools, refresh, prepareStep: () => refresh().then(() => undefined) }
  })

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

export interface Opened extends SupervisedTools, AsyncDisposable {
  readonly registry: ToolsetRegistry.Registry
  /** Stops every toolset; no server outlives it. */
  readonly close: () => Promise<void>
}

/**
 * Starts the toolsets of a config file (docker-agent YAML or `mcpServers` JSON) and returns their
 * tools for the AI SDK. `await using` (or `close`) stops them all.
 */
export const open = async (path: string, options: Options & Runtime.FileOptions = {}): Promise<Opened> => {
  const runtime = ManagedRuntime.make(Runtime.layerFile(path, options))
  try {
    const registry = await runtime.runPromise(
      Effect.gen(function* () {
        return yield* ToolsetRegistry.ToolsetRegistry
      })
    )
    const supervised = await toolvisorTools(registry, options)
    const close = () => supervised.close().then(() => runtime.dispose())
    return { ...supervised, registry, close, [Symbol.asyncDispose]: close }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
