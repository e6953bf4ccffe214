/**
 * The Supervisor's actor (`Supervisor.ts` says what it does). A class, not a closure per
 * operation: supervisors are made by the thousand, and each should cost a few objects.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Types from "effect/Types"
import * as Deadline from "../Deadline.ts"
import * as LifecycleError from "../LifecycleError.ts"
import * as Policy from "../Policy.ts"
import type * as Session from "../Session.ts"
import * as State from "../State.ts"
import type * as Supervisor from "../Supervisor.ts"
import * as Tracing from "../Tracing.ts"
import * as Phase from "./phase.ts"
import * as Sessions from "./sessions.ts"
import * as Transitions from "./transitions.ts"

/** One published snapshot, and the transition it is when the state changed. */
interface Published {
  readonly status: State.StatusSnapshot
  readonly transition: State.Transition | undefined
}

const statusOf = (published: Published): State.StatusSnapshot => published.status

const transitionOf = (published: Published): State.Transition | undefined => published.transition

/** The replies a message carries, or a step owes: what a defect must still answer. */
const repliesOf = (source: Phase.Message | Phase.Step): ReadonlyArray<Phase.Reply> => {
  if ("commands" in source) {
    return source.commands.flatMap((command) => (command._tag === "Settle" ? command.waiters : []))
  }
  return source._tag === "Start" || source._tag === "Restart" ? [source.reply] : []
}

const startMessage = (reply: Phase.Reply): Phase.Message => ({ _tag: "Start", reply })
const restartMessage = (reply: Phase.Reply): Phase.Message => ({ _tag: "Restart", reply })

/** A supervisor in the current scope (`Supervisor.make`). */
export const make = <A>(options: Supervisor.Options<A>): Effect.Effect<Supervisor.Supervisor<A>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const hub = yield* PubSub.unbounded<Published>({ replay: 1 })
    // Every fiber the actor starts is in `fibers`, every close also in `closing`: when the scope
    // closes, the sets interrupt whatever still runs, after the actor's own finalizer.
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const closing = yield* FiberSet.make<void>()
    const fork = yield* FiberSet.runtime(fibers)<never>()
    const actor = new Actor(options, context, hub, fork, closing)
    // Finalizers run last-in first-out: this one runs before the scope closes anything else, so
    // it stops the actor, then releases what it held, awaits the closes and answers everyone
    // still waiting.
    yield* Effect.addFinalizer(() => actor.close())
    return actor
  })

/**
 * The actor: messages are handled one at a time, to the end, in the order they were posted.
 * Handling never waits, so a message posted while one is being handled (by a fiber the handling
 * started or resumed) is queued and handled right after it.
 */
class Actor<A> implements Supervisor.Supervisor<A>, Sessions.Host<A>, Phase.Settings {
  readonly name: string
  readonly kind: string
  readonly connector: Session.Connector<A>
  readonly policy: Policy.Policy
  readonly traced: boolean
  readonly fork: <X>(effect: Effect.Effect<X>) => Fiber.Fiber<X>
  private readonly clock: Clock.Clock
  /** Every snapshot, the newest replayed to each new subscriber: `changes`, `events` and waiters. */
  private readonly hub: PubSub.PubSub<Published>
  private readonly sessions: Sessions.Sessions<A>
  private machine = Phase.initial
  /** What other fibers read: the snapshot, and the session to run requests on while usable. */
  private status: State.StatusSnapshot
  private usable: Sessions.Live<A> | undefined
  /** The failure the last published snapshot carried: a new one while Restarting is a transition. */
  private announced: LifecycleError.LifecycleError | undefined
  /** Each message, and what to do once it is handled and its snapshot published (`stop`'s wait). */
  private readonly inbox: Array<readonly [Phase.Message, (() => void) | undefined]> = []
  private handling = false
  /** Set by the finalizer: from then on nothing is handled. */
  private closed = false
  /** Replies and failures of requests in flight, sent once the new snapshot is published. */
  private notices: Array<() => void> = []
  /** `call_timeout` in milliseconds: the deadline `use` sets when the caller set none. */
  private readonly callMillis: number | undefined

