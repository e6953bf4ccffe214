/**
 * One actor per toolset. A single fiber takes messages (start, stop, restart; connect done,
 * session ended, timer fired, probe result) from one queue, asks `Phase.transition` what follows,
 * and runs the commands it returns on the resources it holds (`internal/sessions.ts`): decisions
 * live in `Phase.ts`. This module publishes the status other fibers read and runs requests on the
 * live session. Long waits run in child fibers that report back with the id of their work, so a
 * report about superseded work is ignored by the transition.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Deadline from "./Deadline.ts"
import * as Sessions from "./internal/sessions.ts"
import * as LifecycleError from "./LifecycleError.ts"
import * as Phase from "./Phase.ts"
import * as Policy from "./Policy.ts"
import type * as Session from "./Session.ts"
import * as State from "./State.ts"

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
   */
  readonly use: <B, E, R>(f: (handle: A) => Effect.Effect<B, E, R>) => Effect.Effect<B, E | UseError, R>
  /**
   * A request on `handle` failed in a way that says the session is gone. With `evidence` (for
   * transports that may never notice by themselves) the actor ends that session as a crash with
   * this cause, once, counted like any crash; without it the actor's own end of session is
   * awaited. Either way it returns what the session ended with: the crash and its real cause.
   * A call never drives the lifecycle any further than that.
   */
  readonly lost: (handle: A, evidence?: LifecycleError.LifecycleError) => Effect.Effect<Lost>
}

/** What other fibers read: the snapshot, and the session to run requests on. */
interface View<A> {
  readonly status: State.StatusSnapshot
  readonly live: Sessions.Live<A> | undefined
}

type Envelope = { readonly message: Phase.Message; readonly stopped?: Deferred.Deferred<void> }

