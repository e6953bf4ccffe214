/**
 * The registry of an agent config's supervised toolsets, as a service: its contract, its typed
 * errors, `make` (the in-process registry) and the Layers an Effect app composes (`layer`,
 * `layerFile`) — one Layer and one `yield* ToolsetRegistry` give it supervised toolsets. The
 * contract is transport-agnostic: every operation is an Effect with typed errors and status
 * arrives as Streams, with no handle that assumes the supervisor lives in this process — so a
 * registry whose toolsets run elsewhere (on cluster runners) can be swapped in by Layer.
 */

import type { GetPromptResult, ReadResourceResult } from "@modelcontextprotocol/sdk/types.js"
import { type AgentConfig, ConfigLoader, type ToolsetDiff } from "@toolvisor/config"
import type { CallOrigin, LifecycleError, State, Toolset } from "@toolvisor/core"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Catalog from "./Catalog.ts"
import type * as Inspection from "./Inspection.ts"
import * as ConfigFile from "./internal/configFile.ts"
import * as InProcess from "./internal/registry.ts"
import type * as Surfaces from "./Surfaces.ts"
import type * as ToolSearch from "./ToolSearch.ts"
import type * as Toolsets from "./Toolsets.ts"

/** No toolset of that name in the config. */
export class UnknownToolset extends Schema.TaggedError<UnknownToolset>()("UnknownToolset", {
  toolset: Schema.String,
  message: Schema.String,
  known: Schema.Array(Schema.String)
}) {}

/** No agent of that name in the config. */
export class UnknownAgent extends Schema.TaggedError<UnknownAgent>()("UnknownAgent", {
  agent: Schema.String,
  message: Schema.String,
  known: Schema.Array(Schema.String)
}) {}

/** No tool of that name in the agent's catalog; `near` holds close names. */
export class UnknownTool extends Schema.TaggedError<UnknownTool>()("UnknownTool", {
  tool: Schema.String,
  message: Schema.String,
  near: Schema.Array(Schema.String),
  /** True when a toolset that could own the name (its prefix, or none) has not listed: the tool may appear later. */
  incomplete: Schema.Boolean
}) {}

/** No prompt of that name in the agent's prompt catalog; `near` holds close names. */
export class UnknownPrompt extends Schema.TaggedError<UnknownPrompt>()("UnknownPrompt", {
  prompt: Schema.String,
  message: Schema.String,
  near: Schema.Array(Schema.String),
  incomplete: Schema.Boolean
}) {}

/** No toolset of the agent lists that resource URI or has a template that matches it; `near` holds close URIs. */
export class UnknownResource extends Schema.TaggedError<UnknownResource>()("UnknownResource", {
  uri: Schema.String,
  message: Schema.String,
  near: Schema.Array(Schema.String),
  incomplete: Schema.Boolean
}) {}

/** Required toolsets did not reach Ready; one line per toolset with its cause. */
export class StartFailed extends Schema.TaggedError<StartFailed>()("StartFailed", {
  message: Schema.String,
  failures: Schema.Array(Schema.Struct({ toolset: Schema.String, tag: Schema.String, message: Schema.String }))
}) {}

/** One state change of one toolset, as the registry's event stream delivers it. */
export interface ToolsetEvent {
  readonly toolset: string
  readonly from: State.State
  readonly snapshot: State.StatusSnapshot
}

/** What `reprobe` did: toolsets it brought back, and those still failing. */
export interface ReprobeReport {
  readonly recovered: ReadonlyArray<string>
  readonly failing: ReadonlyArray<{ readonly toolset: string; readonly error: string }>
}

/** How a tool call through the registry can fail: no such tool, the tool's own error, or its toolset's. */
export type CallError = UnknownTool | Toolset.ToolError | LifecycleError.LifecycleError

/** How a request for a prompt, a resource or a completion can fail. */
export type SurfaceError = McpSurfaces.SurfaceError | UnknownAgent

