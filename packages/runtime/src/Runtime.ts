/**
 * The Layers an Effect app composes: one Layer and one `yield* ToolsetRegistry` give it
 * supervised toolsets. Building the Layer loads the config, builds every toolset and (unless
 * told otherwise) starts them, failing with `StartFailed` if a required one does not come up;
 * releasing it stops every toolset and leaves no process behind.
 */
import * as NodeFs from "node:fs"
import { type AgentConfig, ConfigLoader } from "@toolvisor/config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as LocalRegistry from "./LocalRegistry.ts"
import { type Registry, ToolsetRegistry } from "./ToolsetRegistry.ts"

export interface Options extends LocalRegistry.Options {
  /** Start every non-lazy toolset while the Layer is built (default true). */
  readonly start?: boolean
}

export interface FileOptions extends Options {
  /** Environment for `${VAR}` interpolation (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Reload when the file changes: the diff is applied toolset by toolset. */
  readonly watch?: boolean
}

const build = (config: AgentConfig.Config, options: Options) =>
  Effect.gen(function* () {
    const registry = yield* LocalRegistry.make(config, options)
    if (options.start !== false) yield* registry.start
    return registry
  })

/** The registry of an in-memory config. */
export const layer = (config: AgentConfig.Config, options: Options = {}) =>
  Layer.effect(ToolsetRegistry, build(config, options))

/** The registry of a config file (docker-agent YAML or `mcpServers` JSON). */
export const layerFile = (path: string, options: FileOptions = {}) =>
  Layer.effect(
    ToolsetRegistry,
    Effect.gen(function* () {
      const load = ConfigLoader.load(path, {
        ...(options.env === undefined ? {} : { env: options.env }),
        ...(options.agent === undefined ? {} : { agent: options.agent })
      })
      // Look at the file before loading it: an edit made while it loads is then seen as a change.
      const before = fingerprint(path)
      const registry = yield* build(yield* load, options)
      if (options.watch === true) yield* watch(path, load, registry, before)
      return registry
    })
  )

/**
 * Reloads on every change of the file, after a short quiet period (editors write in bursts).
 * A config that no longer loads is logged and ignored: the running toolsets stay as they are.
 */
export const watch = (
  path: string,
  load: Effect.Effect<AgentConfig.Config, ConfigLoader.ConfigError>,
  registry: Registry,
  since: string = fingerprint(path)
): Effect.Effect<void, never, Scope.Scope> =>
  fileChanges(path, since).pipe(
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

/**
 * Changes of one file since the fingerprint `since`, by polling its size and mtime (editors
 * replace files in ways inotify watches lose).
 */
const fileChanges = (path: string, since: string) =>
  Stream.suspend(() => {
    let last = since
    return Stream.tick("250 millis").pipe(
      Stream.filter(() => {
        const now = fingerprint(path)
        const changed = now !== last
        last = now
        return changed
      })
    )
  })

/** Size and mtime of a file, or "missing". */
export const fingerprint = (path: string): string => {
  try {
    const stat = NodeFs.statSync(path)
    return `${stat.mtimeMs}:${stat.size}`
  } catch {
    return "missing"
  }
}
