/**
 * One actor per toolset. It takes messages (start, stop, restart; connect done, session ended,
 * timer fired, probe result) one at a time, asks `Phase.transition` what follows, and runs the
 * commands it returns on the resources it holds (`internal/sessions.ts`): decisions live in
 * `Phase.ts`. This module publishes the status other fibers read and runs requests on the live
 * session. Handling a message never waits, so the actor needs no fiber or mailbox of its own: a
 * message is handled when it is posted, or right after the one being handled. Long waits run in
 * fibers that report back with the id of their work, so a report about superseded work is
 * ignored by the transition.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
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
   */
  readonly use: <B, E, R>(f: (handle: A) => Effect.Effect<B, E, R>) => Effect.Effect<B, E | UseError, R>
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

/** What other fibers read: the snapshot, and the session to run requests on. */
interface View<A> {
  readonly status: State.StatusSnapshot
  readonly live: Sessions.Live<A> | undefined
}

/** One published snapshot, and the state it left when it is a transition. */
interface Published {
  readonly status: State.StatusSnapshot
  readonly from: State.State | undefined
  /** The `events` element, built once, by the first subscriber that needs it. */
  transition?: State.Transition
}

const isTransition = (published: Published): published is Published & { readonly from: State.State } =>
  published.from !== undefined