/** The registry's operations: catalogs and calls, the toolsets' status and control, prompts and resources, reload. */
export interface Registry {
  /** The agent whose catalog `catalog` and `callTool` serve when no agent is named. */
  readonly agent: string
  readonly agents: Effect.Effect<ReadonlyArray<string>>
  /**
   * Starts every non-lazy toolset in parallel; fails with `StartFailed` naming each required
   * toolset that did not reach Ready. Optional failures are logged; their Supervisors keep trying
   * by their policy until Ready, Failed, or stopped.
   */
  readonly start: Effect.Effect<void, StartFailed>
  /**
   * The current status of every toolset, in config order. Here and in `status` and `events`, a
   * snapshot's `toolCount` is the number of tools the toolset offers after its `tools:` filter
   * (`Catalog.offeredCount`): the one count every output shows.
   */
  readonly snapshot: Effect.Effect<ReadonlyArray<State.StatusSnapshot>>
  /** The current picture first, then a new one after every change. */
  readonly status: Stream.Stream<ReadonlyArray<State.StatusSnapshot>>
  /** Every transition of every toolset, in order per toolset, none lost. */
  readonly events: Stream.Stream<ToolsetEvent>
  /**
   * An agent's tools in config order: those of usable toolsets, and the last-known tools of
   * toolsets that are restarting (marked so); says what is missing and why.
   */
  readonly catalog: (agent?: string) => Effect.Effect<Catalog.Catalog, UnknownAgent>
  /**
   * The agent's catalog now, then again each time its offered tools (`version`) or its
   * completeness change — what a gateway's `list_changed` and a live view follow.
   */
  readonly catalogChanges: (agent?: string) => Stream.Stream<Catalog.Catalog, UnknownAgent>
  /**
   * Ranks the agent's tools for a natural-language query (BM25 over name, title, description and
   * parameter names), deferred and last-known ones included; `select:NAME[,NAME]` selects exactly.
   * Lazy toolsets that never listed their tools are started first, as a call of an unknown name
   * would. `limit` defaults to 5, at most 50. `within` narrows the search to the tools it accepts
   * (a gateway session's tool group): the others are neither ranked nor selected.
   */
  readonly searchTools: (
    query: string,
    options?: {
      readonly limit?: number | undefined
      readonly agent?: string | undefined
      readonly within?: ((name: string) => boolean) | undefined
    }
  ) => Effect.Effect<ToolSearch.Result, UnknownAgent>
  /**
   * Calls a tool by its catalog name. `options` carry a progress listener and `_meta` to an MCP
   * server (other toolsets, and toolsets on cluster runners, ignore them).
   */
  readonly callTool: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent?: string,
    options?: Toolset.CallOptions
  ) => Effect.Effect<Toolset.ToolResult, CallError | UnknownAgent>
  /**
   * `callTool` for hosts that live in Promises (an MCP server's handler), when the call can be
   * sent at once: its route is known and its toolset usable (`Toolset.callToolNow`). It then runs
   * without entering the Effect runtime unless it fails, and resolves with the call's `Exit`;
   * `undefined` means the call must go through `callTool`. `signal` cancels it. `origin` names
   * the caller, as `CallOrigin.Current` does for `callTool` (see `ClientFeatures`).
   */
  readonly callToolNow: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent?: string,
    signal?: AbortSignal,
    origin?: CallOrigin.CallOrigin
  ) => Promise<Exit.Exit<Toolset.ToolResult, CallError>> | undefined
  readonly startToolset: (name: string) => Effect.Effect<void, UnknownToolset | LifecycleError.LifecycleError>
  readonly stopToolset: (name: string) => Effect.Effect<void, UnknownToolset>
  readonly restartToolset: (name: string) => Effect.Effect<void, UnknownToolset | LifecycleError.LifecycleError>
  /** One toolset's policy, offered tools and stderr tail, for an operator's detail view. */
  readonly inspect: (name: string) => Effect.Effect<Inspection.Inspection, UnknownToolset>
  /**
   * Retries now the toolsets that are down on a transient error: stopped, failed, or waiting out
   * a backoff (whose wait it cuts short); waits for each to be Ready or to fail again.
   */
  readonly reprobe: Effect.Effect<ReprobeReport>
  /**
   * The agent's prompts, named like its tools (prefixed with the toolset's `name` when the
   * config gives one); restarting toolsets keep their last-known prompts, marked so.
   */
  readonly prompts: (agent?: string) => Effect.Effect<Surfaces.PromptCatalog, UnknownAgent>
  /**
   * A prompt by the name `prompts` gives it; waits for a restarting toolset within `call_timeout`.
   * `options._meta` reaches the server as the request's `_meta`.
   */
  readonly getPrompt: (
    prompt: string,
    args?: { readonly [key: string]: string },
    agent?: string,
    options?: McpSurfaces.RequestOptions
  ) => Effect.Effect<GetPromptResult, SurfaceError | UnknownPrompt>
  /** The agent's resources and resource templates; URIs as their servers gave them. */
  readonly resources: (agent?: string) => Effect.Effect<Surfaces.ResourceCatalog, UnknownAgent>
  /** Reads a resource from the toolset that lists it (or whose template matches it); `options` as for `getPrompt`. */
  readonly readResource: (
    uri: string,
    agent?: string,
    options?: McpSurfaces.RequestOptions
  ) => Effect.Effect<ReadResourceResult, SurfaceError | UnknownResource>
  /**
   * `getPrompt` for hosts that live in Promises, as `callToolNow` is for tools: sent at once when
   * the prompt's route is kept and its toolset live, the runtime entered only if it fails;
   * `undefined` means it must go through `getPrompt` (an unknown prompt, a toolset not ready).
   */
  readonly getPromptNow: (
    prompt: string,
    args?: { readonly [key: string]: string },
    agent?: string,
    options?: McpSurfaces.RequestOptions,
    signal?: AbortSignal
  ) => Promise<Exit.Exit<GetPromptResult, SurfaceError>> | undefined
  /** `readResource` sent at once, as `getPromptNow`. */
  readonly readResourceNow: (
    uri: string,
    agent?: string,
    options?: McpSurfaces.RequestOptions,
    signal?: AbortSignal
  ) => Promise<Exit.Exit<ReadResourceResult, SurfaceError>> | undefined
  /**
   * Updates of one resource for as long as the stream runs, across restarts of its server (each
   * restart adds a `reconnected` update: it may have changed while the server was down).
   */
  readonly subscribe: (
    uri: string,
    agent?: string
  ) => Stream.Stream<McpSurfaces.ResourceUpdate, SurfaceError | UnknownResource>
  /** Completion of a prompt's argument (by the prompt's catalog name) or of a resource template's. */
  readonly complete: (
    params: McpSurfaces.CompleteParams,
    agent?: string
  ) => Effect.Effect<McpSurfaces.Completion, SurfaceError | UnknownPrompt | UnknownResource>
  /** The log messages of every MCP toolset's server, from now on. */
  readonly logs: Stream.Stream<McpSurfaces.LogEvent>
  /**
   * Each prompt or resource listing of an MCP toolset that may have changed, from now on: a server
   * may change them without its status changing, and `prompts` and `resources` then show it.
   */
  readonly listingChanges: Stream.Stream<McpSurfaces.ListingChange>
  /**
   * Applies a new config: starts added, stops removed, restarts changed, leaves the rest alone.
   * A config without the agent the registry serves by default is refused, whole: every call,
   * catalog and search without an agent would fail from then on, while the toolsets ran on.
   */
  readonly reload: (config: AgentConfig.Config) => Effect.Effect<ToolsetDiff.Diff, UnknownAgent>
}

