/**
 * Runs the real CLI as a user would: the bundled build through its bin, in a child process,
 * with configs written to a temp dir that point at real servers.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Predicate from "effect/Predicate"
import * as Net from "../../../test/support/Net.ts"

export const root = NodePath.resolve(import.meta.dirname, "../../..")
/** The installed entry point; `bundle.setup.ts` has built the bundle it loads. */
export const bin = NodePath.join(root, "apps/cli/bin/toolvisor.js")
export const fixtureServer = NodePath.join(root, "test/support/fixture-server.mjs")
export const everything = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
export const tsServer = NodePath.join(root, "node_modules/.bin/typescript-language-server")
export const tsProject = NodePath.join(root, "packages/lsp/test/fixtures/ts-project")

/** The arguments that run the bundled CLI with the Node that runs the tests. */
export const cliArgs = (args: ReadonlyArray<string>) => [bin, ...args]

export const writeConfig = (text: string, name = "agent.yaml") => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cli-"))
  const path = NodePath.join(dir, name)
  NodeFs.writeFileSync(path, text)
  return path
}

export const mcpEntry = (name: string, extra: ReadonlyArray<string> = []) => [
  "      - type: mcp",
  `        name: ${name}`,
  `        command: "${process.execPath}"`,
  `        args: ["${fixtureServer}"]`,
  ...extra
]

/** server-everything over stdio, as a toolset of `yaml`. */
export const everythingEntry = (name = "ev") => [
  "      - type: mcp",
  `        name: ${name}`,
  `        command: "${process.execPath}"`,
  `        args: ["${everything}", "stdio"]`
]

export const yaml = (entries: ReadonlyArray<ReadonlyArray<string>>) =>
  ["agents:", "  root:", "    toolsets:", ...entries.flat()].join("\n")

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI to completion. */
export const runCli = (
  args: ReadonlyArray<string>,
  options: { readonly input?: string; readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {}
) =>
  new Promise<Finished>((resolve) => {
    const child = NodeChildProcess.spawn(process.execPath, cliArgs(args), {
      cwd: options.cwd ?? root,
      stdio: ["pipe", "pipe", "pipe"],
      ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } })
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })

/** True while the process exists and is not a zombie. */
export const isAlive = Procfs.isAlive

/** A long-running CLI whose stdout is read line by line. */
export class Session {
  readonly child: NodeChildProcess.ChildProcessWithoutNullStreams
  readonly lines: Array<string> = []
  stderr = ""
  private readonly waiters: Array<() => void> = []

  constructor(args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) {
    this.child = NodeChildProcess.spawn(process.execPath, cliArgs(args), {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...env }
    })
    let partial = ""
    this.child.stdout.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString("utf8")).split("\n")
      partial = parts.pop() ?? ""
      this.lines.push(...parts.filter((l) => l !== ""))
      for (const wake of this.waiters.splice(0)) wake()
    })
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")))
  }

  /** JSON lines seen so far. */
  json(): ReadonlyArray<{ readonly [key: string]: unknown }> {
    return this.lines.flatMap((line) => {
      try {
        const value: unknown = JSON.parse(line)
        return typeof value === "object" && value !== null ? [Object.fromEntries(Object.entries(value))] : []
      } catch {
        return []
      }
    })
  }

  /** Waits until a JSON line after index `from` satisfies `p`, or fails after `within` ms. */
  async waitFor(p: (line: { readonly [key: string]: unknown }) => boolean, from = 0, within = 60_000) {
    const deadline = Date.now() + within
    for (;;) {
      const found = this.json().slice(from).find(p)
      if (found !== undefined) return found
      if (Date.now() > deadline)
        throw new Error(
          `no matching line within ${within} ms; stdout:\n${this.lines.join("\n")}\nstderr:\n${this.stderr}`
        )
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 500)
      })
    }
  }

  send(value: unknown) {
    this.child.stdin.write(`${JSON.stringify(value)}\n`)
  }

  exited(): Promise<number | null> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve(this.child.exitCode)
      else this.child.once("exit", (code) => resolve(code))
    })
  }
}

/** A port free right now, for a CLI that must be told one. */
export const freePort = Net.freePort

/** Polls `p` until it holds, or fails after `within` ms. */
export const until = async (p: () => Promise<boolean> | boolean, within = 30_000) => {
  const deadline = Date.now() + within
  while (!(await p())) {
    if (Date.now() > deadline) throw new Error("condition not met in time")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const tmux = (args: ReadonlyArray<string>) => NodeChildProcess.execFileSync("tmux", args, { encoding: "utf8" })

/** A word the shell tmux runs the command with reads back as `word`. */
const shellWord = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/** A tmux session of its own (a real terminal), running `command` at `width`×`height`. */
export const terminal = (name: string, command: ReadonlyArray<string>, width: number, height: number) => {
  tmux([
    "new-session",
    "-d",
    "-s",
    name,
    "-x",
    String(width),
    "-y",
    String(height),
    "-c",
    root,
    command.map(shellWord).join(" ")
  ])
  return {
    screen: () => tmux(["capture-pane", "-p", "-t", name]).replace(/\n$/, "").split("\n"),
    type: (text: string) => tmux(["send-keys", "-t", name, text, "Enter"]),
    close: () => {
      try {
        tmux(["kill-session", "-t", name])
      } catch {
        // The session ends by itself when the CLI exits.
      }
    }
  }
}

/** Polls the screen until `p` holds, or fails with the last screen. */
export const waitForScreen = async (
  screen: () => ReadonlyArray<string>,
  p: (text: string) => boolean,
  within = 60_000
) => {
  const deadline = Date.now() + within
  for (;;) {
    const text = screen().join("\n")
    if (p(text)) return text
    if (Date.now() > deadline) throw new Error(`screen never matched:\n${text}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** True once `/status` at `base` answers `count` toolsets, every one Ready. */
export const allReady =
  (base: string, count: number, headers: Readonly<Record<string, string>> = {}) =>
  async (): Promise<boolean> => {
    const response = await fetch(`${base}/status`, { headers }).catch(() => undefined)
    if (response?.ok !== true) return false
    const rows: unknown = await response.json()
    return (
      Array.isArray(rows) &&
      rows.length === count &&
      rows.every((row) => Predicate.hasProperty(row, "state") && row.state === "Ready")
    )
  }

/** The JSON-RPC error code a request fails with (NaN for another failure); undefined when it answered. */
export const errorCode = async (call: Promise<unknown>) => {
  try {
    await call
    return undefined
  } catch (error) {
    return error instanceof McpError ? error.code : Number.NaN
  }
}

/** Closes every client, then stops every gateway and waits for it to exit: a test file's afterEach. */
export const closeAll = async (
  clients: Array<{ readonly close: () => Promise<void> }>,
  gateways: Array<Session>
): Promise<void> => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined)
  for (const gateway of gateways.splice(0)) {
    gateway.child.kill("SIGTERM")
    await gateway.exited()
  }
}
