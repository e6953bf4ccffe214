/**
 * Config entries for the cluster tests: the journal server, a real MCP server process whose
 * `append` tool leaves one line per run in a file.
 */
import * as NodeCrypto from "node:crypto"
import * as NodePath from "node:path"
import type { AgentConfig } from "@toolvisor/config"
import { Policy } from "@toolvisor/core"
import * as Schema from "effect/Schema"

export const journalServer = NodePath.resolve(import.meta.dirname, "fixtures/journal-server.mjs")

export interface EntryOptions {
  readonly env?: Readonly<Record<string, string>>
  /** A dotenv file the server's environment is read from when it starts. */
  readonly envFile?: string
  readonly lifecycle?: typeof Policy.Lifecycle.Encoded
}

export const journalEntry = (name: string, options: EntryOptions = {}): AgentConfig.ToolsetConfig => {
  const lifecycle = Schema.decodeUnknownSync(Policy.Lifecycle)({
    backoff: { initial: "100ms", max: "400ms" },
    startup_timeout: "20s",
    call_timeout: "20s",
    ...options.lifecycle
  })
  const transport = {
    _tag: "stdio" as const,
    command: process.execPath,
    args: [journalServer],
    env: options.env ?? {},
    cwd: undefined,
    ...(options.envFile === undefined ? {} : { envFile: options.envFile })
  }
  return {
    identity: `mcp/${name}`,
    signature: NodeCrypto.createHash("sha256")
      .update(JSON.stringify([name, transport, options.lifecycle]))
      .digest("hex"),
    name,
    prefix: name,
    type: "mcp",
    transport,
    fileTypes: [],
    tools: undefined,
    lifecycle,
    policy: Policy.fromLifecycle(lifecycle),
    lazy: false,
    secrets: [],
    path: `agents.root.toolsets.${name}`
  }
}

export const config = (toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>): AgentConfig.Config => ({
  source: "<test>",
  agents: [{ name: "root", toolsets: toolsets.map((t) => t.identity) }],
  toolsets,
  skipped: []
})

/** typescript-language-server on the LSP package's fixture project. */
export const tsEntry = (): AgentConfig.ToolsetConfig => {
  const lifecycle = Schema.decodeUnknownSync(Policy.Lifecycle)({ startup_timeout: "60s", call_timeout: "30s" })
  const root = NodePath.resolve(import.meta.dirname, "../../..")
  const transport = {
    _tag: "stdio" as const,
    command: NodePath.join(root, "node_modules/.bin/typescript-language-server"),
    args: ["--stdio"],
    env: {},
    cwd: NodePath.join(root, "packages/lsp/test/fixtures/ts-project")
  }
  return {
    identity: "lsp/typescript",
    signature: NodeCrypto.createHash("sha256").update(JSON.stringify(transport)).digest("hex"),
    name: "typescript",
    prefix: undefined,
    type: "lsp",
    transport,
    fileTypes: [".ts"],
    tools: undefined,
    lifecycle,
    policy: Policy.fromLifecycle(lifecycle),
    lazy: false,
    secrets: [],
    path: "agents.root.toolsets.typescript"
  }
}
