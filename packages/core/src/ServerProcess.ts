/**
 * The one place that runs a server as a child process, for MCP stdio and LSP alike. The process
 * leads its own process group, so closing it reaches every descendant (an `npx` or `uvx` wrapper's
 * real server too). Closing asks politely first — stdin end, then SIGTERM, then SIGKILL to the
 * whole group — and returns only when no process of the group is left, nor any that escaped it.
 * Every server carries this process's owner mark and a number of its own, so what escapes its group
 * is found at its close, and all of it if this process dies without closing it (`Owner`); none
 * inherits Toolvisor's own variables (its tokens and keys). However much a server writes to stderr,
 * it costs a tail of short lines and a bounded rate of reading; a server that closes its stdout but
 * runs on ends its session all the same.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type * as NodeStream from "node:stream"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Classify from "./Classify.ts"
import * as ProcessGroup from "./internal/processGroup.ts"
import { groupAlive } from "./internal/procfs.ts"
import * as Stderr from "./internal/stderr.ts"
import * as WallClock from "./internal/wallClock.ts"
import * as LifecycleError from "./LifecycleError.ts"
import * as Owner from "./Owner.ts"
import * as Redaction from "./Redaction.ts"

/** The server to run: its command line, environment and folder, and how patiently to end it. */
export interface Spec {
  readonly command: string
  readonly args?: ReadonlyArray<string>
  /** Added to (and overriding) the parent's environment. */
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /** How many stderr lines to keep for error messages (default 50), each cut at `maxStderrLineBytes`. */
  readonly stderrLines?: number
  /** How long to wait after ending stdin, then after SIGTERM (defaults 2 s each). */
  readonly grace?: { readonly stdin?: Duration.Input; readonly term?: Duration.Input }
}

/** How a process ended, as Node reports it: an exit code, or the signal that killed it. */
export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/**
 * A running server and its pipes, owned by the scope `spawn` ran in: closing the scope ends it and
 * its process group. Its exit is a typed error whose kind depends on whether the handshake was done.
 */
export interface ServerProcess {
  readonly pid: number
  readonly stdin: NodeStream.Writable
  readonly stdout: NodeStream.Readable
  /** The last lines the process wrote to stderr, oldest first. */
  readonly stderrTail: () => ReadonlyArray<string>
  /**
   * Marks the handshake as done. Before it, any exit means the server never came up
   * (`ServerUnavailable`); after it, an exit other than a clean code 0 is a crash.
   */
  readonly established: Effect.Effect<void>
  /** Completes when the process exits: success only for a clean exit after `established`. */
  readonly exited: Effect.Effect<void, LifecycleError.ServerUnavailable | LifecycleError.ServerCrashed>
  /**
   * Completes when the session over the pipes is over: as `exited` when the process exits, and
   * with `ServerCrashed` when it closes its stdout but does not exit soon after — it can never
   * answer again, so it is as good as crashed (closing the scope then ends it).
   */
  readonly ended: Effect.Effect<void, LifecycleError.ServerUnavailable | LifecycleError.ServerCrashed>
  /** Whether `exited` has completed: lets a finalizer tell a process that died from one it ends. */
  readonly hasExited: () => boolean
  /** Runs `effect`, failing it at once if the process exits first (a handshake must not hang on a dead server). */
  readonly whileRunning: <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | LifecycleError.ServerUnavailable | LifecycleError.ServerCrashed, R>
}

/**
 * Told of every server spawned where it is provided, with that server's stderr tail. The runtime
 * provides one around each toolset it builds (as it does `Redaction.Current`), so an operator can
 * read what the latest server said, also after it died — and a server that dies before its
 * handshake never makes a session. Outside one, nobody is told.
 */
export const StderrWatch = Context.Reference<((stderrTail: () => ReadonlyArray<string>) => void) | undefined>(
  "@toolvisor/core/ServerProcess/StderrWatch",
  { defaultValue: () => undefined }
)

/**
 * Told of a server's pid as soon as it is spawned, before its handshake: the Supervisor provides
 * one around each connect, so a toolset shows the process it is starting (one that hangs in
 * `initialize` can be found and inspected). Outside one, nobody is told.
 */
