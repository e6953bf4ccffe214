/**
 * The in-turn reprobe of docker-agent PR #2458, as a value both agent stacks share. At the start
 * of a turn and after every tool-call batch, `check` restarts toolsets that stopped on a transient
 * error (the registry's `reprobe`), so a server that a tool call has just made available — its
 * binary installed, its directory created — joins the same turn — and turns failures into notices
 * an app can show: one warning per failure streak, one recovery notice when the streak ends,
 * nothing repeated in between. Whether the tools moved is the catalog's `version` to tell: the
 * callers rebuild their tools only when it changed.
 *
 * A reprobe can take as long as a server's `startup_timeout`; a turn waits for it at most `wait`
 * (5 s by default). A start still running then goes on in the background and joins at a later
 * check, so a hanging server never stalls every step of a turn.
 */
import { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

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
  /** Reprobes toolsets that are down, then reports what changed since the last check. */
  readonly check: Effect.Effect<ReadonlyArray<Notice>>
}

/** Not serving calls, with an error that says why: a stop asked for by the user is not a failure. */
const isDown = (
  s: State.StatusSnapshot
): s is State.StatusSnapshot & { readonly lastError: typeof State.ErrorSummary.Type } =>
  s.lastError !== undefined && !State.isUsable(s.state)

export interface Options {
  /** How long a check waits for the toolsets it restarts (default 5 seconds). */
  readonly wait?: Duration.Input | undefined
}

/** Starts watching a registry. A reprobe still running when the scope closes is interrupted. */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<Reprobe, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const wait = options.wait ?? Duration.seconds(5)
    const streaks = new Set<string>()
    /** At most one reprobe at a time: a check that finds one still running waits for that one. */
    let running: Fiber.Fiber<ToolsetRegistry.ReprobeReport> | undefined
    const reprobe = Effect.gen(function* () {
      const fiber =
        running !== undefined && running.pollUnsafe() === undefined
          ? running
          : yield* Effect.forkIn(registry.reprobe, scope)
      running = fiber
      yield* Effect.timeoutOption(Fiber.await(fiber), wait)
    })
    const check = Effect.gen(function* () {
      const before = yield* registry.snapshot
      if (before.some((s) => isDown(s) && State.isTerminal(s.state))) yield* reprobe
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
    return { check }
  })
