/**
 * Configs for the registry tests, built as resolved values (the loader has its own tests), over
 * the MCP fixture server: a real process speaking real MCP.
 */
import * as NodePath from "node:path"
import type { AgentConfig } from "@toolvisor/config"
import { Policy } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ToolCatalogs from "../../../test/support/ToolCatalogs.ts"
import * as LocalRegistry from "../src/LocalRegistry.ts"
import type * as ToolsetRegistry from "../src/ToolsetRegistry.ts"

export const fixtureServer = NodePath.resolve(import.meta.dirname, "../../mcp/test/fixtures/fixture-server.mjs")

export interface EntryOptions {
  readonly prefix?: string
  readonly lifecycle?: typeof Policy.Lifecycle.Encoded
  readonly env?: Readonly<Record<string, string>>
  /** Seconds the server waits before it starts (a `bash` wrapper that sleeps, then execs it). */
  readonly delay?: number
  readonly lazy?: boolean
  readonly tools?: ReadonlyArray<string>
  readonly secrets?: ReadonlyArray<string>
  readonly command?: string
}

/** A fixture MCP server entry. Its identity is its name, as for a named YAML entry. */
export const fixtureEntry = (name: string, options: EntryOptions = {}): AgentConfig.ToolsetConfig => {
  const server =
    options.delay === undefined
      ? { command: options.command ?? process.execPath, args: [fixtureServer] }
      : { command: "bash", args: ["-c", `sleep ${options.delay} && exec "${process.execPath}" "${fixtureServer}"`] }
  const lifecycle = {
    backoff: { initial: "100ms", max: "400ms" },
    startup_timeout: "20s",
    call_timeout: "20s",
    ...options.lifecycle
  }
  return {
    identity: `mcp/${name}`,
    signature: JSON.stringify([name, server, options.env, lifecycle, options.tools, options.lazy]),
    name,
    prefix: options.prefix,
    type: "mcp",
    transport: { _tag: "stdio", command: server.command, args: server.args, env: options.env ?? {}, cwd: undefined },
    fileTypes: [],
    tools: options.tools,
    lifecycle: {},
    policy: Policy.fromLifecycleUnknownSync(lifecycle),
    lazy: options.lazy ?? false,
    secrets: options.secrets ?? [],
    path: `agents.root.toolsets.${name}`
  }
}

const replayServer = NodePath.join(ToolCatalogs.dir, "replay-server.mjs")

/**
 * A toolset that replays the recorded tools of real servers (`<server>_<tool>`, exposed under the
 * prefix `name`): real definitions at the cost of one light process.
 */
export const replay = (
  name: string,
  servers: ReadonlyArray<ToolCatalogs.Server>,
  options: EntryOptions = {}
): AgentConfig.ToolsetConfig => {
  const base = fixtureEntry(name, { prefix: name, ...options })
  const args = [replayServer, ...servers]
  return {
    ...base,
    signature: JSON.stringify([base.signature, args]),
    transport: { _tag: "stdio", command: process.execPath, args, env: {}, cwd: undefined }
  }
}

export const config = (
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>,
  agents: ReadonlyArray<AgentConfig.AgentSpec> = [{ name: "root", toolsets: toolsets.map((t) => t.identity) }]
): AgentConfig.Config => ({ source: "<test>", agents, toolsets, skipped: [] })

export const statusOf = (registry: ToolsetRegistry.Registry, toolset: string) =>
  Effect.map(registry.snapshot, (all) => all.find((s) => s.name === toolset))

/** Waits, by subscription, until the board satisfies `p`. */
export const untilBoard = (
  registry: ToolsetRegistry.Registry,
  p: (
    board: ReadonlyArray<{ readonly name: string; readonly state: string; readonly pid?: number | undefined }>
  ) => boolean
) => registry.status.pipe(Stream.filter(p), Stream.runHead, Effect.map(Option.getOrThrow))

/** A registry in its own scope, so a test can close it and check what is left. */
export const open = (value: AgentConfig.Config, options: LocalRegistry.Options = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const registry = yield* LocalRegistry.make(value, options).pipe(Scope.provide(scope))
    return { registry, close: Scope.close(scope, Exit.void) }
  })

/** The text of a tool result's first content item. */
export const text = (result: { readonly content: ReadonlyArray<{ readonly [key: string]: unknown }> }) => {
  const first = result.content[0]
  return typeof first?.text === "string" ? first.text : ""
}