export const Spawned = Context.Reference<((pid: number) => void) | undefined>("@toolvisor/core/ServerProcess/Spawned", {
  defaultValue: () => undefined
})

/**
 * Lines a runtime prints after the error itself: a stack frame, a version banner, a blank; and
 * npm's (`npx` servers) advice and log path after a failed install, which hid the line saying
 * what failed (`… is not in this registry`).
 */
const noise = [
  /^\s*$/,
  /^\s+at\s/,
  /^Node\.js v\d/,
  /^\s*\^+\s*$/,
  /^Traceback \(most recent call last\)/,
  /^npm (error|ERR!)(\s+\d{3})?\s*$/,
  /^npm (error|ERR!) A complete log of this run can be found in/,
  /^npm (error|ERR!)( \d{3})? (Note that you can also install from a|tarball, folder, http url, or git url)/
]

/** An error-looking line says why; otherwise the last line that is not noise. */
const telling = /\b(error|exception|fatal|panic|denied|not found|no such|cannot|can't|unable|failed|invalid)\b/i

/** The stderr line that says why a server ended: the last error-looking one, not a trailing banner. */
export const meaningfulLine = (lines: ReadonlyArray<string>): string | undefined => {
  const candidates = lines.filter((line) => !noise.some((pattern) => pattern.test(line)))
  const errors = candidates.filter((line) => telling.test(line))
  return (errors.at(-1) ?? candidates.at(-1))?.trim()
}

/** Spawns the server in the current scope; closing the scope ends its whole process group. */
export const spawn = (
  toolset: string,
  spec: Spec
): Effect.Effect<ServerProcess, LifecycleError.ServerUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const exit = yield* Deferred.make<Exited>()
    const outputClosed = yield* Deferred.make<void>()
    // Masked by the toolset's redactor before each line is cut: the cut must not fall in a secret.
    const tail = new Stderr.Tail(spec.stderrLines ?? 50, yield* Redaction.Current)
    const watch = yield* StderrWatch
    watch?.(tail.lines)
    // Runs after the close below (finalizers run in reverse): the group is gone, stderr may flow.
    yield* Effect.addFinalizer(() => Effect.sync(() => tail.stop()))
    const claim = yield* Owner.claim
    const child = yield* Effect.acquireRelease(start(toolset, spec, claim, exit, outputClosed, tail), (child) =>
      close(toolset, child, claim, Deferred.await(exit), spec.grace)
    )
    let isEstablished = false
    const commandLine = [spec.command, ...(spec.args ?? [])].join(" ")
    const exited = Deferred.await(exit).pipe(
      Effect.flatMap((info): Effect.Effect<void, LifecycleError.ServerUnavailable | LifecycleError.ServerCrashed> => {
        const stderr = tail.lines()
        const how = info.signal === null ? `code ${info.code}` : `signal ${info.signal}`
        const line = meaningfulLine(stderr)
        const last = line === undefined ? "" : `; its stderr says: ${line}`
        if (!isEstablished) {
          return Effect.fail(
            new LifecycleError.ServerUnavailable({
              toolset,
              message: Redaction.redact(`${toolset}: "${commandLine}" exited (${how}) before it was ready${last}`),
              exitCode: info.code,
              signal: info.signal,
              stderr
            })
          )
        }
        if (info.code === 0) return Effect.void
        return Effect.fail(
          new LifecycleError.ServerCrashed({
            toolset,
            message: Redaction.redact(`${toolset}: server exited unexpectedly (${how})${last}`),
            exitCode: info.code,
            signal: info.signal,
            stderr
          })
        )
      })
    )
    const stillRunning = Effect.suspend(() =>
      Effect.fail(
        new LifecycleError.ServerCrashed({
          toolset,
          message: `${toolset}: the server closed its stdout but kept running, so it can no longer answer`,
          exitCode: null,
          signal: null,
          stderr: tail.lines()
        })
      )
    )
    const ended = Effect.raceFirst(
      exited,
      Deferred.await(outputClosed).pipe(
        Effect.andThen(Effect.raceFirst(exited, WallClock.sleep(exitReportGrace).pipe(Effect.andThen(stillRunning))))
      )
    )
    const pid = child.pid
    if (pid === undefined) return yield* Effect.die(new Error("spawned process has no pid"))
    const spawned = yield* Spawned
    spawned?.(pid)
    return {
      pid,
      stdin: child.stdin,
      stdout: child.stdout,
      stderrTail: tail.lines,
      established: Effect.sync(() => {
        isEstablished = true
      }),
      exited,
      ended,
      hasExited: () => Deferred.isDoneUnsafe(exit),
      whileRunning: (effect) => {
        const exitFailure = Effect.flatMap(exited, () =>
          Effect.fail(
            new LifecycleError.ServerCrashed({
              toolset,
              message: `${toolset}: server exited`,
              exitCode: 0,
              signal: null
            })
          )
        )
        // A dying server closes its pipes a moment before its exit is reported; when the effect
        // fails on the closed pipe, the exit (with its code and stderr) is the better answer.
        return Effect.raceFirst(effect, exitFailure).pipe(
          Effect.catch((error) =>
            Effect.raceFirst(exitFailure, WallClock.sleep(exitReportGrace).pipe(Effect.andThen(Effect.fail(error))))
          )
        )
      }
    } satisfies ServerProcess
  })

