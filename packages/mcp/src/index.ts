/** Toolvisor MCP: MCP servers (stdio, streamable HTTP, SSE) as supervised toolsets. */
export * as HeadersHelper from "./HeadersHelper.ts"
export * as McpConnector from "./McpConnector.ts"
export * as McpSpec from "./McpSpec.ts"
export * as McpToolset from "./McpToolset.ts"
export * as OAuth from "./OAuth.ts"
export * as OAuthProvider from "./OAuthProvider.ts"
export * as TokenStore from "./TokenStore.ts"
export * as ToolCache from "./ToolCache.ts"
