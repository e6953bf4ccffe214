/**
 * Turns a resolved config entry into a running toolset: MCP entries become `McpToolset`s, LSP
 * entries `LspToolset`s. The only place the runtime knows which transport packages exist, and
 * where each toolset gets its `Redactor`: whatever it lets out is masked (see `Secrets`).
 */
import type { AgentConfig } from "@toolvisor/config"
import { type Policy, Redaction, ServerProcess, type Toolset } from "@toolvisor/core"
import { type LspRouter, LspSpec, LspToolset } from "@toolvisor/lsp"
import { type ClientFeatures, McpSpec, type McpSurfaces, McpToolset } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import type * as Scope from "effect/Scope"
import * as Secrets from "./internal/secrets.ts"

/** The MCP spec of a config entry's transport: also what `toolvisor auth` logs in against. */
export const mcpSpec = (transport: AgentConfig.Transport): McpSpec.McpSpec => {
  switch (transport._tag) {
    case "stdio":
      return McpSpec.Stdio.make({
        command: transport.command,
        args: transport.args,
        env: transport.env,
        ...(transport.cwd === undefined ? {} : { cwd: transport.cwd }),
        ...(transport.envFile === undefined ? {} : { envFile: transport.envFile })
      })
    case "http":
    case "sse": {
      const fields = {
        url: transport.url,
        headers: transport.headers,
        ...(transport.oauth === undefined ? {} : { oauth: new McpSpec.OAuth(transport.oauth) }),
        ...(transport.headersHelper === undefined ? {} : { headersHelper: transport.headersHelper })
      }
      return transport._tag === "http" ? McpSpec.Http.make(fields) : McpSpec.Sse.make(fields)
    }
  }
}

/**
 * The policy a toolset of this entry runs on: the config's, with what its transport adds (a remote
 * MCP server reconnects after a clean close and is probed; a language server is probed).
 */
export const policyOf = (config: Pick<AgentConfig.ToolsetConfig, "type" | "transport" | "policy">): Policy.Policy =>
  config.type === "mcp"
    ? McpToolset.effectivePolicy(mcpSpec(config.transport), config.policy)
    : LspToolset.effectivePolicy(config.policy)

/** The kind a config entry's toolset shows in status: `lsp`, `mcp-stdio`, `mcp-http`, `mcp-sse`. */
export const kind = (config: Pick<AgentConfig.ToolsetConfig, "type" | "transport">): string =>
  config.type === "lsp" ? "lsp" : `mcp-${config.transport._tag}`

/** A built toolset; LSP ones are also kept as such, so several can be put behind one router. */
export interface Built {
  readonly toolset: Toolset.Toolset
  readonly lsp: LspRouter.Backend | undefined
  /** Set for MCP toolsets run here: their prompts, resources, completions and log messages. */
  readonly mcp?: McpSurfaces.Surfaces | undefined
}

/** The fields of a config entry that building its toolset reads. */
export type Buildable = Pick<
  AgentConfig.ToolsetConfig,
  "name" | "type" | "transport" | "fileTypes" | "allowOutsideWorkspace" | "policy" | "secrets" | "logLevel"
>

/** What a registry gives every toolset it builds besides its entry. */
export interface Shared {
  /** The app's sampling, elicitation and roots (MCP toolsets declare what is here). */
  readonly features?: ClientFeatures.Features | undefined
  /** The config's folder: a default root, after the folder the server runs in. */
  readonly folder?: string | undefined
}

/**
 * Builds the toolset of one config entry in the current scope (closing it stops the toolset),
 * masked by `redactor` with the entry's secrets added. A registry passes one redactor to all its
 * toolsets, so a secret of one entry is masked in whatever any server echoes (a server's `get-env`
 * shows the variables another entry's headers use). The redactor is the toolset's
 * `Redaction.Current` while it runs, so secrets met at connect time (an OAuth token) join it, and
 * masks what the toolset logs, whatever the logger (stderr, the live view, OTLP).
 * A toolset with a local server keeps the stderr tail of its latest process (`Toolset.stderr`).
 */
export const make = (
  config: Buildable,
  redactor: Redaction.Redactor = Redaction.make(),
  shared: Shared = {}
): Effect.Effect<Built, never, Scope.Scope> => {
  redactor.add(config.secrets)
  let latest: () => ReadonlyArray<string> = () => []
  const stderr = config.transport._tag === "stdio" ? { stderr: Effect.sync(() => latest()) } : {}
  const built = transportOf(config, shared).pipe(
    Effect.updateService(Logger.CurrentLoggers, (loggers) => Secrets.logging(loggers, redactor)),
    Effect.provideService(Redaction.Current, redactor),
    Effect.provideService(ServerProcess.StderrWatch, (tail) => {
      latest = tail
    })
  )
  return Effect.map(built, ({ toolset, lsp, mcp }) => {
    if (lsp === undefined) {
      return {
        toolset: Secrets.guard({ ...toolset, ...stderr }, redactor),
        lsp,
        mcp: mcp && Secrets.surfaces(mcp, redactor)
      }
    }
    const masked = Secrets.guard({ ...lsp, ...stderr }, redactor)
    return { toolset: masked, lsp: masked }
  })
}

const transportOf = (config: Buildable, shared: Shared): Effect.Effect<Built, never, Scope.Scope> => {
  if (config.type === "mcp") {
    const spec = mcpSpec(config.transport)
    const folders = [spec._tag === "stdio" ? spec.cwd : undefined, shared.folder].filter((f) => f !== undefined)
    return Effect.map(
      McpToolset.make({
        name: config.name,
        spec,
        policy: config.policy,
        logLevel: config.logLevel,
        ...(shared.features === undefined ? {} : { features: shared.features }),
        ...(folders.length === 0 ? {} : { roots: folders })
      }),
      (toolset) => ({ toolset, lsp: undefined, mcp: toolset })
    )
  }
  return Effect.map(
    LspToolset.make({ name: config.name, spec: lspSpec(config), policy: config.policy }),
    (toolset) => ({ toolset, lsp: toolset })
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