type Child = NodeChildProcess.ChildProcessWithoutNullStreams

/** How long an exit report waits for the last of stderr. */
const stderrGrace = 200

/** How long a failure on a closed pipe, or a closed stdout, waits for the exit that usually follows it. */
const exitReportGrace = 500

/**
 * Toolvisor's own variables: its HTTP token (`TOOLVISOR_HTTP_TOKEN`), its cluster key
 * (`TOOLVISOR_CLUSTER_KEY`), the directory of its OAuth tokens (`TOOLVISOR_STATE_DIR`), the
 * inputs a config asks for (`TOOLVISOR_INPUT_*`), a runner's id. They are addressed to Toolvisor
 * and none to a server, so the whole prefix is held back — a list would miss the next secret
 * someone adds. A server that needs one gets it from its config's `env`, which passes as written.
 */
export const isOwnVariable = (name: string): boolean => name.startsWith("TOOLVISOR_")

/**
 * The environment of a process Toolvisor runs for a toolset, a server or a `headersHelper`: this
 * process's, less its own variables, plus `env` (a server's spec's), plus the owner mark. One
 * function for both, so that a helper sees no more of Toolvisor's secrets than a server does.
 */
export const environment = (
  env: Readonly<Record<string, string>> | undefined,
  claim: Owner.Claim
): NodeJS.ProcessEnv => {
  const inherited: NodeJS.ProcessEnv = {}
  for (const name in process.env) if (!isOwnVariable(name)) inherited[name] = process.env[name]
  // The owner mark comes last: a process is this one's whatever its spec says.
  return { ...inherited, ...env, ...claim.env }
}

const start = (
  toolset: string,
  spec: Spec,
  claim: Owner.Claim,
  exit: Deferred.Deferred<Exited>,
  outputClosed: Deferred.Deferred<void>,
  tail: Stderr.Tail
) =>
  Effect.callback<Child, LifecycleError.ServerUnavailable>((resume) => {
    const cannotRun = (cause: unknown) => {
      const code = codeOf(cause)
      const why =
        code === "ENOENT"
          ? notFound(spec)
          : code === "ENOTDIR"
            ? `its working directory ${spec.cwd ?? process.cwd()} is not a directory`
            : Classify.classify(toolset, cause).message
      resume(
        Effect.fail(
          new LifecycleError.ServerUnavailable({
            toolset,
            message: Redaction.redact(`${toolset}: cannot run "${spec.command}": ${why}`),
            cause
          })
        )
      )
    }
    let child: Child
    try {
      child = NodeChildProcess.spawn(spec.command, spec.args ?? [], {
        cwd: spec.cwd,
        env: environment(spec.env, claim),
        detached: true,
        stdio: ["pipe", "pipe", "pipe"]
      })
    } catch (cause) {
      // Some failures are thrown rather than emitted: a working directory that is a file (ENOTDIR).
      return cannotRun(cause)
    }
    tail.read(child.stderr)
    const onOutputClosed = () => Deferred.doneUnsafe(outputClosed, Effect.void)
    child.stdout.once("end", onOutputClosed)
    child.stdout.once("close", onOutputClosed)
    // A server that dies while we write to it must not take the host down with EPIPE.
    child.stdin.on("error", () => {})
    // "exit" can come before the last stderr bytes are read; wait (briefly: a grandchild may hold
    // the pipe open) for stderr to end, so the reported tail says why the server died.
    let stderrEnded = false
    child.stderr.once("end", () => (stderrEnded = true))
    child.on("exit", (code, signal) => {
      const report = () => Deferred.doneUnsafe(exit, Effect.succeed({ code, signal }))
      if (stderrEnded) return report()
      const timer = setTimeout(report, stderrGrace)
      child.stderr.once("end", () => {
        clearTimeout(timer)
        report()
      })
    })
    child.once("spawn", () => resume(Effect.succeed(child)))
    child.once("error", (cause) => {
      // After a successful spawn, errors come from kill/stdio; the exit event reports the outcome.
      if (child.pid === undefined) cannotRun(cause)
    })
  })

