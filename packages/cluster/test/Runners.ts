/**
 * Runner processes for the multi-process tests: the real `toolvisor runner` command, bundled as
 * it is installed (it starts in a fraction of the time the sources take), with short timers (a
 * 4 s lease) that the test clients share.
 */
import * as ChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentConfig } from "@toolvisor/config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as ClusterRegistry from "../src/ClusterRegistry.ts"
import * as Orphans from "../src/internal/orphans.ts"
import { config } from "./helpers.ts"

/** The installed entry point; the project's global setup (`bundle.setup.ts`) has built the bundle it loads. */
export const cli = NodePath.resolve(import.meta.dirname, "../../../apps/cli/bin/toolvisor.js")
export const leaseSeconds = 4
/** The timers every member shares, as flags: what a CLI client gives to agree with the runners. */
export const clientTimerFlags = [
  "--lease",
  `${leaseSeconds}s`,
  "--lease-refresh",
  "1s",
  "--health-check",
  "2s",
  "--assignments-refresh",
  "500ms",
  "--message-poll",
  "1s",
  "--rebalance-cooldown",
  "1s"
]
/** A runner's flags: the shared timers and its own shutdown grace. */
export const timerFlags = [...clientTimerFlags, "--shutdown-grace", "5s"]
export const timers = {
  lease: `${leaseSeconds} seconds`,
  leaseRefresh: "1 second",
  healthCheck: "2 seconds",
  assignmentsRefresh: "500 millis",
  messagePoll: "1 second",
  shutdownGrace: "5 seconds",
  rebalanceCooldown: "1 second"
} as const

/** The same timers as a settings file, for CLI clients (`--cluster-settings`). */
export const settingsFile = (dir: string): string => {
  const file = NodePath.join(dir, "cluster.yaml")
  NodeFs.writeFileSync(
    file,
    [
      "cluster:",
      `  lease: ${leaseSeconds}s`,
      "  lease_refresh: 1s",
      "  health_check: 2s",
      "  assignments_refresh: 500ms",
      "  message_poll: 1s",
      "  rebalance_cooldown: 1s"
    ].join("\n")
  )
  return file
}

export interface RunnerProcess {
  readonly id: string
  readonly child: ChildProcess.ChildProcess
  readonly exited: Promise<number | null>
}

/** `base` flag/value pairs with those in `overrides` replaced (a flag may be given once). */
const overridden = (base: ReadonlyArray<string>, overrides: ReadonlyArray<string>): ReadonlyArray<string> => {
  const given = new Set(overrides.filter((_, i) => i % 2 === 0))
  return [
    ...base
      .filter((_, i) => i % 2 === 0 && !given.has(base[i] ?? ""))
      .flatMap((flag) => [flag, base[base.indexOf(flag) + 1] ?? ""]),
    ...overrides
  ]
}

/**
 * Starts `toolvisor runner` and waits for its "is up" line; `flags` override the test timers. Tests give fixed ports (a runner's id
 * is its address) below Linux's ephemeral range (32768–60999): a port in it can be held at any
 * moment as the local end of some outgoing connection, and the runner then fails to listen.
 */
export const startRunner = (postgres: string, port: number, flags: ReadonlyArray<string> = []) =>
  Effect.callback<RunnerProcess, Error>((resume) => {
    const child = ChildProcess.spawn(
      process.execPath,
      [cli, "runner", "--postgres", postgres, "--port", String(port), ...overridden(timerFlags, flags)],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    let stderr = ""
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("is up")) resume(Effect.succeed({ id: `127.0.0.1:${port}`, child, exited }))
    })
    child.once("exit", (code) => resume(Effect.fail(new Error(`runner on ${port} exited ${code}: ${stderr}`))))
  })

/**
 * Ends a runner: SIGTERM, with SIGCONT after it (a test that failed may leave it paused, and a
 * paused process keeps a SIGTERM pending), and SIGKILL if it is still there after 30 s.
 */
export const stopRunner = (runner: RunnerProcess) =>
  Effect.promise(() => {
    if (runner.child.exitCode === null && runner.child.signalCode === null) {
      runner.child.kill("SIGTERM")
      runner.child.kill("SIGCONT")
      const kill = setTimeout(() => runner.child.kill("SIGKILL"), 30_000)
      void runner.exited.then(() => clearTimeout(kill))
    }
    return runner.exited
  })

export const stopRunners = (runners: Iterable<RunnerProcess>) =>
  Effect.forEach([...runners], stopRunner, { concurrency: "unbounded", discard: true })

/**
 * Starts a runner on each port at once, keyed by id. The map is the tests' to change (a runner
 * killed, one brought back); those in it when the scope closes are stopped.
 */
export const startRunners = (postgres: string, ports: ReadonlyArray<number>, flags: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const runners = new Map<string, RunnerProcess>()
    yield* Effect.addFinalizer(() => stopRunners(runners.values()))
    yield* Effect.forEach(
      ports,
      (port) => Effect.map(startRunner(postgres, port, flags), (runner) => runners.set(runner.id, runner)),
      { concurrency: "unbounded", discard: true }
    )
    return runners
  })

/** This process as a cluster client on the test timers (or `clientTimers`): a registry of `toolsets`. */
export const clientRegistry = (
  postgres: string,
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>,
  clientTimers: ClusterClient.Options["timers"] = timers
) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(ClusterClient.layer({ postgres, timers: clientTimers }))
    return yield* ClusterRegistry.make(config(toolsets), { requestTimeout: "15 seconds" }).pipe(
      Effect.provideContext(context)
    )
  })

/** The runner a server process was started by, from the mark in its environment. */
export const runnerOf = (pid: number | undefined): string | undefined =>
  pid === undefined ? undefined : Orphans.markOf(pid)?.runner
