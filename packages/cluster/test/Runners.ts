/**
 * Runner processes for the multi-process tests: the real `toolvisor runner` command, bundled as
 * it is installed (it starts in a fraction of the time the sources take), with short timers (a
 * 4 s lease) that the test clients share.
 */
import * as ChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"

/** The installed entry point; the project's global setup (`bundle.setup.ts`) has built the bundle it loads. */
export const cli = NodePath.resolve(import.meta.dirname, "../../../apps/cli/bin/toolvisor.js")
export const leaseSeconds = 4
export const timerFlags = [
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
  "--shutdown-grace",
  "5s",
  "--rebalance-cooldown",
  "1s"
]
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

export const stopRunner = (runner: RunnerProcess) =>
  Effect.promise(() => {
    if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill("SIGTERM")
    return runner.exited
  })
