/**
 * The registry of an agent config's supervised toolsets, as a service. The contract is
 * transport-agnostic: every operation is an Effect with typed errors and status arrives as
 * Streams, with no handle that assumes the supervisor lives in this process — so a registry
 * whose toolsets run elsewhere (on cluster runners) can be swapped in by Layer.
 */

import type { GetPromptResult, ReadResourceResult } from "@modelcontextprotocol/sdk/types.js"
import type { AgentConfig, ToolsetDiff } from "@toolvisor/config"
import type { LifecycleError, State, Toolset } from "@toolvisor/core"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as Catalog from "./Catalog.ts"
import type * as Inspection from "./Inspection.ts"
import type * as Surfaces from "./Surfaces.ts"
import type * as ToolSearch from "./ToolSearch.ts"

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
  /** True when some toolsets were not Ready, so the tool may appear later. */
  incomplete: Schema.Boolean
}) {}

/** No prompt of that name in the agent's prompt catalog; `near` holds close names. */
export class UnknownPrompt extends Schema.TaggedError<UnknownPrompt>()("UnknownPrompt", {
  prompt: Schema.String,
  message: Schema.String,
  near: Schema.Array(Schema.String),
  incomplete: Schema.Boolean
}) {}

/** No toolset of the agent lists that resource URI or has a template that matches it. */
export class UnknownResource extends Schema.TaggedError<UnknownResource>()("UnknownResource", {
  uri: Schema.String,
  message: Schema.String,
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

export type CallError = UnknownTool | Toolset.ToolError | LifecycleError.LifecycleError

/** How a request for a prompt, a resource or a completion can fail. */
export type SurfaceError = McpSurfaces.SurfaceError | UnknownAgent

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
   * would. `limit` defaults to 5, at most 50.
   */
  readonly searchTools: (
    query: string,
    options?: { readonly limit?: number | undefined; readonly agent?: string | undefined }
  ) => Effect.Effect<ToolSearch.Result, UnknownAgent>
  readonly callTool: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent?: string
  ) => Effect.Effect<Toolset.ToolResult, CallError | UnknownAgent>
  /**
   * `callTool` for hosts that live in Promises (an MCP server's handler), when the call can be
   * sent at once: its route is known and its toolset usable (`Toolset.callToolNow`). It then runs
   * without entering the Effect runtime unless it fails, and resolves with the call's `Exit`;
   * `undefined` means the call must go through `callTool`. `signal` cancels it.
   */
  readonly callToolNow: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent?: string,
    signal?: AbortSignal
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
  /** A prompt by the name `prompts` gives it; waits for a restarting toolset within `call_timeout`. */
  readonly getPrompt: (
    prompt: string,
    args?: { readonly [key: string]: string },
    agent?: string
  ) => Effect.Effect<GetPromptResult, SurfaceError | UnknownPrompt>
  /** The agent's resources and resource templates; URIs as their servers gave them. */
  readonly resources: (agent?: string) => Effect.Effect<Surfaces.ResourceCatalog, UnknownAgent>
  /** Reads a resource from the toolset that lists it (or whose template matches it). */
  readonly readResource: (
    uri: string,
    agent?: string
  ) => Effect.Effect<ReadResourceResult, SurfaceError | UnknownResource>
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
  /** Applies a new config: starts added, stops removed, restarts changed, leaves the rest alone. */
  readonly reload: (config: AgentConfig.Config) => Effect.Effect<ToolsetDiff.Diff>
}

export class ToolsetRegistry extends Context.Service<ToolsetRegistry, Registry>()(
  "@toolvisor/runtime/ToolsetRegistry"
) {}
