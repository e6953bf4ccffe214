/**
 * Claude Code's `headersHelper`: a shell command whose standard output is a JSON object of HTTP
 * headers, for credentials that must not sit in a config file. It runs each time its toolset
 * connects — part of connecting, as spawning is for a stdio server — never when a config is only
 * read, and it is not cached: Claude Code runs it per connection too, so a rotated token reaches
 * the next reconnect, and reconnects are already paced by the restart policy. It is bounded (a
 * deadline, a cap on what it prints, its whole process group killed), and a failure is a connect
 * failure (`ServerUnavailable`, transient) caused by a `HeadersHelperFailed` that says which
 * toolset, which command, how it ended and the tail of its stderr, masked. It runs with the
 * environment a server gets (`ServerProcess.environment`): none of Toolvisor's own variables.
 */
import * as NodeChildProcess from "node:child_process"
import { LifecycleError, Owner, Redaction, ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** The command and the folder it runs in: the config file's, as Claude Code runs it in the project. */
export const Spec = Schema.Struct({ command: Schema.NonEmptyString, cwd: Schema.String })
export type Spec = typeof Spec.Type

/** Claude Code allows a helper 10 s; a helper that hangs must not hold a connect longer. */
export const timeoutMillis = 10_000

/** Headers fit in a few KiB; a helper printing more than this is broken or hostile, and is killed. */
export const maxOutputBytes = 64 * 1024

/** How much of the helper's stderr is kept for the error (its last lines). */
const stderrTailBytes = 2 * 1024
const stderrTailLines = 5

/**
 * How a command is shown in messages: what is written in it after a secret-looking flag (as in a
 * server's `args`) and credential shapes masked, then cut short.
 */
const shown = (command: string, redactor: Redaction.Redactor): string => {
  const masked = redactor.text(command)
  return masked.length > 120 ? `${masked.slice(0, 120)}…` : masked
}

/** The helper did not give headers: it failed, hung, printed too much or printed no JSON object. */
export class HeadersHelperFailed extends Schema.TaggedError<HeadersHelperFailed>()("HeadersHelperFailed", {
  toolset: Schema.String,
  /** The command as written, its secrets and credential shapes masked. */
  command: Schema.String,
  /** What went wrong, in words: "exited with code 3", "timed out after 10 s"… */
  reason: Schema.String,
  exitCode: Schema.NullOr(Schema.Int),
  signal: Schema.NullOr(Schema.String),
  /** Its last stderr lines, masked: never its standard output, which holds the secrets. */
  stderr: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const tail = this.stderr.length === 0 ? "" : `: ${this.stderr.join(" | ")}`
    return `${this.toolset}: headersHelper \`${this.command}\` ${this.reason}${tail}`
  }
}

/** What the process did: its output (bounded), and how it ended. */
interface Ended {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number | null
  readonly signal: string | null
  readonly problem: "timeout" | "output" | undefined
}

/** Runs `/bin/sh -c command` as the leader of its own process group, so a kill reaches what it started. */
const execute = (spec: Spec, env: NodeJS.ProcessEnv) =>
  Effect.callback<Ended, Error>((resume) => {
    const child = NodeChildProcess.spawn("/bin/sh", ["-c", spec.command], {
      cwd: spec.cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    const stdout: Array<Buffer> = []
    let stdoutBytes = 0
    let stderr = ""
    let stderrCut = false
    let problem: Ended["problem"]
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        // Already gone.
      }
    }
    const timer = setTimeout(() => {
      problem ??= "timeout"
      killGroup()
    }, timeoutMillis)
    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length
      if (stdoutBytes > maxOutputBytes) {
        problem ??= "output"
        killGroup()
      } else stdout.push(chunk)
    })
    child.stderr.on("data", (chunk: Buffer) => {
      const joined = stderr + chunk.toString("utf8")
      stderrCut ||= joined.length > stderrTailBytes
      stderr = joined.slice(-stderrTailBytes)
    })
    child.on("error", (cause) => {
      clearTimeout(timer)
      resume(Effect.fail(cause))
    })
    // Whatever the shell left running goes with it, so a grandchild holding the pipes open cannot
    // hold the connect; `close` then comes once everything written before has been read.
    child.on("exit", killGroup)
    child.on("close", (exitCode, signal) => {
      clearTimeout(timer)
      // The first line of a cut tail may begin in the middle of a secret, where no mask knows it: it goes.
      const tail = stderrCut ? stderr.slice(stderr.indexOf("\n") + 1 || stderr.length) : stderr
      resume(
        Effect.succeed({ stdout: Buffer.concat(stdout).toString("utf8"), stderr: tail, exitCode, signal, problem })
      )
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      killGroup()
    })
  })