const codeOf = (cause: unknown): unknown =>
  typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined

/**
 * Where a spawn looked and found nothing. Node says only `spawn X ENOENT`, for a missing program,
 * a missing working directory and a script whose `#!` interpreter is missing alike.
 */
const notFound = (spec: Spec): string => {
  const folder = spec.cwd ?? process.cwd()
  if (!NodeFs.existsSync(folder)) return `its working directory ${folder} does not exist`
  if (!spec.command.includes("/")) {
    const path = spec.env?.PATH ?? process.env.PATH ?? ""
    return `not found in any folder on PATH (${path.length > 300 ? `${path.slice(0, 300)}…` : path})`
  }
  const file = NodePath.resolve(folder, spec.command)
  return NodeFs.existsSync(file)
    ? `${file} exists, but the interpreter its #! line names was not found`
    : `there is no ${file}${file === spec.command ? "" : ` (looked in ${folder})`}`
}

/** Ends the server's group, then what escaped it (a `setsid` descendant); returns once none is left. */
const close = (
  toolset: string,
  child: Child,
  claim: Owner.Claim,
  awaitExit: Effect.Effect<Exited>,
  grace: Spec["grace"]
) =>
  Effect.gen(function* () {
    const termGrace = Duration.fromInputUnsafe(grace?.term ?? "2 seconds")
    yield* endGroup(child, awaitExit, Duration.fromInputUnsafe(grace?.stdin ?? "2 seconds"), termGrace)
    yield* Owner.endEscaped(toolset, claim, termGrace)
  })

/** Ends stdin, then SIGTERM, then SIGKILL to the group; returns once no member is left. */
const endGroup = (
  child: Child,
  awaitExit: Effect.Effect<Exited>,
  stdinGrace: Duration.Duration,
  termGrace: Duration.Duration
) =>
  Effect.gen(function* () {
    const pgid = child.pid
    if (pgid === undefined) return
    child.stdin.end()
    // A stopped (SIGSTOP) server would read neither the end of its input nor a SIGTERM.
    ProcessGroup.signal(pgid, "SIGCONT")
    yield* Effect.raceFirst(awaitExit, WallClock.sleep(Duration.toMillis(stdinGrace)))
    if (!groupAlive(pgid)) return
    ProcessGroup.signal(pgid, "SIGTERM")
    if (yield* ProcessGroup.awaitGone(pgid, termGrace)) return
    ProcessGroup.signal(pgid, "SIGKILL")
    yield* ProcessGroup.awaitGone(pgid, Duration.seconds(5))
  })

/** Liveness of a server (zombies excluded) and of its process group, read from /proc where there is one. */
export { groupAlive, isAlive } from "./internal/procfs.ts"
/** The bounds on what a server's stderr costs: the length of a line kept, and how fast it is read. */
export { maxLineBytes as maxStderrLineBytes, readBytesPerSecond as stderrBytesPerSecond } from "./internal/stderr.ts"
