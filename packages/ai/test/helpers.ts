/**
 * Configs over real servers for the agent-loop tests: server-everything and server-filesystem
 * over stdio, pyright as the language server, and `env`-wrapped commands whose binary does not
 * exist until a tool call puts it there (the docker-agent #2458 scenario).
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import type { AgentConfig } from "@toolvisor/config"
import { Policy } from "@toolvisor/core"
import * as Everything from "../../../test/support/Everything.ts"

const root = NodePath.resolve(import.meta.dirname, "../../..")

export const everythingServer = Everything.server
export const filesystemServer = NodePath.join(
  root,
  "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)
export const bin = (name: string) => NodePath.join(root, "node_modules/.bin", name)
export const pyProject = NodePath.join(root, "packages/lsp/test/fixtures/py-project")

export const tempDir = (label: string) => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), `toolvisor-ai-${label}-`))

export interface EntryOptions {
  readonly args?: ReadonlyArray<string>
  readonly lifecycle?: typeof Policy.Lifecycle.Encoded
  readonly cwd?: string
  readonly fileTypes?: ReadonlyArray<string>
}

const entry = (
  type: "mcp" | "lsp",
  name: string,
  command: string,
  options: EntryOptions
): AgentConfig.ToolsetConfig => {
  const lifecycle = {
    backoff: { initial: "100ms", max: "400ms" },
    startup_timeout: "20s",
    call_timeout: "20s",
    ...options.lifecycle
  }
  const args = options.args ?? []
  return {
    identity: `${type}/${name}`,
    signature: JSON.stringify([name, command, args, lifecycle]),
    name,
    prefix: type === "mcp" ? name : undefined,
    type,
    transport: { _tag: "stdio", command, args, env: {}, cwd: options.cwd },
    fileTypes: options.fileTypes ?? [],
    tools: undefined,
    lifecycle: {},
    policy: Policy.fromLifecycleUnknownSync(lifecycle),
    lazy: false,
    secrets: [],
    path: `agents.root.toolsets.${name}`
  }
}

export const mcp = (name: string, command: string, options: EntryOptions = {}) => entry("mcp", name, command, options)
export const lsp = (name: string, command: string, options: EntryOptions = {}) => entry("lsp", name, command, options)

export const everything = (options: EntryOptions = {}) =>
  mcp("everything", process.execPath, { ...options, args: [everythingServer, "stdio"] })

export const filesystem = (dir: string) => mcp("fs", process.execPath, { args: [filesystemServer, dir] })

/**
 * A script that becomes the server once it is moved into place: written executable into
 * `staging`, run from `bin` through `env` (so a missing file is a fast exit 127, not ENOENT).
 */
export const stagedServer = (dir: string, name: string, exec: string) => {
  const staging = NodePath.join(dir, "staging")
  const binDir = NodePath.join(dir, "bin")
  NodeFs.mkdirSync(staging, { recursive: true })
  NodeFs.mkdirSync(binDir, { recursive: true })
  const staged = NodePath.join(staging, name)
  NodeFs.writeFileSync(staged, `#!/bin/sh\nexec ${exec}\n`, { mode: 0o755 })
  return { staged, installed: NodePath.join(binDir, name) }
}

/** Processes whose environment holds `name=value`: how a test finds the servers it started. */
export const marked = (name: string, value: string): ReadonlyArray<number> =>
  NodeFs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      return NodeFs.readFileSync(`/proc/${entry}/environ`, "utf8").includes(`${name}=${value}`) ? [Number(entry)] : []
    } catch {
      return []
    }
  })
