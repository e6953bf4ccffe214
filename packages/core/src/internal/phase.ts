/**
 * The Supervisor's state machine, as data. A `Phase` holds exactly what is valid in it — a
 * backoff timer exists only in `Backoff`, a live session only in `Live` — and the `Machine` adds
 * the counters a snapshot shows. `Transitions.transition` maps a machine and a `Message` to the next
 * machine and the `Command`s to run; the actor (`internal/actor.ts`) owns the resources those
 * commands name (connects, the live session, timers) by id, and never decides anything itself.
 */
import type * as Deferred from "effect/Deferred"
import type * as LifecycleError from "../LifecycleError.ts"
import type * as Policy from "../Policy.ts"
import type * as State from "../State.ts"
import type * as Transitions from "./transitions.ts"

/** A late first connect kept while Stopped, for the next start to adopt instead of opening another. */
export interface Parked {
  readonly id: number
  readonly done: boolean
}

export type Phase =
  | { readonly _tag: "Stopped"; readonly parked: Parked | undefined }
  | { readonly _tag: "Failed" }
  /** A first start: its connect, and whether a failure backs off and retries (optional toolsets). */
  | { readonly _tag: "Starting"; readonly connect: number; readonly retry: boolean }
  | { readonly _tag: "Live"; readonly session: number; readonly probeFailures: number }
  | { readonly _tag: "Backoff"; readonly timer: number }
  | { readonly _tag: "Reconnecting"; readonly connect: number }

/** A reply to `start`/`restart`: completed once the toolset is Ready or cannot become Ready. */
export type Reply = Deferred.Deferred<void, LifecycleError.LifecycleError>

export type Message =
  | { readonly _tag: "Start"; readonly reply: Reply }
  | { readonly _tag: "Restart"; readonly reply: Reply }
  | { readonly _tag: "Stop" }
  | { readonly _tag: "Connected"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "StartupTimeout"; readonly id: number }
  /** The session ended by itself (`error` undefined: a clean close), or a request proved it lost. */
  | { readonly _tag: "Ended"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "BackoffElapsed"; readonly id: number }
  | { readonly _tag: "Probed"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "Stable"; readonly id: number }
  | { readonly _tag: "ToolCount"; readonly id: number; readonly count: number }
  /** The connect's server process is up (its pid is in `Sessions`), though the handshake may not be. */
  | { readonly _tag: "Spawned"; readonly id: number }
  /** Handling a message hit a defect (`error` holds it as its cause): the toolset must not wedge. */
  | { readonly _tag: "Defect"; readonly error: LifecycleError.NotStarted }

/** What the actor does for a transition, in order. Ids name the resources it holds. */
export type Command =
  /** Open a connect with this id, and arm its startup deadline. */
  | { readonly _tag: "Connect"; readonly id: number }
  /** Re-arm the startup deadline of a connect already in flight (a start adopting it). */
  | { readonly _tag: "ArmStartup"; readonly id: number }
  /** Close a connect (in flight or parked) and its deadline; the close runs in the background. */
  | { readonly _tag: "Discard"; readonly id: number }
  /**
   * The connect's session becomes the live one: watch its end, its tool count, its health, and,
   * when the episode has restarts to forgive (`stable`), how long it lasts.
   */
  | { readonly _tag: "GoLive"; readonly id: number; readonly stable: boolean }
  /** Close the live session; requests in flight on it fail with `error`. */
  | { readonly _tag: "EndLive"; readonly error: LifecycleError.ServerCrashed | LifecycleError.NotStarted }
  /** Wait `Policy.delay(attempt)`, then post `BackoffElapsed` with this id. */
  | { readonly _tag: "Backoff"; readonly id: number; readonly attempt: number }
  | { readonly _tag: "CancelBackoff"; readonly id: number }
  /** Answer every waiting `start`/`restart` (`waiters`, taken off the machine). */
  | {
      readonly _tag: "Settle"
      readonly waiters: ReadonlyArray<Reply>
      readonly exit: "ready" | LifecycleError.LifecycleError
    }
  | { readonly _tag: "Warn"; readonly message: string }
  /**
   * Close everything held — connects, the live session, timers — whatever the phase says: after
   * a defect, what is held may not be what the phase names. Requests in flight fail with `error`.
   */
  | { readonly _tag: "ReleaseAll"; readonly error: LifecycleError.NotStarted }

/** Everything the actor knows besides resources: the phase and the counters a snapshot shows. */
export interface Machine {
  readonly phase: Phase
  /** Reconnects since the toolset was last started from Stopped or Failed. */
  readonly restarts: number
  /** Position in the current restart episode; back to 0 once Ready has lasted `reset_after`. */
  readonly attempt: number
  readonly error: LifecycleError.LifecycleError | undefined
  /** The live session's tool count as re-listed; undefined: what the session gave at handshake. */
  readonly toolCount: number | undefined
  readonly toolsVersion: number
  readonly waiters: ReadonlyArray<Reply>
  readonly nextId: number
}

export const initial: Machine = {
  phase: { _tag: "Stopped", parked: undefined },
  restarts: 0,
  attempt: 0,
  error: undefined,
  toolCount: undefined,
  toolsVersion: 0,
  waiters: [],
  nextId: 0
}

/** The state a snapshot shows for a machine. */
export const stateOf = (machine: Machine): State.State => {
  const phase = machine.phase
  switch (phase._tag) {
    case "Stopped":
    case "Failed":
    case "Starting":
      return phase._tag
    case "Live":
      return phase.probeFailures > 0 ? "Degraded" : "Ready"
    case "Backoff":
    case "Reconnecting":
      return "Restarting"
  }
}

export interface Step {
  readonly machine: Machine
  readonly commands: ReadonlyArray<Command>
  /** The row of `Transitions.table` this step took. */
  readonly rule: Transitions.Rule
}

/** What a transition needs to know about the toolset besides its machine. */
export interface Settings {
  readonly name: string
  readonly policy: Policy.Policy
  /** The deadline error of a connect, built by the actor (it knows the configured duration). */
  readonly initTimeout: () => LifecycleError.InitTimeout
}
