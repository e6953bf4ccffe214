/**
 * What the cluster soak runs: its timer profiles, its agent config (journal servers, each
 * tagged so the soak finds its processes) and its cluster settings file, shared by every member.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

export const root = NodePath.resolve(import.meta.dirname, "../../..")
/**
 * The installed CLI: its bundle, which starts in a fraction of the time the sources take; the
 * soak rebuilds it first when a source is newer (`apps/cli/test/bundle.setup.ts`).
 */
export const main = NodePath.join(root, "apps/cli/bin/toolvisor.js")
export const journalServer = NodePath.join(root, "packages/cluster/test/fixtures/journal-server.mjs")
export const clientScript = NodePath.join(import.meta.dirname, "client.ts")

export interface Profile {
  readonly leaseMs: number
  readonly cooldownMs: number
  /** The settings file's `cluster:` section. */
  readonly settings: Readonly<Record<string, string>>
  readonly shutdownGraceMs: number
}

/**
 * `default` is what a deployment runs (a 10 s lease); `fast` (a 4 s lease) fits more faults into
 * a short run, as in CI. The cooldown keeps a returning runner from taking toolsets back at once.
 */
export const profiles: Readonly<Record<"default" | "fast", Profile>> = {
  default: {
    leaseMs: 10_000,
    cooldownMs: 30_000,
    shutdownGraceMs: 10_000,
    settings: {
      lease: "10s",
      lease_refresh: "3s",
      health_check: "5s",
      assignments_refresh: "1s",
      message_poll: "2s",
      shutdown_grace: "10s",
      rebalance_cooldown: "30s"
    }
  },
  fast: {
    leaseMs: 4_000,
    cooldownMs: 5_000,
    shutdownGraceMs: 5_000,
    settings: {
      lease: "4s",
      lease_refresh: "1s",
      health_check: "2s",
      assignments_refresh: "500ms",
      message_poll: "1s",
      shutdown_grace: "5s",
      rebalance_cooldown: "5s"
    }
  }
}

/** A call's deadline in the toolsets' policy; the client adds its request timeout (10 s). */
export const callTimeoutMs = 10_000
/** The longest any call may take before it is a hang: the client's deadline, and some slack. */
export const hangMs = callTimeoutMs + 10_000 + 3_000

/** The journal toolsets; the odd ones ignore stdin EOF and SIGTERM, as servers that orphan do. */
export const toolsets = ["j0", "j1", "j2", "j3", "j4", "j5"] as const

export interface Files {
  readonly dir: string
  readonly config: string
  readonly settings: string
  readonly outcomes: string
  readonly journal: (toolset: string) => string
}

export const files = (dir: string): Files => ({
  dir,
  config: NodePath.join(dir, "agent.yaml"),
  settings: NodePath.join(dir, "cluster.yaml"),
  outcomes: NodePath.join(dir, "outcomes.jsonl"),
  journal: (toolset) => NodePath.join(dir, `journal-${toolset}.txt`)
})

const q = (s: string) => JSON.stringify(s)

/** Writes the agent config and the settings file of one run; `run` prefixes every process tag. */
export const write = (run: string, f: Files, profile: Profile): void => {
  const lines = ["agents:", "  root:", "    toolsets:"]
  toolsets.forEach((name, i) => {
    lines.push(
      "      - type: mcp",
      `        name: ${name}`,
      `        command: ${q(process.execPath)}`,
      `        args: [${q(journalServer)}]`,
      `        env: { JOURNAL_FILE: ${q(f.journal(name))}, CHAOS_TAG: ${q(`${run}:${name}`)}${i % 2 === 1 ? ", IGNORE_EOF: '1'" : ""} }`,
      "        lifecycle:",
      "          max_restarts: -1",
      "          backoff: { initial: 200ms, max: 2s }",
      `          call_timeout: ${callTimeoutMs}ms`
    )
  })
  NodeFs.writeFileSync(f.config, `${lines.join("\n")}\n`)
  const settings = Object.entries(profile.settings).map(([key, value]) => `  ${key}: ${value}`)
  NodeFs.writeFileSync(f.settings, ["cluster:", ...settings, ""].join("\n"))
}
