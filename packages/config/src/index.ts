/** Toolvisor agent config: docker-agent YAML and mcpServers JSON, validation, interpolation, JSON Schema, diff. */
export * as AgentConfig from "./AgentConfig.ts"
export * as ConfigError from "./ConfigError.ts"
export * as ConfigLoader from "./ConfigLoader.ts"
export * as HostConfig from "./HostConfig.ts"
export * as Interpolation from "./Interpolation.ts"
export * as JsonSchema from "./JsonSchema.ts"
export * as Resolver from "./Resolver.ts"
export * as ToolsetDiff from "./ToolsetDiff.ts"
