/**
 * The `ToolsetRegistry` of toolsets that run on cluster runners. It is the local registry —
 * catalog, LSP routing, status board, reload — with each toolset built as a client of its
 * entity instead of in this process, so an app switches by swapping the Layer. Closing it lets
 * go of the toolsets without stopping them: they belong to the cluster, and other clients may
 * use them. `stopToolset` (and a reload that removes one) stops a toolset for everyone.
 */
import type { AgentConfig } from "@toolvisor/config"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RemoteToolset from "./internal/remoteToolset.ts"
import { ToolsetEntity } from "./internal/toolsetEntity.ts"

/**
 * The local registry's options (all but `build`, which builds entity clients here) and the
 * remote toolsets' own: request deadlines and the cluster key.
 */
export interface Options extends Omit<ToolsetRegistry.Options, "build">, RemoteToolset.Options {}

/** Builds toolsets as entity clients; pass it as the `build` option of the runtime's registries. */
export const build = (options: RemoteToolset.Options = {}) =>
  Effect.map(
    ToolsetEntity.client,
    (client) => (entry: AgentConfig.ToolsetConfig) => RemoteToolset.make(client, entry, options)
  )

/**
 * The registry of an in-memory config, over the cluster the context's `Sharding` belongs to;
 * closing its scope lets go of the toolsets without stopping them.
 */
export const make = (config: AgentConfig.Config, options: Options = {}) =>
  Effect.flatMap(build(options), (remote) => ToolsetRegistry.make(config, { ...options, build: remote }))

/** The registry of an in-memory config, over the cluster the context's `Sharding` belongs to. */
export const layer = (config: AgentConfig.Config, options: Options & ToolsetRegistry.LayerOptions = {}) =>
  Layer.unwrap(Effect.map(build(options), (remote) => ToolsetRegistry.layer(config, { ...options, build: remote })))

/** The registry of a config file, over the cluster; `watch` reloads it as the local one does. */
export const layerFile = (path: string, options: Options & ToolsetRegistry.FileOptions = {}) =>
  Layer.unwrap(Effect.map(build(options), (remote) => ToolsetRegistry.layerFile(path, { ...options, build: remote })))