/** Creates a supervisor in the current scope; closing the scope stops it and everything it started. */
export const make = <A>(options: Options<A>): Effect.Effect<Supervisor<A>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, connector } = options
    const policy = options.policy ?? Policy.defaults
    const mailbox = yield* Queue.unbounded<Envelope>()
    const hub = yield* PubSub.unbounded<State.Transition>()
    const view = yield* SubscriptionRef.make<View<A>>({
      status: new State.StatusSnapshot({
        name,
        kind: options.kind,
        state: "Stopped",
        since: yield* Clock.currentTimeMillis,
        restarts: 0,
        attempt: 0,
        toolsVersion: 0
      }),
      live: undefined
    })
    const startupMillis = policy.startupTimeout === undefined ? 0 : Duration.toMillis(policy.startupTimeout)
    const context: Phase.Context = {
      name,
      policy,
      initTimeout: () =>
        new LifecycleError.InitTimeout({
          toolset: name,
          message: `${name}: did not connect within ${Duration.format(Duration.millis(startupMillis))}`,
          afterMillis: startupMillis
        })
    }

    // Touched only by the actor (and by the finalizer once the actor is gone).
    let machine = Phase.initial
    /** Replies and failures of requests in flight, sent once the new snapshot is published. */
    let notices: Array<Effect.Effect<unknown>> = []

    const post = (message: Phase.Message) => Queue.offer(mailbox, { message })
    const sessions = yield* Sessions.make<A>({
      name,
      kind: options.kind,
      connector,
      policy,
      post,
      notify: (effect) => notices.push(effect),
      counters: () => ({ attempt: machine.attempt, restarts: machine.restarts })
    })

    const run = (command: Phase.Command): Effect.Effect<void> => {
      switch (command._tag) {
        case "Settle": {
          const exit = command.exit === "ready" ? Exit.void : Exit.fail(command.exit)
          return Effect.sync(() => {
            for (const reply of command.waiters) notices.push(Deferred.done(reply, exit))
          })
        }
        case "Warn":
          return Effect.logWarning(command.message)
        case "GoLive":
          return Effect.andThen(
            sessions.run(command),
            Effect.sync(() => {
              machine = { ...machine, toolCount: sessions.live()?.session.toolCount }
            })
          )
        default:
          return sessions.run(command)
      }
    }

    /** Publishes the machine's snapshot; a change of state is also a transition on `events`. */
    const publish = Effect.gen(function* () {
      const before = yield* SubscriptionRef.get(view)
      const previous = before.status
      const state = Phase.stateOf(machine)
      const live = sessions.live()
      const current = live !== undefined && State.isUsable(state) ? live : undefined
      const session = current?.session
      const error = machine.error
      const toolCount = current === undefined ? undefined : machine.toolCount
      // Most messages change nothing a reader sees: no snapshot is built for them.
      if (
        before.live === current &&
        previous.state === state &&
        previous.restarts === machine.restarts &&
        previous.attempt === machine.attempt &&
        previous.toolsVersion === machine.toolsVersion &&
        previous.toolCount === toolCount &&
        previous.pid === session?.pid &&
        previous.lastError?.tag === error?._tag &&
        previous.lastError?.message === error?.message
      ) {
        return
      }
      const next = new State.StatusSnapshot({
        name,
        kind: options.kind,
        state,
        since: state === previous.state ? previous.since : yield* Clock.currentTimeMillis,
        restarts: machine.restarts,
        attempt: machine.attempt,
        ...State.errorFields(error),
        ...(session?.pid === undefined ? {} : { pid: session.pid }),
        ...(toolCount === undefined ? {} : { toolCount }),
        toolsVersion: machine.toolsVersion,
        ...(session?.server === undefined ? {} : { server: session.server }),
        ...(session?.instructions === undefined ? {} : { instructions: session.instructions })
      })
      yield* SubscriptionRef.set(view, { status: next, live: current })
      if (previous.state !== state)
        yield* PubSub.publish(hub, new State.Transition({ from: previous.state, snapshot: next }))
    })

    const flushNotices = Effect.suspend(() => {
      const due = notices
      notices = []
      return Effect.all(due, { discard: true })
    })

    /** One message: the transition, its commands, the new snapshot — and only then the replies. */
    const handle = ({ message, stopped }: Envelope) =>
      Effect.gen(function* () {
        const step = Phase.transition(context, machine, message)
        machine = step.machine
        yield* Effect.forEach(step.commands, run, { discard: true })
        yield* publish
        yield* flushNotices
        if (stopped !== undefined) {
          yield* sessions.closed
          yield* Deferred.succeed(stopped, undefined)
        }
      })

    const actor = yield* Queue.take(mailbox).pipe(
      Effect.flatMap((envelope) =>
        handle(envelope).pipe(
          // A defect in a handler is a bug, but it must not kill the actor and leave callers hanging.
          Effect.catchDefect((defect) =>
            Effect.logError(`${name}: supervisor bug handling ${envelope.message._tag}`, defect)
          ),
          Effect.uninterruptible
        )
      ),
      Effect.forever,
      Effect.forkScoped({ startImmediately: true })
    )

    // Finalizers run last-in first-out: this one runs before the scope interrupts anything, so it
    // stops the actor, then releases what it held and answers everyone still waiting.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* Fiber.interrupt(actor)
        yield* Queue.shutdown(mailbox)
        yield* sessions.release(notStarted("supervisor closed while the request was in flight"))
        const closed = Exit.fail(notStarted("supervisor closed"))
        yield* Effect.forEach(machine.waiters, (reply) => Deferred.done(reply, closed), { discard: true })
        yield* flushNotices
        yield* sessions.closed
        yield* PubSub.shutdown(hub)
      })
    )

    function notStarted(message: string, cause?: LifecycleError.LifecycleError) {
      return new LifecycleError.NotStarted({ toolset: name, message: `${name}: ${message}`, cause })
    }

    const ask = (make: (reply: Phase.Reply) => Phase.Message) =>
      Effect.gen(function* () {
        const reply = yield* Deferred.make<void, LifecycleError.LifecycleError>()
        if (!(yield* post(make(reply)))) return yield* notStarted("supervisor closed")
        return yield* Deferred.await(reply)
      })

    const settled = (current: View<A> | undefined): Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> => {
      if (current?.live !== undefined) return Effect.succeed(current.live)
      if (current === undefined) return Effect.fail(notStarted("supervisor closed"))
      const status = current.status
      const cause = machine.error
      return Effect.fail(
        notStarted(`not running (${status.state}${cause === undefined ? "" : `: ${cause.message}`})`, cause)
      )
    }

    const isSettled = (v: View<A>) => State.isUsable(v.status.state) || State.isTerminal(v.status.state)

    /** The live session; reads the current view first, and subscribes only while starting or restarting. */
    const awaitUsable: Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> = Effect.flatMap(
      SubscriptionRef.get(view),
      (now) =>
        isSettled(now)
          ? settled(now)
          : SubscriptionRef.changes(view).pipe(
              Stream.filter(isSettled),
              Stream.runHead,
              Effect.flatMap((found) => settled(found._tag === "Some" ? found.value : undefined))
            )
    )

    const callMillis = policy.callTimeout === undefined ? undefined : Duration.toMillis(policy.callTimeout)
    const withDeadline = Deadline.within(callMillis)
    const bounded = Deadline.bound(name)

    const onLive = <B, E, R>(current: Sessions.Live<A>, f: (handle: A) => Effect.Effect<B, E, R>) =>
      current.session.selfBounded === true
        ? f(current.session.handle)
        : bounded(Effect.raceFirst(f(current.session.handle), Deferred.await(current.closed)))

    const use = <B, E, R>(f: (handle: A) => Effect.Effect<B, E, R>): Effect.Effect<B, E | UseError, R> =>
      withDeadline(
        Effect.suspend(() => {
          const current = SubscriptionRef.getUnsafe(view).live
          return current !== undefined
            ? onLive(current, f)
            : Effect.flatMap(bounded(awaitUsable), (ready) => onLive(ready, f))
        })
      )

    const lost = (handle: A, evidence?: LifecycleError.LifecycleError): Effect.Effect<Lost> =>
      Effect.suspend(() => {
        const current = SubscriptionRef.getUnsafe(view).live
        if (current !== undefined && current.session.handle === handle) {
          const report = evidence === undefined ? Effect.void : post({ _tag: "Ended", id: current.id, error: evidence })
          return Effect.andThen(report, Effect.flip(Deferred.await(current.closed)))
        }
        const ended = sessions.lastEnded()
        return Effect.succeed(
          ended?.handle === handle ? ended.error : notStarted("the session was closed", machine.error)
        )
      })

    return {
      name,
      policy,
      start: ask((reply) => ({ _tag: "Start", reply })),
      restart: ask((reply) => ({ _tag: "Restart", reply })),
      stop: Effect.gen(function* () {
        const stopped = yield* Deferred.make<void>()
        if (yield* Queue.offer(mailbox, { message: { _tag: "Stop" }, stopped })) yield* Deferred.await(stopped)
      }),
      awaitReady: Effect.asVoid(awaitUsable),
      state: Effect.map(SubscriptionRef.get(view), (v) => v.status),
      changes: Stream.map(SubscriptionRef.changes(view), (v) => v.status),
      events: Stream.fromPubSub(hub),
      use,
      lost
    }
  })
