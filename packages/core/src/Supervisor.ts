/**
 * One actor per toolset. It takes messages (start, stop, restart; connect done, session ended,
 * timer fired, probe result) one at a time, asks `Lifecycle.transition` what follows, and runs the
 * commands it returns on the resources it holds: decisions live in `Lifecycle.ts`, the actor in
 * `internal/actor.ts`, its resources in `internal/sessions.ts`. It publishes the status other
 * fibers read and runs requests on the live session. Handling a message never waits, so the
 * actor needs no fiber or mailbox of its own: a message is handled when it is posted, or right
 * after the one being handled. Long waits run in fibers that report back with the id of their
 * work, so a report about superseded work is ignored by the transition.
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as Deadline from "./Deadline.ts"
import * as Actor from "./internal/actor.ts"
import type * as Sessions from "./internal/sessions.ts"
import type * as LifecycleError from "./LifecycleError.ts"
import type * as Policy from "./Policy.ts"
import type * as Session from "./Session.ts"
import type * as State from "./State.ts"

export interface Options<A> {
  readonly name: string
  /** Shown in status snapshots: "mcp", "lsp", … */
  readonly kind: string
  readonly connector: Session.Connector<A>
  readonly policy?: Policy.Policy
}

/** The errors a request run through `use` may add to its own. */
export type UseError = LifecycleError.NotStarted | LifecycleError.ServerCrashed | LifecycleError.CallTimeout

/** How a session ended, as requests that were in flight on it see it. */
export type Lost = Sessions.Lost

/** A session a request can be sent on at once (`liveNow`). */
export type Now<A> = Sessions.Now<A>

export interface Supervisor<A> {
  readonly name: string
  readonly policy: Policy.Policy
  /**
   * Connects and resolves when Ready. Idempotent. A failed first start returns its error; a
   * required toolset (or `restart: never`) is then Stopped, an optional one keeps trying by its
   * policy (Restarting) until Ready, Failed or stopped.
   */
  readonly start: Effect.Effect<void, LifecycleError.LifecycleError>
  /** Closes the session and any connect or retry in flight; idempotent; `start` works again afterwards. */
  readonly stop: Effect.Effect<void>
  /**
   * Forces a reconnect, bypassing the restart policy, and resolves when Ready — or fails as soon
   * as the toolset reaches a terminal state. From Stopped or Failed it starts afresh.
   */
  readonly restart: Effect.Effect<void, LifecycleError.LifecycleError>
  /** Waits until the toolset is usable; fails with `NotStarted` if it is or becomes terminal. */
  readonly awaitReady: Effect.Effect<void, LifecycleError.NotStarted>
  readonly state: Effect.Effect<State.StatusSnapshot>
  /** The current snapshot first, then every change. */
  readonly changes: Stream.Stream<State.StatusSnapshot>
  /** Every state transition from the moment of subscription, in order, none lost. */
  readonly events: Stream.Stream<State.Transition>
  /**
   * Runs a request on the live session under the call's deadline (`call_timeout` unless the
   * caller set one): waits for Ready while starting or restarting, fails at once when the
   * toolset is terminal or when the session dies mid-request. A session whose requests bound
   * themselves (`Session.selfBounded`) runs the request directly, at no extra cost.
   *
   * The request is given the deadline. One that does not take it (a function of one argument)
   * reads it as `Deadline.Current`; one that takes it is run with nothing added to its context —
   * every call passes here, and setting the context costs more than the request's own work.
   */
  readonly use: <B, E, R>(
    f: (handle: A, deadline: Deadline.Deadline | undefined) => Effect.Effect<B, E, R>
  ) => Effect.Effect<B, E | UseError, R>
  /**
   * The session `use` would run a request on at once, without waiting: the live one, when the
   * toolset is usable; `undefined` otherwise. For callers outside the Effect runtime that send the
   * request themselves, bound it by its deadline, race it with `onEnd` when the session does not
   * fail its requests itself, and report a failure through `lost`.
   */
  readonly liveNow: () => Now<A> | undefined
  /**
   * A request on `handle` failed in a way that says the session is gone. With `evidence` (for
   * transports that may never notice by themselves) the actor ends that session as a crash with
   * this cause, once, counted like any crash; without it the actor's own end of session is
   * awaited. Either way it returns what the session ended with: the crash and its real cause.
   * A call never drives the lifecycle any further than that.
   */
  readonly lost: (handle: A, evidence?: LifecycleError.LifecycleError) => Effect.Effect<Lost>
}

/** Creates a supervisor in the current scope; closing the scope stops it and everything it started. */
export const make: <A>(options: Options<A>) => Effect.Effect<Supervisor<A>, never, Scope.Scope> = Actor.make
