/**
 * The soak's agent config: every kind of server Toolvisor supervises, each tagged so the soak can
 * find its processes. The soaked toolsets restart without limit (a fault must never end one), and
 * the restart budget is checked on two crash-looping fixtures instead: `loop`, which a caller
 * keeps calling, and `loopq`, which nobody calls. Both must reach Failed after the same number of
 * starts.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

export const root = NodePath.resolve(import.meta.dirname, "../..")
export const main = NodePath.join(root, "apps/cli/src/main.ts")
export const fixture = NodePath.join(root, "test/chaos/fixture.mjs")
export const everything = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
export const memory = NodePath.join(root, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
export const tsServer = NodePath.join(root, "node_modules/typescript-language-server/lib/cli.mjs")
export const tsProject = NodePath.join(root, "packages/lsp/test/fixtures/ts-project")

/** Every call's deadline in the gateway; a call slower than this (plus slack) is a hang. */
export const callTimeoutMs = 8_000
/** `max_restarts` of the crash-looping fixtures: Failed after this + 1 starts. */
export const loopMaxRestarts = 3
/** How long a crash-looping fixture lives after initialize. */
export const loopLifetimeMs = 700

export interface Files {
  readonly dir: string
  /** One line per execution of `fx_increment`. */
  readonly ledger: string
  readonly memory: string
  /** One line per start of each crash-looping fixture. */
  readonly starts: { readonly loop: string; readonly loopq: string }
}

export const files = (dir: string): Files => ({
  dir,
  ledger: NodePath.join(dir, "ledger.txt"),
  memory: NodePath.join(dir, "memory.jsonl"),
  starts: { loop: NodePath.join(dir, "starts-loop.txt"), loopq: NodePath.join(dir, "starts-loopq.txt") }
})

/** The toolsets the faults hit and the callers call, with the tool names `serve` exposes. */
export const soaked = ["ev", "mem", "fx", "http", "ts"] as const
export type Soaked = (typeof soaked)[number]

const q = (s: string) => JSON.stringify(s)

/** The YAML for one run; `run` is the marker prefix, `httpPort` the remote server's port. */
export const yaml = (run: string, httpPort: number, f: Files): string => {
  const node = q(process.execPath)
  const soakLifecycle = [
    "        lifecycle:",
    "          max_restarts: -1",
    "          backoff: { initial: 500ms, max: 4s, jitter: 0.2, reset_after: 5s }",
    `          call_timeout: ${callTimeoutMs}ms`
  ]
  const loop = (name: "loop" | "loopq") => [
    "      - type: mcp",
    `        name: ${name}`,
    `        command: ${node}`,
    `        args: [${q(fixture)}]`,
    "        env:",
    `          CHAOS_TAG: ${q(`${run}:${name}`)}`,
    "          CHAOS_MODE: exit-after-init",
    `          CHAOS_EXIT_AFTER_MS: "${loopLifetimeMs}"`,
    `          CHAOS_STARTS: ${q(f.starts[name])}`,
    "        lifecycle:",
    "          restart: on_failure",
    `          max_restarts: ${loopMaxRestarts}`,
    "          backoff: { initial: 300ms, max: 1s, jitter: 0, reset_after: 30s }",
    `          call_timeout: ${callTimeoutMs}ms`
  ]
  return [
    "# Written by test/chaos/soak.ts for one run; deleted with the run's temp dir.",
    "agents:",
    "  root:",
    "    toolsets:",
    "      - type: mcp",
    "        name: ev",
    `        command: ${node}`,
    `        args: [${q(everything)}, stdio]`,
    "        env:",
    `          CHAOS_TAG: ${q(`${run}:ev`)}`,
    ...soakLifecycle,
    "      - type: mcp",
    "        name: mem",
    `        command: ${node}`,
    `        args: [${q(memory)}]`,
    "        env:",
    `          CHAOS_TAG: ${q(`${run}:mem`)}`,
    `          MEMORY_FILE_PATH: ${q(f.memory)}`,
    ...soakLifecycle,
    "      - type: mcp",
    "        name: fx",
    `        command: ${node}`,
    `        args: [${q(fixture)}]`,
    "        env:",
    `          CHAOS_TAG: ${q(`${run}:fx`)}`,
    `          CHAOS_LEDGER: ${q(f.ledger)}`,
    ...soakLifecycle,
    // A server that stops answering is found by the health probe only.
    "          health: { interval: 2s, timeout: 2s, failures: 2 }",
    "      - type: mcp",
    "        name: http",
    "        remote:",
    `          url: "http://127.0.0.1:${httpPort}/mcp"`,
    "          transport_type: streamable",
    ...soakLifecycle,
    "          health: { interval: 2s, timeout: 2s, failures: 2 }",
    "      - type: lsp",
    "        name: ts",
    `        command: ${node}`,
    `        args: [${q(tsServer)}, "--stdio"]`,
    `        working_dir: ${q(tsProject)}`,
    '        file_types: [".ts"]',
    "        env:",
    `          CHAOS_TAG: ${q(`${run}:ts`)}`,
    ...soakLifecycle,
    ...loop("loop"),
    ...loop("loopq")
  ].join("\n")
}

export const write = (run: string, httpPort: number, f: Files): string => {
  const path = NodePath.join(f.dir, "agent.yaml")
  NodeFs.writeFileSync(path, `${yaml(run, httpPort, f)}\n`)
  return path
}
