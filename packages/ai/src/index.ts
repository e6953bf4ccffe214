/** Toolvisor in agent loops: supervised toolsets as an effect/ai Toolkit and as AI SDK tools, with in-turn reprobe. */
export * as AgentLoop from "./AgentLoop.ts"
export * as AiSdk from "./AiSdk.ts"
export * as RegistryToolkit from "./RegistryToolkit.ts"
export * as Reprobe from "./Reprobe.ts"
export * as ToolNames from "./ToolNames.ts"
export * as ToolOutput from "./ToolOutput.ts"