/** The headers a helper printed: a JSON object whose values are all strings, else undefined. */
export const headersFrom = (stdout: string): Readonly<Record<string, string>> | undefined => {
  let value: unknown
  try {
    value = JSON.parse(stdout)
  } catch {
    return undefined
  }
  if (!Predicate.isObject(value) || Array.isArray(value)) return undefined
  const entries = Object.entries(value)
  const strings = entries.flatMap(([name, header]) => (typeof header === "string" ? [[name, header] as const] : []))
  // `fromEntries` defines keys, so a `__proto__` key is a header name like any other.
  return strings.length === entries.length ? Object.fromEntries(strings) : undefined
}

const reasonOf = (ended: Ended): string => {
  if (ended.problem === "timeout") return `timed out after ${timeoutMillis / 1000} s`
  if (ended.problem === "output") return `printed more than ${maxOutputBytes / 1024} KiB`
  if (ended.exitCode !== 0) {
    return ended.exitCode === null
      ? `was killed by ${ended.signal ?? "a signal"}`
      : `exited with code ${ended.exitCode}`
  }
  return "must print a JSON object of header names to string values"
}

/**
 * The secrets in the headers a helper printed: every value, taken apart as a configured
 * credential header is (`Bearer X` and X, a Basic header's password, a cookie's values).
 */
export const secretsOf = (headers: Readonly<Record<string, string>>): ReadonlyArray<string> =>
  Object.entries(headers).flatMap(([name, value]) => Redaction.credentialSecrets(name, value))

/**
 * Runs the toolset's helper and returns the headers it printed. Its command is shown, and its
 * stderr tail, with the secrets written in the command, core's credential patterns and any value
 * it printed masked; its standard output is never shown.
 */
export const run = (
  toolset: string,
  spec: Spec
): Effect.Effect<Readonly<Record<string, string>>, HeadersHelperFailed> =>
  Effect.gen(function* () {
    const env = ServerProcess.environment(
      { CLAUDE_PLUGIN_ROOT: process.env.CLAUDE_PLUGIN_ROOT ?? spec.cwd },
      yield* Owner.claim
    )
    const redactor = Redaction.make(Redaction.commandSecrets(spec.command))
    // Shown before the redactor learns what the helper printed, which a command need not be masked by.
    const command = shown(spec.command, redactor)
    const failed = (reason: string, fields: Partial<Pick<Ended, "stderr" | "exitCode" | "signal">>) =>
      new HeadersHelperFailed({
        toolset,
        command,
        reason,
        exitCode: fields.exitCode ?? null,
        signal: fields.signal ?? null,
        stderr: (fields.stderr ?? "")
          .split(/\r?\n/)
          .filter((line) => line.trim() !== "")
          .slice(-stderrTailLines)
          .map((line) => redactor.text(line).slice(0, 300))
      })
    const ended = yield* execute(spec, env).pipe(
      Effect.mapError((cause) => failed(`could not start: ${cause.message}`, {}))
    )
    const headers = ended.problem === undefined && ended.exitCode === 0 ? headersFrom(ended.stdout) : undefined
    if (headers !== undefined) return headers
    // A helper that failed may still have printed its token: what it printed is masked wherever it shows.
    const parsed = headersFrom(ended.stdout)
    redactor.add(parsed === undefined ? ended.stdout.split(/\r?\n/).map((line) => line.trim()) : secretsOf(parsed))
    return yield* failed(reasonOf(ended), ended)
  })

/** `run`'s failure as the connect failure it is: the server cannot be reached without its headers. */
export const unavailable = (error: HeadersHelperFailed): LifecycleError.ServerUnavailable =>
  new LifecycleError.ServerUnavailable({
    toolset: error.toolset,
    message: error.message,
    cause: error,
    exitCode: error.exitCode,
    signal: error.signal,
    stderr: error.stderr
  })
