import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as AgentConfig from "../src/AgentConfig.ts"
import type * as ConfigError from "../src/ConfigError.ts"
import * as ConfigLoader from "../src/ConfigLoader.ts"

/** Parses inline YAML from a fixed directory, with an explicit environment. */
export const parse = (text: string, env: Record<string, string> = {}, agent?: string) =>
  ConfigLoader.parse(text, { source: "<inline>", baseDir: "/project", env, ...(agent === undefined ? {} : { agent }) })

/** The issues of a config that must fail. */
export const issuesOf = (text: string, env: Record<string, string> = {}) =>
  Effect.flip(parse(text, env)).pipe(Effect.map((error: ConfigError.ConfigError) => error.issues))

/** The one toolset with this identity. */
export const toolset = (config: AgentConfig.Config, identity: string): AgentConfig.ToolsetConfig => {
  const found = config.toolsets.find((entry) => entry.identity === identity)
  assert.isDefined(found, `no toolset ${identity} in ${config.toolsets.map((entry) => entry.identity).join(", ")}`)
  return found
}

/** A one-agent YAML config with the given toolset entries (indented YAML list items). */
export const agentYaml = (toolsets: string) => `agents:\n  root:\n    toolsets:\n${toolsets}`
