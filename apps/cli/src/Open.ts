/**
 * Turns a command's CONFIG, `--input`, `--agent` and `--cluster` into a registry: finds the
 * config, loads it, and builds the registry in the current scope without starting anything.
 * Every command that loads a config reads it the same way here, so a hint that names a flag
 * (`pass --input id=VALUE`) holds for each of them. The cluster modules (and their SQL driver)
 * load only when `--cluster` is given.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { type AgentConfig, ConfigLoader } from "@toolvisor/config"
import { OrphanSweep, ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as ClusterFlags from "./ClusterFlags.ts"

/** What every command that loads a config takes. */
export interface Source {
  readonly config: Option.Option<string>
  readonly agent: Option.Option<string>
  /** VS Code inputs, each `id=value`. */
  readonly input: ReadonlyArray<string>
}

/** What every registry command takes; the cluster's timers only matter with `--cluster`. */
export interface Target extends Source, ClusterFlags.Member {
  readonly cluster: Option.Option<string>
}

export interface Loaded {
  readonly path: string
  readonly config: AgentConfig.Config
  /** The same file read again with the same options, for `--watch`. */
  readonly reload: Effect.Effect<AgentConfig.Config, ConfigLoader.ConfigError>
}

export interface Opened extends Loaded {
  readonly registry: ToolsetRegistry.Registry
}

/** The repository this CLI runs from, when it runs from one (source or bundle, both 3 levels down). */
const repository = NodePath.resolve(import.meta.dirname, "../../..")

/** The example config of the repository, when the CLI runs from a checkout rather than an install. */
const bundledExample = (): string | undefined => {
  const example = NodePath.join(repository, "examples/agent.yaml")
  return NodeFs.existsSync(example) && NodeFs.existsSync(NodePath.join(repository, "apps/cli/package.json"))
    ? example
    : undefined
}

/**
 * CONFIG if given; else ./agent.yaml; else, in a checkout, the bundled example — said out loud,
 * so nobody mistakes its toolsets for their own. Installed, there is no example to fall back to.
 */
export const configPath = (given: Option.Option<string>): Effect.Effect<string, UsageError> =>
  Effect.gen(function* () {
    if (Option.isSome(given)) return given.value
    if (NodeFs.existsSync("agent.yaml")) return NodePath.resolve("agent.yaml")
    const example = bundledExample()
    if (example === undefined) {
      return yield* new UsageError({
        message: `no agent.yaml in ${process.cwd()}: pass a config file, e.g. toolvisor status path/to/agent.yaml`
      })
    }
    yield* Effect.logInfo(`no agent.yaml in this folder: using the bundled example ${example}`)
    return example
  })

export const agentOptions = (agent: Option.Option<string>) =>
  Option.match(agent, { onNone: () => ({}), onSome: (name) => ({ agent: name }) })

/** `--input id=value`, as many as given, as the loader takes them. */
export const inputs = (given: ReadonlyArray<string>) =>
  Effect.forEach(given, (flag) => {
    const at = flag.indexOf("=")
    return at <= 0
      ? Effect.fail(new UsageError({ message: `--input: expected id=value, got "${flag}"` }))
      : Effect.succeed([flag.slice(0, at), flag.slice(at + 1)] as const)
  }).pipe(Effect.map((pairs): Readonly<Record<string, string>> => Object.fromEntries(pairs)))

/** Finds and loads the config; its skips and warnings are logged. */
export const load = (source: Source) =>
  Effect.gen(function* () {
    const path = yield* configPath(source.config)
    const options = { ...agentOptions(source.agent), inputs: yield* inputs(source.input) }
    const reload = ConfigLoader.load(path, options)
    const config = yield* reload
    for (const skipped of config.skipped) yield* Effect.logWarning(`${skipped.path}: ${skipped.reason}`)
    for (const warning of config.warnings ?? []) yield* Effect.logWarning(`${warning.path}: ${warning.message}`)
    const loaded: Loaded = { path, config, reload }
    return loaded
  })

/** Loads the config and builds its registry in the current scope; nothing is started yet. */
export const open = (target: Target) =>
  Effect.gen(function* () {
    const loaded = yield* load(target)
    const options = agentOptions(target.agent)
    const registry = yield* Option.match(target.cluster, {
      onNone: () => Effect.andThen(OrphanSweep.start, ToolsetRegistry.make(loaded.config, options)),
      onSome: (postgres) => joinCluster(postgres, loaded.config, options, target)
    })
    const opened: Opened = { ...loaded, registry }
    return opened
  })

/** A registry whose toolsets run on the cluster's runners; this process joins as a client. */
const joinCluster = (
  postgres: string,
  config: AgentConfig.Config,
  options: { readonly agent?: string },
  target: ClusterFlags.Member
) =>
  Effect.gen(function* () {
    const { ClusterClient, ClusterRegistry, Sealing } = yield* Effect.promise(() => import("@toolvisor/cluster"))
    const key = Sealing.fromEnv()
    const { file, timers } = yield* ClusterFlags.given(target)
    const context = yield* Layer.build(ClusterClient.layer({ postgres, timers, settingsFile: file }))
    return yield* ClusterRegistry.make(config, { ...options, ...(key === undefined ? {} : { key }) }).pipe(
      Effect.provideContext(context)
    )
  })
