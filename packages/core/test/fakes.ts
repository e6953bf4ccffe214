/**
 * Hand-written fakes for the Supervisor's unit tests: a scripted connector that replays steps and
 * counts connects, and sessions a test can crash, close, or make unhealthy.
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as LifecycleError from "../src/LifecycleError.ts"
import * as Policy from "../src/Policy.ts"
import type * as Session from "../src/Session.ts"
import type * as State from "../src/State.ts"
import type * as Supervisor from "../src/Supervisor.ts"

export interface FakeSession {
  readonly id: number
  /** Tool counts the session reports after its start. */
  readonly toolCounts: Queue.Queue<number>
  readonly ended: Deferred.Deferred<void, LifecycleError.LifecycleError>
  /** Set when the session's scope was closed. */
  closed: boolean
  /** What the next probes return. */
  probe: Exit.Exit<void, LifecycleError.LifecycleError> | "hang"
}

export type Step =
  | { readonly _tag: "ok" }
  | { readonly _tag: "fail"; readonly error: LifecycleError.LifecycleError }
  /** The connect waits for the gate, then yields a session. */
  | { readonly _tag: "gate"; readonly gate: Deferred.Deferred<void> }
  /** The connect never finishes, and closing it takes `close` (a server slow to die). */
  | { readonly _tag: "stuck"; readonly close: Duration.Input; readonly closed: Deferred.Deferred<void> }

export const ok: Step = { _tag: "ok" }
export const fail = (error: LifecycleError.LifecycleError): Step => ({ _tag: "fail", error })

export const crash = (message = "boom") =>
  new LifecycleError.ServerCrashed({ toolset: "fake", message, exitCode: 1, signal: null })
export const refused = () => new LifecycleError.ServerUnavailable({ toolset: "fake", message: "connection refused" })
export const auth = () => new LifecycleError.AuthRequired({ toolset: "fake", message: "invalid_token" })

export interface Scripted {
  readonly connector: Session.Connector<FakeSession>
  readonly sessions: Array<FakeSession>
  /** Connects started so far. */
  readonly connects: () => number
  /** The newest session. */
  readonly last: () => FakeSession
}

/** Replays `steps` for successive connects; once they run out, every connect succeeds. */
export const scripted = (...steps: ReadonlyArray<Step>): Scripted => scriptedWith({}, ...steps)

/** `scripted`, with sessions that declare `selfBounded` requests when asked to. */
export const scriptedWith = (options: { readonly selfBounded?: boolean }, ...steps: ReadonlyArray<Step>): Scripted => {
  const sessions: Array<FakeSession> = []
  let connects = 0
  const open = Effect.gen(function* () {
    const session: FakeSession = {
      id: sessions.length + 1,
      ended: yield* Deferred.make<void, LifecycleError.LifecycleError>(),
      closed: false,
      probe: Exit.void,
      toolCounts: yield* Queue.unbounded<number>()
    }
    sessions.push(session)
    yield* Effect.addFinalizer(() => Effect.sync(() => (session.closed = true)))
    const probe = Effect.suspend(() => (session.probe === "hang" ? Effect.never : session.probe))
    return {
      handle: session,
      ended: Deferred.await(session.ended),
      probe,
      pid: 1000 + session.id,
      server: { name: "fake-server", version: "1.2.3" },
      instructions: "Use the fake tools wisely.",
      toolCount: 3,
      toolCountChanges: Stream.fromQueue(session.toolCounts),
      ...(options.selfBounded === undefined ? {} : { selfBounded: options.selfBounded })
    } satisfies Session.Session<FakeSession>
  })
  const connect = Effect.suspend(() => {
    const step = steps[connects] ?? ok
    connects += 1
    switch (step._tag) {
      case "ok":
        return open
      case "fail":
        return Effect.fail(step.error)
      case "gate":
        return Deferred.await(step.gate).pipe(Effect.andThen(open))
      case "stuck":
        return Effect.addFinalizer(() =>
          Effect.andThen(Effect.sleep(step.close), Deferred.succeed(step.closed, undefined))
        ).pipe(Effect.andThen(Effect.never))
    }
  })
  return {
    connector: { connect },
    sessions,
    connects: () => connects,
    last: () => {
      const session = sessions.at(-1)
      if (session === undefined) throw new Error("no session was opened")
      return session
    }
  }
}

/** Waits, without sleeping, until the supervisor's snapshot satisfies `p`. */
export const until = <A>(supervisor: Supervisor.Supervisor<A>, p: (s: State.StatusSnapshot) => boolean) =>
  supervisor.changes.pipe(Stream.filter(p), Stream.runHead, Effect.map(Option.getOrThrow))

export const inState = <A>(supervisor: Supervisor.Supervisor<A>, state: State.State) =>
  until(supervisor, (s) => s.state === state)

/**
 * Moves the TestClock forward one second at a time, so timers that the supervisor arms while
 * the clock moves (the next backoff, a reconnect's deadline) fire too.
 */
export const elapse = (seconds: number) =>
  Effect.forEach(Array.from({ length: seconds }), () => TestClock.adjust("1 second"), { discard: true })

/** A resilient policy with the fields a test cares about changed, written as in a config file. */
export const policy = (overrides: typeof Policy.Lifecycle.Encoded = {}): Policy.Policy =>
  Policy.fromLifecycleUnknownSync(overrides)
