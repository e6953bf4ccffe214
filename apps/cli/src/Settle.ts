/**
 * Start-up for the one-shot commands (`status`, `tools`, `describe`, `call`): start every
 * toolset and wait until none is still on its way, never longer than `--timeout`, saying
 * on stderr what it is waiting for. Then a verdict a script can trust: which toolsets are down,
 * and whether that fails the command.
 */
import type { AgentConfig } from "@toolvisor/config"
import type { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"

/**
 * Still on its way: starting, or reconnecting with no failure yet. A toolset that is Restarting
 * with an error has failed and is waiting out its backoff (an optional one whose binary is
 * missing retries its first start for a while): to a script it is down now, not pending.
 */
const busy = (s: State.StatusSnapshot) =>
  s.state === "Starting" || (s.state === "Restarting" && s.lastError === undefined)

const pendingNames = (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.filter(busy).map((s) => Printable.line(s.name))

/**
 * While waiting: on a terminal, one line redrawn in place with the toolsets still starting and
 * the time left; piped, one line after a second of waiting, so quick runs stay quiet. Stdout is
 * never touched.
 */
const progress = (registry: ToolsetRegistry.Registry, timeout: Duration.Duration) =>
  Effect.gen(function* () {
    const began = Date.now()
    const total = Duration.format(timeout)
    if (!process.stderr.isTTY) {
      yield* Effect.sleep("1 second")
      const pending = pendingNames(yield* registry.snapshot)
      if (pending.length > 0) yield* Effect.logInfo(`waiting up to ${total} for: ${pending.join(", ")}`)
      return
    }
    let frame = 0
    yield* Effect.gen(function* () {
      const pending = pendingNames(yield* registry.snapshot)
      if (pending.length === 0) return
      const elapsed = ((Date.now() - began) / 1000).toFixed(1)
      const text = `${Output.spinner(frame++)} starting: ${pending.join(", ")} (${elapsed} s of ${total})`
      yield* Effect.sync(() => process.stderr.write(`\r\u001b[K${Output.truncate(text, process.stderr.columns || 80)}`))
    }).pipe(
      Effect.repeat(Schedule.spaced("100 millis")),
      Effect.ensuring(Effect.sync(() => process.stderr.write("\r\u001b[K")))
    )
  })

/**
 * Starts every eager toolset and waits until none is still on its way, at most `timeout`.
 * The start keeps going in the caller's scope when the wait runs out, so the board shows what
 * was still starting then.
 */
export const settle = (registry: ToolsetRegistry.Registry, timeout: Duration.Duration) =>
  Effect.gen(function* () {
    const started = yield* Effect.forkScoped(Effect.ignore(registry.start), { startImmediately: true })
    const settled = Fiber.join(started).pipe(
      Effect.andThen(
        registry.status.pipe(
          Stream.filter((board) => !board.some(busy)),
          Stream.runHead
        )
      )
    )
    const shown = yield* Effect.forkChild(progress(registry, timeout), { startImmediately: true })
    yield* Effect.timeoutOption(settled, timeout)
    yield* Fiber.interrupt(shown)
    return yield* registry.snapshot
  })

const usable = (s: State.StatusSnapshot) => s.state === "Ready" || s.state === "Degraded"

/** The outcome of a start-up for scripts: the exit code and the lines that explain it. */
export interface Verdict {
  readonly ok: boolean
  /** One line naming what is down, or undefined when everything eager is up. */
  readonly summary: string | undefined
}

/**
 * Ok when every required toolset is usable and, unless nothing is eager, at least one toolset
 * is; optional toolsets that are down keep it ok but are named. Lazy toolsets are not judged.
 */
export const verdict = (config: AgentConfig.Config, board: ReadonlyArray<State.StatusSnapshot>): Verdict => {
  const byName = new Map(config.toolsets.map((t) => [t.name, t]))
  const eager = board.filter((s) => byName.get(s.name)?.lazy !== true)
  const down = eager.filter((s) => !usable(s))
  const requiredDown = down.filter((s) => byName.get(s.name)?.policy.required === true)
  const optionalDown = down.filter((s) => byName.get(s.name)?.policy.required !== true)
  const name = (s: State.StatusSnapshot) => `${s.name} (${Output.shownState(s)})`
  const parts = [
    requiredDown.length > 0 ? `required not Ready: ${requiredDown.map(name).join(", ")}` : undefined,
    optionalDown.length > 0 ? `optional not Ready: ${optionalDown.map(name).join(", ")}` : undefined
  ].filter((p) => p !== undefined)
  const noneUp = eager.length > 0 && down.length === eager.length
  return {
    ok: requiredDown.length === 0 && !noneUp,
    summary:
      parts.length === 0
        ? undefined
        : `${eager.length - down.length} of ${eager.length} toolsets Ready; ${parts.join("; ")}`
  }
}
