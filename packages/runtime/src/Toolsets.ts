/**
 * Turns a resolved config entry into a running toolset: MCP entries become `McpToolset`s, LSP
 * entries `LspToolset`s. The only place the runtime knows which transport packages exist.
 */
import type { AgentConfig } from "@toolvisor/config"
import type { Toolset } from "@toolvisor/core"
import { type LspRouter, LspSpec, LspToolset } from "@toolvisor/lsp"
import { McpSpec, McpToolset } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

export const mcpSpec = (transport: AgentConfig.Transport): McpSpec.McpSpec => {
  switch (transport._tag) {
    case "stdio":
      return McpSpec.Stdio.make({
        command: transport.command,
        args: transport.args,
        env: transport.env,
        ...(transport.cwd === undefined ? {} : { cwd: transport.cwd })
      })
    case "http":
    case "sse": {
      const fields = {
        url: transport.url,
        headers: transport.headers,
        ...(transport.oauth === undefined ? {} : { oauth: new McpSpec.OAuth(transport.oauth) })
      }
      return transport._tag === "http" ? McpSpec.Http.make(fields) : McpSpec.Sse.make(fields)
    }
  }
}

/** A built toolset; LSP ones are also kept as such, so several can be put behind one router. */
export interface Built {
  readonly toolset: Toolset.Toolset
  readonly lsp: LspRouter.Backend | undefined
}

/** The fields of a config entry that building its toolset reads. */
export type Buildable = Pick<
  AgentConfig.ToolsetConfig,
  "name" | "type" | "transport" | "fileTypes" | "allowOutsideWorkspace" | "policy"
>

/** Builds the toolset of one config entry in the current scope (closing it stops the toolset). */
export const make = (config: Buildable): Effect.Effect<Built, never, Scope.Scope> => {
  if (config.type === "mcp") {
    return Effect.map(
      McpToolset.make({ name: config.name, spec: mcpSpec(config.transport), policy: config.policy }),
      (toolset) => ({ toolset, lsp: undefined })
    )
  }
  return Effect.map(
    LspToolset.make({ name: config.name, spec: lspSpec(config), policy: config.policy }),
    (toolset) => ({
      toolset,
      lsp: toolset
    })
  )
}

/** The language server of an LSP entry (config validation guarantees a stdio transport). */
export const lspSpec = (config: Buildable): LspSpec.LspSpec => {
  const transport = config.transport
  const stdio = transport._tag === "stdio" ? transport : { command: "", args: [], env: {}, cwd: undefined }
  return LspSpec.LspSpec.make({
    command: stdio.command,
    args: stdio.args,
    env: stdio.env,
    cwd: stdio.cwd ?? process.cwd(),
    fileTypes: config.fileTypes,
    ...(config.allowOutsideWorkspace === undefined ? {} : { allowOutsideWorkspace: config.allowOutsideWorkspace })
  })
}