  constructor(
    options: Supervisor.Options<A>,
    context: Context.Context<never>,
    hub: PubSub.PubSub<Published>,
    fork: <X>(effect: Effect.Effect<X>) => Fiber.Fiber<X>,
    closing: FiberSet.FiberSet<void>
  ) {
    this.hub = hub
    this.name = options.name
    this.kind = options.kind
    this.connector = options.connector
    this.policy = options.policy ?? Policy.defaults
    this.traced = Tracing.isTraced(context)
    this.fork = fork
    this.clock = Context.get(context, Clock.Clock)
    this.sessions = new Sessions.Sessions(this, closing)
    this.callMillis = this.policy.callTimeout === undefined ? undefined : Duration.toMillis(this.policy.callTimeout)
    this.status = {
      name: this.name,
      kind: this.kind,
      state: "Stopped",
      since: this.clock.currentTimeMillisUnsafe(),
      restarts: 0,
      attempt: 0,
      toolsVersion: 0
    }
    PubSub.publishUnsafe(hub, { status: this.status, transition: undefined })
  }

  get start(): Effect.Effect<void, LifecycleError.LifecycleError> {
    return this.ask(startMessage)
  }

  get restart(): Effect.Effect<void, LifecycleError.LifecycleError> {
    return this.ask(restartMessage)
  }

  get stop(): Effect.Effect<void> {
    return Effect.suspend(() => {
      const handled = Deferred.makeUnsafe<void>()
      return this.post({ _tag: "Stop" }, () => Deferred.doneUnsafe(handled, Exit.void))
        ? Effect.andThen(Deferred.await(handled), this.sessions.closed())
        : Effect.void
    })
  }

  get awaitReady(): Effect.Effect<void, LifecycleError.NotStarted> {
    return Effect.asVoid(this.awaitUsable())
  }

  get state(): Effect.Effect<State.StatusSnapshot> {
    return Effect.sync(() => this.status)
  }

  get changes(): Stream.Stream<State.StatusSnapshot> {
    return Stream.map(Stream.fromPubSub(this.hub), statusOf)
  }

  get events(): Stream.Stream<State.Transition> {
    return Stream.fromPubSub(this.hub).pipe(
      Stream.drop(1),
      Stream.map(transitionOf),
      Stream.filter(Predicate.isNotUndefined)
    )
  }

  use<B, E, R>(
    f: (handle: A, deadline: Deadline.Deadline | undefined) => Effect.Effect<B, E, R>
  ): Effect.Effect<B, E | Supervisor.UseError, R> {
    return Effect.withFiber((fiber) => {
      const given = fiber.getRef(Deadline.Current)
      const deadline = given ?? (this.callMillis === undefined ? undefined : Deadline.after(this.callMillis))
      const current = this.usable
      const run =
        current !== undefined
          ? this.onLive(current, f, deadline)
          : Effect.flatMap(Deadline.boundTo(this.name, deadline, this.awaitUsable()), (ready) =>
              this.onLive(ready, f, deadline)
            )
      // A request that takes the deadline bounds itself by it; the others read it from the context.
      return given !== undefined || deadline === undefined || f.length >= 2
        ? run
        : Effect.provideService(run, Deadline.Current, deadline)
    })
  }

  liveNow(): Sessions.Now<A> | undefined {
    return this.usable?.now
  }

  lost(handle: A, evidence?: LifecycleError.LifecycleError): Effect.Effect<Sessions.Lost> {
    return Effect.suspend(() => {
      const current = this.usable
      if (current !== undefined && current.session.handle === handle) {
        if (evidence !== undefined) this.post({ _tag: "Ended", id: current.id, error: evidence })
        return Effect.flip(Deferred.await(current.closed))
      }
      const ended = this.sessions.lastEnded()
      return Effect.succeed(
        ended?.handle === handle
          ? ended.error
          : LifecycleError.notStarted(this.name, "the session was closed", this.machine.error)
      )
    })
  }

  /** Queues `message`, and handles it and any posted meanwhile unless a handling is under way. */
  post(message: Phase.Message, after?: () => void): boolean {
    if (this.closed) return false
    this.inbox.push([message, after])
    if (this.handling) return true
    this.handling = true
    try {
      for (let next = this.inbox.shift(); next !== undefined && !this.closed; next = this.inbox.shift()) {
        this.handle(next[0], next[1])
      }
    } finally {
      this.handling = false
    }
    return true
  }

  notify(notice: () => void): void {
    this.notices.push(notice)
  }

  counters(): { readonly attempt: number; readonly restarts: number } {
    return { attempt: this.machine.attempt, restarts: this.machine.restarts }
  }