/** The registry as a service: `yield* ToolsetRegistry` in a program given one of the Layers below. */
export class ToolsetRegistry extends Context.Service<ToolsetRegistry, Registry>()(
  "@toolvisor/runtime/ToolsetRegistry"
) {}

/** How `make` builds the registry. */
export interface Options {
  /** The agent whose catalog is served by default; the config's first agent when omitted. */
  readonly agent?: string
  /**
   * Builds the toolset of a config entry in the given scope; by default it runs in this process.
   * A cluster registry builds a client of the toolset's entity instead, and reuses the rest.
   */
  readonly build?: (entry: AgentConfig.ToolsetConfig) => Effect.Effect<Toolsets.Built, never, Scope.Scope>
}

/** How `layer` builds the registry: `make`'s options, and whether to start it. */
export interface LayerOptions extends Options {
  /** Start every non-lazy toolset while the Layer is built (default true). */
  readonly start?: boolean
}

/** How `layerFile` loads and builds the registry. */
export interface FileOptions extends LayerOptions {
  /** Environment for `${VAR}` interpolation (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Reload when the file changes: the diff is applied toolset by toolset. */
  readonly watch?: boolean
}

/**
 * The in-process registry of a config: one supervised toolset per config identity, none started
 * yet (`registry.start` starts them). Closing the scope stops every toolset and leaves no process behind.
 */
