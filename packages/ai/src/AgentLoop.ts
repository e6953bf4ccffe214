/**
 * An agent turn over `effect/ai` with supervised tools: `LanguageModel` calls through a `Chat`,
 * the registry's tools as the toolkit, and after every tool-call batch the in-turn reprobe —
 * toolsets that are down are retried, and when the catalog's `version` moved the toolkit is rebuilt, so the very
 * next model call of the same turn is offered the new tools. Warnings and recovery notices come
 * back as values on each step, for the app to show. When the config defers tools, each chat is
 * offered the eager tools and `search_tools`, and from the next model call on the tools its
 * searches returned (see `Deferral`).
 *
 * The agent's own model answers its servers' sampling requests (`sampling`, a Layer to give the
 * registry), and what the toolsets say about themselves (their `instruction` and their servers'
 * instructions) joins each chat's system prompt unless `instructions: false`. Elicitation is the
 * app's: provide `Elicitation.layer` from `@toolvisor/mcp` to the registry.
 */
import { Sampling } from "@toolvisor/mcp"
import { type Catalog, Deferral, ToolsetRegistry } from "@toolvisor/runtime"
import type * as AiError from "effect/ai/AiError"
import type * as Chat from "effect/ai/Chat"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as SamplingPrompt from "./internal/samplingPrompt.ts"
import * as RegistryToolkit from "./RegistryToolkit.ts"
import * as Reprobe from "./Reprobe.ts"

/** One model call of a turn, with what the reprobe before it reported. */
export interface Step {
  readonly response: LanguageModel.GenerateTextResponse<RegistryToolkit.Tools, "opaque">
  /** The tool names the model was offered in this call. */
  readonly offered: ReadonlyArray<string>
  readonly notices: ReadonlyArray<Reprobe.Notice>
}

/** A whole turn: every model call, the final text, and every notice in order. */
export interface Turn {
  readonly steps: ReadonlyArray<Step>
  readonly text: string
  readonly notices: ReadonlyArray<Reprobe.Notice>
}

/** What one turn may change of the loop's settings. */
export interface TurnOptions {
  /** Model calls at most in this turn (default 10). */
  readonly maxSteps?: number | undefined
}

/** The agent whose tools are offered, how the reprobe behaves, and the default `maxSteps` of a turn. */
export interface Options extends RegistryToolkit.Options, Reprobe.Options {
  /** Model calls at most in a turn that sets none itself (default 10). */
  readonly maxSteps?: number | undefined
  /**
   * Add `instructions` (the toolsets' and their servers') to each chat's system prompt, after the
   * chat's own, at every turn (default true).
   */
  readonly instructions?: boolean | undefined
}

/** An agent loop over a registry: its toolkits, instructions and turns, all kept in step with the catalog. */
export interface Service {
  /** The toolkit of the loop's default conversation (the one `turn` uses without a chat), as of the last refresh. */
  readonly toolkit: Effect.Effect<RegistryToolkit.SupervisedToolkit>
  /**
   * The toolkit `chat` is offered now: every eager tool; when tools are deferred, `search_tools`
   * and the deferred tools this chat's searches returned.
   */
  readonly toolkitFor: (chat: Chat.Chat) => Effect.Effect<RegistryToolkit.SupervisedToolkit>
  /**
   * What to tell the model about its tools (for the system prompt): each toolset's configured
   * `instruction` with its server's instructions, and how to find deferred tools.
   */
  readonly instructions: Effect.Effect<string>
  /** Reprobes, rebuilds the toolkit if the catalog's version moved, and returns the notices. */
  readonly refresh: Effect.Effect<ReadonlyArray<Reprobe.Notice>>
  /**
   * Sends `prompt` on `chat` and keeps calling the model while it calls tools, up to `maxSteps`
   * calls. Tool failures are results the model reads; only the model's own errors fail the turn.
   */
  readonly turn: (
    chat: Chat.Chat,
    prompt: Prompt.RawInput,
    options?: TurnOptions
  ) => Effect.Effect<Turn, AiError.AiError, LanguageModel.LanguageModel>
}

