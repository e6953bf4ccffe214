/**
 * The toolset of a config entry that needs what the environment lacks: a variable that is not
 * set, a VS Code input with no value (`ToolsetConfig.unresolved`). It runs nothing, and it cannot
 * start: it is Failed from the first snapshot, with an error naming each missing variable and
 * where the config needs it, and starting it again fails the same way. The other toolsets start
 * as usual; a required one fails the registry's start, as any required toolset that does not.
 */
import type { AgentConfig } from "@toolvisor/config"
import { LifecycleError, type State, type Toolset } from "@toolvisor/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Toolsets from "./Toolsets.ts"

/** Why an unresolved toolset cannot start; the `cause` of its `NotStarted`. */
export class MissingVariables extends Schema.TaggedError<MissingVariables>()("MissingVariables", {
  toolset: Schema.String,
  message: Schema.String,
  /** Each variable's name, or `input:<id>` for a VS Code input. */
  variables: Schema.Array(Schema.String)
}) {}

/** What the entry lacks, or `undefined` when it can be built. */
export const of = (config: AgentConfig.ToolsetConfig): ReadonlyArray<AgentConfig.Unresolved> | undefined =>
  config.unresolved === undefined || config.unresolved.length === 0 ? undefined : config.unresolved

/** Each missing variable once, with every place that needs it. */
const describe = (unresolved: ReadonlyArray<AgentConfig.Unresolved>): string => {
  const places = new Map<string, { readonly message: string; readonly paths: Array<string> }>()
  for (const lack of unresolved) {
    const known = places.get(lack.variable)
    if (known === undefined) places.set(lack.variable, { message: lack.message, paths: [lack.path] })
    else known.paths.push(lack.path)
  }
  return [...places.values()].map(({ message, paths }) => `${message}; needed at ${paths.join(", ")}`).join(". ")
}

/** What starting the toolset fails with: `NotStarted`, caused by `MissingVariables`. */
export const error = (name: string, unresolved: ReadonlyArray<AgentConfig.Unresolved>): LifecycleError.NotStarted => {
  const cause = new MissingVariables({
    toolset: name,
    message: `${name}: cannot start: ${describe(unresolved)}`,
    variables: [...new Set(unresolved.map((lack) => lack.variable))]
  })
  return new LifecycleError.NotStarted({ toolset: name, message: cause.message, cause })
}

export const make = (
  config: AgentConfig.ToolsetConfig,
  unresolved: ReadonlyArray<AgentConfig.Unresolved>
): Effect.Effect<Toolsets.Built> =>
  Effect.gen(function* () {
    const name = config.name
    const failure = error(name, unresolved)
    const snapshot: State.StatusSnapshot = {
      name,
      kind: Toolsets.kind(config),
      state: "Failed",
      since: yield* Clock.currentTimeMillis,
      lastError: { tag: failure._tag, message: failure.message },
      restarts: 0,
      attempt: 0,
      toolsVersion: 0
    }
    const toolset: Toolset.Toolset = {
      name,
      kind: snapshot.kind,
      start: Effect.fail(failure),
      stop: Effect.void,
      restart: Effect.fail(failure),
      state: Effect.succeed(snapshot),
      // Nothing ever changes: the snapshot, then silence (the stream stays open, as a toolset's does).
      changes: Stream.concat(Stream.succeed(snapshot), Stream.never),
      events: Stream.never,
      tools: Effect.succeed({ complete: false, items: [], reason: failure }),
      callTool: () => Effect.fail(failure)
    }
    return { toolset, lsp: undefined }
  })
