/**
 * Toolvisor agent config: docker-agent YAML and every MCP host's JSON, validation, interpolation, JSON Schema, diff.
 *
 * Modules under `src/internal/` (the text parser, the hosts' file Schemas, interpolation, the
 * resolver…) are not part of this API and may change in any release: `ConfigLoader` is the way in.
 */
export * as AgentConfig from "./AgentConfig.ts"
export * as AllowList from "./AllowList.ts"
export * as ConfigError from "./ConfigError.ts"
export * as ConfigLoader from "./ConfigLoader.ts"
export * as DeferList from "./DeferList.ts"
export * as JsonSchema from "./JsonSchema.ts"
export * as ToolGroups from "./ToolGroups.ts"
export * as ToolsetDiff from "./ToolsetDiff.ts"