  initTimeout(): LifecycleError.InitTimeout {
    const millis = this.policy.startupTimeout === undefined ? 0 : Duration.toMillis(this.policy.startupTimeout)
    return new LifecycleError.InitTimeout({
      toolset: this.name,
      // The commonest cause is a server slower than the default, not a broken one: say which setting.
      message:
        `${this.name}: did not connect within ${Duration.format(Duration.millis(millis))} (lifecycle.startup_timeout; ` +
        "a server that installs itself on its first start, as npx and uvx do, may need longer)",
      afterMillis: millis
    })
  }

  /** Stops the actor, releases what it held and answers everyone still waiting (the finalizer). */
  close(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.closed = true
      // What was still queued is not handled; a `stop` waiting for its turn is answered.
      for (const [, after] of this.inbox.splice(0)) after?.()
      this.sessions.release(() =>
        LifecycleError.notStarted(this.name, "supervisor closed while the request was in flight")
      )
      if (this.machine.waiters.length > 0) {
        const exit = Exit.fail(LifecycleError.notStarted(this.name, "supervisor closed"))
        for (const reply of this.machine.waiters) Deferred.doneUnsafe(reply, exit)
      }
      this.flushNotices()
      return Effect.andThen(this.sessions.closed(), PubSub.shutdown(this.hub))
    })
  }

  /**
   * One message: the transition, its commands, the new snapshot — and only then the replies. A
   * step's replies are queued only once all of its commands ran and its snapshot is published:
   * until then they are owed, and a defect on the way answers them (`recover`).
   */
  private handle(message: Phase.Message, after: (() => void) | undefined): void {
    if (after !== undefined) this.notices.push(after)
    let step: Phase.Step | undefined
    try {
      step = Transitions.transition(this, this.machine, message)
      this.machine = step.machine
      for (const command of step.commands) if (command._tag !== "Settle") this.run(command)
      this.publish()
      for (const command of step.commands) if (command._tag === "Settle") this.run(command)
    } catch (defect) {
      this.recover(message, defect, step === undefined ? repliesOf(message) : repliesOf(step))
    }
    this.flushNotices()
  }

  /**
   * A defect while handling `message` (a bug, or a session whose fields throw) must not wedge
   * the toolset: it goes to Failed with the defect as the cause, everything it held is released,
   * and every caller still owed an answer gets the error.
   */
  private recover(message: Phase.Message, defect: unknown, owed: ReadonlyArray<Phase.Reply>): void {
    const error = new LifecycleError.NotStarted({
      toolset: this.name,
      message: `${this.name}: supervisor defect while handling ${message._tag}: ${defect instanceof Error ? defect.message : String(defect)}`,
      cause: defect
    })
    const machine = owed.length === 0 ? this.machine : { ...this.machine, waiters: [...this.machine.waiters, ...owed] }
    const step = Transitions.transition(this, machine, { _tag: "Defect", error })
    this.machine = step.machine
    for (const command of step.commands) {
      try {
        this.run(command)
      } catch (again) {
        this.fork(Effect.logError(`${this.name}: releasing after a supervisor defect failed`, again))
      }
    }
    this.publish()
  }

  private run(command: Phase.Command): void {
    switch (command._tag) {
      case "Settle": {
        const exit = command.exit === "ready" ? Exit.void : Exit.fail(command.exit)
        for (const reply of command.waiters) this.notices.push(() => Deferred.doneUnsafe(reply, exit))
        return
      }
      case "Warn":
        this.fork(Effect.logWarning(command.message))
        return
      default:
        this.sessions.run(command)
    }
  }

  /** Publishes the machine's snapshot; a change of state is also a transition on `events`. */
  private publish(): void {
    const { machine } = this
    const previous = this.status
    const state = Phase.stateOf(machine)
    const live = this.sessions.live()
    const current = live !== undefined && State.isUsable(state) ? live : undefined
    this.usable = current
    const session = current?.session
    // Every process the toolset has is shown: the live session's, a connect's while its handshake
    // runs, and a parked one's, which runs on while Stopped, waiting for the next start.
    const pid = session !== undefined ? session.pid : this.pidOfConnect(machine.phase)
    const error = machine.error
    const toolCount = session === undefined ? undefined : (machine.toolCount ?? session.toolCount)
    // A reconnect that failed, to be tried again, is a transition too (Restarting → Restarting, the
    // table's row, with its failure), or a reader of `events` would hear nothing between the first
    // restart and Failed. Told by the failure itself: two in a row may read the same.
    const failedAgain =
      state === "Restarting" && previous.state === "Restarting" && error !== undefined && error !== this.announced
    // Most messages change nothing a reader sees: no snapshot is built for them.
    if (
      !failedAgain &&
      previous.state === state &&
      previous.restarts === machine.restarts &&
      previous.attempt === machine.attempt &&
      previous.toolsVersion === machine.toolsVersion &&
      previous.toolCount === toolCount &&
      previous.pid === pid &&
      previous.lastError?.tag === error?._tag &&
      previous.lastError?.message === error?.message
    ) {
      return
    }
    // Assigned key by key: a snapshot is made on every transition, and spreads would make several.
    const status: Types.Mutable<State.StatusSnapshot> = {
      name: this.name,
      kind: this.kind,
      state,
      // A failed reconnect re-enters Restarting: its transition is stamped with its own time.
      since: state === previous.state && !failedAgain ? previous.since : this.clock.currentTimeMillisUnsafe(),
      restarts: machine.restarts,
      attempt: machine.attempt,
      toolsVersion: machine.toolsVersion
    }
    if (error !== undefined) status.lastError = { tag: error._tag, message: error.message }
    if (pid !== undefined) status.pid = pid
    if (session !== undefined) {
      if (toolCount !== undefined) status.toolCount = toolCount
      if (session.server !== undefined) status.server = session.server
      if (session.instructions !== undefined) status.instructions = session.instructions
    }
    this.status = status
    this.announced = error
    const moved = previous.state !== state || failedAgain
    PubSub.publishUnsafe(this.hub, {
      status,
      transition: moved ? { from: previous.state, snapshot: status } : undefined
    })
  }

  private flushNotices(): void {
    const due = this.notices
    this.notices = []
    for (const notice of due) notice()
  }

  private ask(make: (reply: Phase.Reply) => Phase.Message): Effect.Effect<void, LifecycleError.LifecycleError> {
    return Effect.suspend(() => {
      const reply = Deferred.makeUnsafe<void, LifecycleError.LifecycleError>()
      return this.post(make(reply))
        ? Deferred.await(reply)
        : Effect.fail(LifecycleError.notStarted(this.name, "supervisor closed"))
    })
  }

  private settled(): Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> {
    if (this.usable !== undefined) return Effect.succeed(this.usable)
    if (this.closed) return Effect.fail(LifecycleError.notStarted(this.name, "supervisor closed"))
    const cause = this.machine.error
    return Effect.fail(
      LifecycleError.notStarted(
        this.name,
        `not running (${this.status.state}${cause === undefined ? "" : `: ${cause.message}`})`,
        cause
      )
    )
  }

  private isSettled(): boolean {
    return this.closed || State.isUsable(this.status.state) || State.isTerminal(this.status.state)
  }

  /**
   * The live session; reads the current view first, and subscribes only while starting or
   * restarting. The hub replays its newest snapshot, so nothing published between the first
   * look and the subscription is missed; the view is read again at each snapshot.
   */
  private awaitUsable(): Effect.Effect<Sessions.Live<A>, LifecycleError.NotStarted> {
    return Effect.suspend(() =>
      this.isSettled()
        ? this.settled()
        : Stream.fromPubSub(this.hub).pipe(
            Stream.filter(() => this.isSettled()),
            Stream.runHead,
            Effect.flatMap(() => this.settled())
          )
    )
  }

  private pidOfConnect(phase: Phase.Phase): number | undefined {
    switch (phase._tag) {
      case "Starting":
      case "Reconnecting":
        return this.sessions.pidOf(phase.connect)
      case "Stopped":
        return phase.parked === undefined ? undefined : this.sessions.pidOf(phase.parked.id)
      default:
        return undefined
    }
  }

  private onLive<B, E, R>(
    current: Sessions.Live<A>,
    f: (handle: A, deadline: Deadline.Deadline | undefined) => Effect.Effect<B, E, R>,
    deadline: Deadline.Deadline | undefined
  ) {
    const request = f(current.session.handle, deadline)
    return current.session.selfBounded === true
      ? request
      : Deadline.boundTo(this.name, deadline, Effect.raceFirst(request, Deferred.await(current.closed)))
  }
}
