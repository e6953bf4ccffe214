/**
 * The in-turn reprobe of docker-agent PR #2458, as one mechanism every surface shares: the agent
 * stacks check at the start of a turn and after every tool-call batch, the MCP gateway before a
 * call to a tool whose toolset is down. A reprobe restarts the toolsets that stopped on a
 * transient error (the registry's `reprobe`), so a server that has become available — its binary
 * installed, its directory created, its crash cause gone — joins at once, and `check` turns
 * failures into notices an app can show: one warning per failure streak, one recovery notice when
 * the streak ends, nothing repeated in between. Whether the tools moved is the catalog's
 * `version` to tell: the callers rebuild their tools only when it changed.
 *
 * A reprobe can take as long as a server's `startup_timeout`; a caller waits for it at most `wait`
 * (5 s by default). A start still running then goes on in the background and joins later, so a
 * hanging server never stalls a turn or a call. One reprobe runs at a time, and with a `cooldown`
 * none starts within that long of the last one's start: a host that calls a dead toolset's tool
 * in a loop costs one restart attempt per cooldown, not one per call. With `only`, a reprobe
 * restarts just the down toolsets it picks: the gateway picks those that failed to start
 * (`failedToStart`), so a call never renews the restart budget of a server that crash-looped.
 */
import { LifecycleError, State } from "@toolvisor/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import type * as ToolsetRegistry from "./ToolsetRegistry.ts"

/** A toolset is not usable and says why; sent once per failure streak. */
export interface ToolsetFailing {
  readonly _tag: "ToolsetFailing"
  readonly toolset: string
  readonly state: State.State
  readonly error: string
}

/** A toolset that was failing is usable again; sent once, when the streak ends. */
export interface ToolsetRecovered {
  readonly _tag: "ToolsetRecovered"
  readonly toolset: string
}

export type Notice = ToolsetFailing | ToolsetRecovered

export interface Reprobe {
  /**
   * Restarts the toolsets that are down, if any (joining a reprobe in flight; none within the
   * cooldown of the last), and answers the toolsets it brought back within `wait`.
   */
  readonly reprobe: Effect.Effect<ReadonlyArray<string>>
  /** Reprobes toolsets that are down, then reports what changed since the last check. */
  readonly check: Effect.Effect<ReadonlyArray<Notice>>
}

/** Not serving calls, with an error that says why: a stop asked for by the user is not a failure. */
export const isDown = (
  s: State.StatusSnapshot
): s is State.StatusSnapshot & { readonly lastError: typeof State.ErrorSummary.Type } =>
  s.lastError !== undefined && !State.isUsable(s.state)

/**
 * Down because it could not start — its binary or directory missing, exiting at once, silent past
 * its startup_timeout — which is what a later try can fix: not a server that ran and crashed
 * until its restart budget was spent (a new try would start a new crash loop), not a permanent
 * error (a login, a missing capability).
 */
export const failedToStart = (s: State.StatusSnapshot): boolean =>
  isDown(s) &&
  State.isTerminal(s.state) &&
  s.lastError.tag !== "ServerCrashed" &&
  !LifecycleError.isPermanentTag(s.lastError.tag)

export interface Options {
  /** How long a caller waits for the toolsets it restarts (default 5 seconds). */
  readonly wait?: Duration.Input | undefined
  /** No reprobe starts within this long of the last one's start (default none). */
  readonly cooldown?: Duration.Input | undefined
  /**
   * Restart only the down toolsets this picks (each through the registry's `restartToolset`);
   * by default every toolset the registry's `reprobe` would retry.
   */
  readonly only?: ((s: State.StatusSnapshot) => boolean) | undefined
}

/** Starts watching a registry. A reprobe still running when the scope closes is interrupted. */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<Reprobe, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const wait = options.wait ?? Duration.seconds(5)
    const cooldown = Duration.toMillis(Duration.fromInputUnsafe(options.cooldown ?? Duration.zero))
    const streaks = new Set<string>()
    let running: Fiber.Fiber<ToolsetRegistry.ReprobeReport> | undefined
    let startedAt = Number.NEGATIVE_INFINITY
    const { only } = options
    const wanted = (s: State.StatusSnapshot) => (only === undefined ? isDown(s) && State.isTerminal(s.state) : only(s))

    /** The restarts of one reprobe: the registry's own sweep, or just the toolsets `only` picks. */
    const sweep = (board: ReadonlyArray<State.StatusSnapshot>): Effect.Effect<ToolsetRegistry.ReprobeReport> =>
      only === undefined
        ? registry.reprobe
        : Effect.map(
            Effect.forEach(
              board.filter(only),
              (s) => Effect.map(Effect.result(registry.restartToolset(s.name)), (result) => ({ s, result })),
              { concurrency: "unbounded" }
            ),
            (results) => ({
              recovered: results.flatMap(({ s, result }) => (result._tag === "Success" ? [s.name] : [])),
              failing: results.flatMap(({ s, result }) =>
                result._tag === "Failure" ? [{ toolset: s.name, error: result.failure.message }] : []
              )
            })
          )

    const reprobe = Effect.gen(function* () {
      const board = yield* registry.snapshot
      if (!board.some(wanted)) return []
      const now = yield* Clock.currentTimeMillis
      const inFlight = running !== undefined && running.pollUnsafe() === undefined ? running : undefined
      if (inFlight === undefined && now - startedAt < cooldown) return []
      const fiber = inFlight ?? (yield* Effect.forkIn(sweep(board), scope))
      if (inFlight === undefined) {
        running = fiber
        startedAt = now
      }
      const exit = yield* Effect.timeoutOption(Fiber.await(fiber), wait)
      return exit._tag === "Some" && Exit.isSuccess(exit.value) ? exit.value.value.recovered : []
    })

    const check = Effect.gen(function* () {
      yield* reprobe
      const board = yield* registry.snapshot
      const notices: Array<Notice> = []
      for (const s of board) {
        if (isDown(s)) {
          if (!streaks.has(s.name))
            notices.push({ _tag: "ToolsetFailing", toolset: s.name, state: s.state, error: s.lastError.message })
          streaks.add(s.name)
        } else if (State.isUsable(s.state) && streaks.delete(s.name)) {
          notices.push({ _tag: "ToolsetRecovered", toolset: s.name })
        }
      }
      return notices
    })
    return { reprobe, check }
  })
