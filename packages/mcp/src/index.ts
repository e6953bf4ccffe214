/**
 * Toolvisor MCP: MCP servers (stdio, streamable HTTP, SSE) as supervised toolsets.
 *
 * Modules under `src/internal/` (the headers helper, the OAuth client provider and its token
 * store, the tool cache, the pipe transport, the client features' request handlers) are not part of this API and may change in any release.
 */
export * as ClientFeatures from "./ClientFeatures.ts"
export * as Elicitation from "./Elicitation.ts"
export * as McpConnector from "./McpConnector.ts"
export * as McpSpec from "./McpSpec.ts"
export * as McpSurfaces from "./McpSurfaces.ts"
export * as McpToolset from "./McpToolset.ts"
export * as OAuth from "./OAuth.ts"
export * as Roots from "./Roots.ts"
export * as Sampling from "./Sampling.ts"
export * as StdioServer from "./StdioServer.ts"