export const make = (
  config: AgentConfig.Config,
  options: Options = {}
): Effect.Effect<Registry, UnknownAgent, Scope.Scope> => InProcess.make(config, options)

const build = (config: AgentConfig.Config, options: LayerOptions) =>
  Effect.gen(function* () {
    const registry = yield* make(config, options)
    if (options.start !== false) yield* registry.start
    return registry
  })

/**
 * The registry of an in-memory config. Building the Layer builds every toolset and (unless
 * `start: false`) starts them, failing with `StartFailed` if a required one does not come up;
 * releasing it stops every toolset.
 */
export const layer = (config: AgentConfig.Config, options: LayerOptions = {}) =>
  Layer.effect(ToolsetRegistry, build(config, options))

/** The registry of a config file (docker-agent YAML or `mcpServers` JSON), as `layer` builds it. */
export const layerFile = (path: string, options: FileOptions = {}) =>
  Layer.effect(
    ToolsetRegistry,
    Effect.gen(function* () {
      const load = ConfigLoader.load(path, {
        ...(options.env === undefined ? {} : { env: options.env }),
        ...(options.agent === undefined ? {} : { agent: options.agent })
      })
      // Look at the file before loading it: an edit made while it loads is then seen as a change.
      const before = ConfigFile.fingerprint(path)
      const registry = yield* build(yield* load, options)
      if (options.watch === true) yield* watch(path, load, registry, before)
      return registry
    })
  )

/**
 * Reloads `registry` on every change of the file, after a short quiet period (editors write in
 * bursts). A config that no longer loads is logged and ignored: the running toolsets stay as they are.
 */
export const watch = (
  path: string,
  load: Effect.Effect<AgentConfig.Config, ConfigLoader.ConfigError>,
  registry: Registry,
  since: string = ConfigFile.fingerprint(path)
): Effect.Effect<void, never, Scope.Scope> =>
  ConfigFile.changes(path, since).pipe(
    Stream.debounce(Duration.millis(150)),
    Stream.runForEach(() =>
      load.pipe(
        Effect.flatMap(registry.reload),
        Effect.tap((diff) =>
          Effect.logInfo(
            `reloaded ${path}: ${diff.added.length} added, ${diff.removed.length} removed, ${diff.changed.length} changed`
          )
        ),
        Effect.catch((error) => Effect.logWarning(`${path} not reloaded: ${error.message}`))
      )
    ),
    Effect.forkScoped({ startImmediately: true }),
    Effect.asVoid
  )