/** The loop as a service, for programs that build it once (`layer`) and run turns wherever they need one. */
export class AgentLoop extends Context.Service<AgentLoop, Service>()("@toolvisor/ai/AgentLoop") {}

/** A conversation's deferred tools, and its toolkit as last built (kept while nothing it depends on moved). */
interface Conversation {
  readonly loaded: Set<string>
  /** The chat's own system prompt, before the loop added the instructions to it. */
  system?: string | undefined
  built?: { readonly version: number; readonly loaded: number; readonly toolkit: RegistryToolkit.SupervisedToolkit }
}

/**
 * A loop over one registry; its tools are built now and again only when the catalog's version
 * moves. What each chat loaded through `search_tools` is the chat's own, for as long as the chat
 * lives. Closing the scope ends a reprobe still in flight.
 */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<Service, ToolsetRegistry.UnknownAgent, Scope.Scope> =>
  Effect.gen(function* () {
    const reprobe = yield* Reprobe.make(registry, options)
    const build = (catalog: Catalog.Catalog) => ({
      catalog,
      built: RegistryToolkit.build(registry, catalog, options)
    })
    let current = build(yield* registry.catalog(options.agent))
    const lock = yield* Semaphore.make(1)
    const conversations = new WeakMap<Chat.Chat, Conversation>()
    const byDefault: Conversation = { loaded: new Set() }

    const conversationOf = (chat: Chat.Chat): Conversation => {
      let found = conversations.get(chat)
      if (found === undefined) {
        found = { loaded: new Set() }
        conversations.set(chat, found)
      }
      return found
    }

    const toolkitOf = (conversation: Conversation): Effect.Effect<RegistryToolkit.SupervisedToolkit> =>
      Effect.suspend(() => {
        const { catalog, built } = current
        const cached = conversation.built
        if (cached !== undefined && cached.version === catalog.version && cached.loaded === conversation.loaded.size) {
          return Effect.succeed(cached.toolkit)
        }
        const deferring = Deferral.hasDeferred(catalog)
        const offered = built.tools.filter((bound) => Deferral.isOffered(bound.entry, conversation.loaded))
        const tools = deferring
          ? [...offered, RegistryToolkit.searchTool(registry, built.names, conversation.loaded, options)]
          : offered
        return Effect.map(RegistryToolkit.toolkitOf(tools), (toolkit) => {
          conversation.built = { version: catalog.version, loaded: conversation.loaded.size, toolkit }
          return toolkit
        })
      })

    const refresh = lock.withPermits(1)(
      Effect.gen(function* () {
        const notices = yield* reprobe.check
        const catalog = yield* Effect.option(registry.catalog(options.agent))
        if (Option.isSome(catalog) && catalog.value.version !== current.catalog.version) current = build(catalog.value)
        return notices
      })
    )

    /**
     * One model call. An answer effect/ai cannot read against the toolkit — a tool the model made
     * up, or a deferred one it called before a search — is not kept (the chat's history does not
     * take it) and the model is asked again, told why, up to `misnamedRetries` times.
     */
    const step = (chat: Chat.Chat, prompt: Prompt.RawInput, notices: ReadonlyArray<Reprobe.Notice>) =>
      Effect.flatMap(toolkitOf(conversationOf(chat)), (toolkit) => {
        const ask = (
          input: Prompt.RawInput,
          retries: number
        ): Effect.Effect<Step, AiError.AiError, LanguageModel.LanguageModel> =>
          chat.generateText({ prompt: input, toolkit }).pipe(
            Effect.map((response) => ({ response, offered: Object.keys(toolkit.tools), notices })),
            Effect.catchIf(
              (error) => retries > 0 && error.reason._tag === "InvalidOutputError",
              () => ask(Prompt.concat(Prompt.make(input), misnamed(Deferral.hasDeferred(current.catalog))), retries - 1)
            )
          )
        return ask(prompt, misnamedRetries)
      })

    /** The chat's system prompt: its own, then what the toolsets say (as of the last refresh). */
    const instruct = (chat: Chat.Chat) =>
      Ref.update(chat.history, (history) => {
        const conversation = conversationOf(chat)
        conversation.system ??= systemOf(history)
        const text = [conversation.system, Deferral.instructions(current.catalog)].filter(
          (t) => t !== undefined && t !== ""
        )
        return text.length === 0 ? history : Prompt.setSystem(history, text.join("\n\n"))
      })

    const turn = (chat: Chat.Chat, prompt: Prompt.RawInput, turnOptions: TurnOptions = {}) =>
      Effect.gen(function* () {
        const maxSteps = turnOptions.maxSteps ?? options.maxSteps ?? 10
        const notices = yield* refresh
        if (options.instructions !== false) yield* instruct(chat)
        const steps: Array<Step> = [yield* step(chat, prompt, notices)]
        let last = steps[0]
        while (last !== undefined && last.response.toolResults.length > 0 && steps.length < maxSteps) {
          last = yield* step(chat, [], yield* refresh)
          steps.push(last)
        }
        return { steps, text: last?.response.text ?? "", notices: steps.flatMap((s) => s.notices) }
      })

    return {
      toolkit: toolkitOf(byDefault),
      toolkitFor: (chat) => toolkitOf(conversationOf(chat)),
      instructions: Effect.sync(() => Deferral.instructions(current.catalog)),
      refresh,
      turn
    }
  })