/** Creates a supervisor in the current scope; closing the scope stops it and everything it started. */
export const make = <A>(options: Options<A>): Effect.Effect<Supervisor<A>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, connector } = options
    const policy = options.policy ?? Policy.defaults
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    /** Every snapshot, the newest replayed to each new subscriber: `changes`, `events` and waiters. */
    const hub = yield* PubSub.unbounded<Published>({ replay: 1 })
    let view: View<A> = {
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
    }
    PubSub.publishUnsafe(hub, { status: view.status, from: undefined })
    const clock = yield* Clock.Clock
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

    // The actor: messages are handled one at a time, to the end, in the order they were posted.
    // Handling never waits, so a message posted while one is being handled (by a fiber the
    // handling started or resumed) is queued and handled right after it.
    let machine = Phase.initial
    /** Each message, and what to do once it is handled and its snapshot published (`stop`'s wait). */
    const inbox: Array<readonly [Phase.Message, (() => void) | undefined]> = []
    let handling = false
    /** Set by the finalizer: from then on nothing is handled. */
    let closed = false
    /** Replies and failures of requests in flight, sent once the new snapshot is published. */
    let notices: Array<() => void> = []

    const post = (message: Phase.Message, after?: () => void): boolean => {
      if (closed) return false
      inbox.push([message, after])
      if (handling) return true
      handling = true
      try {
        for (let next = inbox.shift(); next !== undefined && !closed; next = inbox.shift()) handle(...next)
      } finally {
        handling = false
      }
      return true
    }

    const sessions = Sessions.make<A>({
      name,
      kind: options.kind,
      connector,
      policy,
      fork,
      post,
      notify: (notice) => notices.push(notice),
      counters: () => ({ attempt: machine.attempt, restarts: machine.restarts })
    })

    const run = (command: Phase.Command): void => {
      switch (command._tag) {
        case "Settle": {
          const exit = command.exit === "ready" ? Exit.void : Exit.fail(command.exit)
          for (const reply of command.waiters) notices.push(() => Deferred.doneUnsafe(reply, exit))
          return
        }
        case "Warn":
          fork(Effect.logWarning(command.message))
          return
        case "GoLive":
          sessions.run(command)
          machine = { ...machine, toolCount: sessions.live()?.session.toolCount }
          return
        default:
          sessions.run(command)
      }
    }

    /** Publishes the machine's snapshot; a change of state is also a transition on `events`. */
    const publish = () => {
      const previous = view.status
      const state = Phase.stateOf(machine)
      const live = sessions.live()
      const current = live !== undefined && State.isUsable(state) ? live : undefined
      const session = current?.session
      const error = machine.error
      const toolCount = current === undefined ? undefined : machine.toolCount
      // Most messages change nothing a reader sees: no snapshot is built for them.
      if (
        previous.state === state &&
        previous.restarts === machine.restarts &&
        previous.attempt === machine.attempt &&
        previous.toolsVersion === machine.toolsVersion &&
        previous.toolCount === toolCount &&
        previous.pid === session?.pid &&
        previous.lastError?.tag === error?._tag &&
        previous.lastError?.message === error?.message
      ) {
        if (view.live !== current) view = { status: previous, live: current }
        return
      }
      const status = new State.StatusSnapshot({
        name,
        kind: options.kind,
        state,
        since: state === previous.state ? previous.since : clock.currentTimeMillisUnsafe(),
        restarts: machine.restarts,
        attempt: machine.attempt,
        ...State.errorFields(error),
        ...(session?.pid === undefined ? {} : { pid: session.pid }),
        ...(toolCount === undefined ? {} : { toolCount }),
        toolsVersion: machine.toolsVersion,
        ...(session?.server === undefined ? {} : { server: session.server }),
        ...(session?.instructions === undefined ? {} : { instructions: session.instructions })
      })
      view = { status, live: current }
      PubSub.publishUnsafe(hub, { status, from: previous.state === state ? undefined : previous.state })
    }

    const flushNotices = () => {
      const due = notices
      notices = []
      for (const notice of due) notice()
    }

    /** One message: the transition, its commands, the new snapshot — and only then the replies. */
    const handle = (message: Phase.Message, after: (() => void) | undefined) => {
      if (after !== undefined) notices.push(after)
      try {
        const step = Phase.transition(context, machine, message)
        machine = step.machine
        for (const command of step.commands) run(command)
        publish()
      } catch (defect) {
        // A defect in a handler is a bug, but it must not stop the actor and leave callers hanging.
        fork(Effect.logError(`${name}: supervisor bug handling ${message._tag}`, defect))
      }
      flushNotices()
    }

    // Finalizers run last-in first-out: this one runs before the scope closes anything else, so
    // it stops the actor, then releases what it held and answers everyone still waiting.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        // What was still queued is not handled; a `stop` waiting for its turn is answered.
        for (const [, after] of inbox.splice(0)) after?.()
        sessions.release(() => notStarted("supervisor closed while the request was in flight"))
        if (machine.waiters.length > 0) {
          const exit = Exit.fail(notStarted("supervisor closed"))
          for (const reply of machine.waiters) Deferred.doneUnsafe(reply, exit)
        }
        flushNotices()
        return Effect.andThen(sessions.closed, PubSub.shutdown(hub))
      })
    )

    function notStarted(message: string, cause?: LifecycleError.LifecycleError) {
      return new LifecycleError.NotStarted({ toolset: name, message: `${name}: ${message}`, cause })
    }

    const ask = (make: (reply: Phase.Reply) => Phase.Message) =>
      Effect.suspend(() => {
        const reply = Deferred.makeUnsafe<void, LifecycleError.LifecycleError>()
        return post(make(reply)) ? Deferred.await(reply) : Effect.fail(notStarted("supervisor closed"))
      })

    const settled = (): Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> => {
      if (view.live !== undefined) return Effect.succeed(view.live)
      if (closed) return Effect.fail(notStarted("supervisor closed"))
      const status = view.status
      const cause = machine.error
      return Effect.fail(
        notStarted(`not running (${status.state}${cause === undefined ? "" : `: ${cause.message}`})`, cause)
      )
    }

    const isSettled = () => closed || State.isUsable(view.status.state) || State.isTerminal(view.status.state)

    /**
     * The live session; reads the current view first, and subscribes only while starting or
     * restarting. The hub replays its newest snapshot, so nothing published between the first
     * look and the subscription is missed; the view is read again at each snapshot.
     */
    const awaitUsable: Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> = Effect.suspend(() =>
      isSettled()
        ? settled()
        : Stream.fromPubSub(hub).pipe(Stream.filter(isSettled), Stream.runHead, Effect.flatMap(settled))
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
          const current = view.live
          return current !== undefined
            ? onLive(current, f)
            : Effect.flatMap(bounded(awaitUsable), (ready) => onLive(ready, f))
        })
      )

    const lost = (handle: A, evidence?: LifecycleError.LifecycleError): Effect.Effect<Lost> =>
      Effect.suspend(() => {
        const current = view.live
        if (current !== undefined && current.session.handle === handle) {
          if (evidence !== undefined) post({ _tag: "Ended", id: current.id, error: evidence })
          return Effect.flip(Deferred.await(current.closed))
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
      stop: Effect.suspend(() => {
        const handled = Deferred.makeUnsafe<void>()
        return post({ _tag: "Stop" }, () => Deferred.doneUnsafe(handled, Exit.void))
          ? Effect.andThen(Deferred.await(handled), sessions.closed)
          : Effect.void
      }),
      awaitReady: Effect.asVoid(awaitUsable),
      state: Effect.sync(() => view.status),
      changes: Stream.map(Stream.fromPubSub(hub), (published) => published.status),
      events: Stream.fromPubSub(hub).pipe(
        Stream.drop(1),
        Stream.filter(isTransition),
        Stream.map((published) => {
          published.transition ??= new State.Transition({ from: published.from, snapshot: published.status })
          return published.transition
        })
      ),
      use,
      liveNow: () => view.live?.now,
      lost
    }
  })