/** How many times a turn's model call is asked again after an answer that called no offered tool. */
const misnamedRetries = 2

/** What the model is told when its answer called a tool it was not offered. */
const misnamed = (deferring: boolean): Prompt.Prompt =>
  Prompt.make([
    {
      role: "user",
      content:
        "Your last answer could not be used: it called a tool that is not offered to you (or was not " +
        "a well-formed answer). Call only the tools you are given" +
        (deferring ? `, and ${Deferral.name} to find others.` : ".")
    }
  ])

/** The text of a prompt's system message, if it has one. */
const systemOf = (prompt: Prompt.Prompt): string | undefined => {
  const found = prompt.content.find((message) => message.role === "system")
  return found?.role === "system" ? found.content : undefined
}

/**
 * Sampling answered by the `LanguageModel` in context: give it to the registry (`Layer.provide`)
 * and the agent's own model answers its servers' `sampling/createMessage`. The server's messages
 * reach the model as text; the app is the only caller, so requests are answered whatever their
 * origin. `model` names the model in the answer (default `agent`).
 */
export const sampling = (
  options: { readonly model?: string | undefined } = {}
): Layer.Layer<Sampling.Sampling, never, LanguageModel.LanguageModel> =>
  Layer.effect(
    Sampling.Sampling,
    Effect.gen(function* () {
      const model = yield* LanguageModel.LanguageModel
      const name = options.model ?? "agent"
      return {
        createMessage: (request) => {
          const asked = SamplingPrompt.of(request.params)
          const prompt = Prompt.make([
            ...(asked.system === undefined ? [] : [{ role: "system" as const, content: asked.system }]),
            ...asked.turns.map((turn) => ({ role: turn.role, content: [{ type: "text" as const, text: turn.text }] }))
          ])
          return model.generateText({ prompt }).pipe(
            Effect.map((response) =>
              SamplingPrompt.result(response.text, name, response.finishReason === "length" ? "maxTokens" : "endTurn")
            ),
            Effect.mapError(
              (error) =>
                new Sampling.Declined({
                  toolset: request.toolset,
                  message: `the agent's model failed: ${error.message}`,
                  cause: error
                })
            )
          )
        },
        tools: false,
        withoutOrigin: "handle" as const
      }
    })
  )

/** The loop over the `ToolsetRegistry` in context. */
export const layer = (
  options: Options = {}
): Layer.Layer<AgentLoop, ToolsetRegistry.UnknownAgent, ToolsetRegistry.ToolsetRegistry> =>
  Layer.effect(
    AgentLoop,
    Effect.gen(function* () {
      return yield* make(yield* ToolsetRegistry.ToolsetRegistry, options)
    })
  )
