/**
 * What a Supervisor's actor holds, by the ids `Phase` gives them: connects in flight (each with
 * its startup deadline), the live session and the fibers that watch it, and backoff timers. The
 * actor runs `Phase` commands on it synchronously; nothing here decides anything and nothing here
 * waits: work that waits (a connect, a timer, the end of a session) runs in a fiber of its own and
 * reports back through `post`. Every such fiber belongs to the Supervisor's `FiberSet` (the host's
 * `fork`), so closing its scope interrupts whatever is left: that is the runtime's guarantee, not
 * this module's bookkeeping. The maps here only index connects by id. Closing is done in the
 * background, so a server slow to die never delays a transition; every close is also in the
 * `closing` set, a new connect waits for it to empty (never two servers of one toolset at once),
 * and `stop` and the finalizer await it.
 *
 * Classes rather than closures: a supervisor is created by the thousand, and what one holds
 * should cost a few objects, not a closure per operation.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Classify from "../Classify.ts"
import * as LifecycleError from "../LifecycleError.ts"
import * as Policy from "../Policy.ts"
import * as ServerProcess from "../ServerProcess.ts"
import type * as Session from "../Session.ts"
import * as Tracing from "../Tracing.ts"
import type * as Phase from "./phase.ts"

/** How a session ended, as requests that were in flight on it see it. */
export type Lost = LifecycleError.ServerCrashed | LifecycleError.NotStarted

/**
 * The session a request sent outside the runtime goes to (`Supervisor.liveNow`). Such a request
 * races the session's end itself when the session's requests do not fail when it dies: `onEnd`
 * registers a listener for how it ended and returns its removal; it is undefined for sessions
 * that bound their own requests (`selfBounded`).
 */
export interface Now<A> {
  readonly handle: A
  readonly onEnd: ((listener: (lost: Lost) => void) => () => void) | undefined
}

/** The established session and the fibers that watch it. */
export class Live<A> {
  /** Failed when the session ends, so requests in flight fail at once instead of hanging. */
  readonly closed = Deferred.makeUnsafe<never, Lost>()
  /** The same end, for requests in flight outside the runtime; made by the first of them. */
  private listeners: Set<(lost: Lost) => void> | undefined
  private cachedNow: Now<A> | undefined

  readonly id: number
  readonly session: Session.Session<A>
  readonly scope: Scope.Closeable
  readonly watchers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>

  constructor(
    id: number,
    session: Session.Session<A>,
    scope: Scope.Closeable,
    watchers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>
  ) {
    this.id = id
    this.session = session
    this.scope = scope
    this.watchers = watchers
  }

  get now(): Now<A> {
    this.cachedNow ??= {
      handle: this.session.handle,
      onEnd: this.session.selfBounded === true ? undefined : (listener) => this.onEnd(listener)
    }
    return this.cachedNow
  }

  private onEnd(listener: (lost: Lost) => void): () => void {
    this.listeners ??= new Set()
    const listeners = this.listeners
    listeners.add(listener)
    return () => listeners.delete(listener)
  }

  /** Tells everything in flight on the session how it ended. */
  end(error: Lost): void {
    Deferred.doneUnsafe(this.closed, Exit.fail(error))
    if (this.listeners !== undefined) for (const listener of this.listeners) listener(error)
  }
}

/**
 * A connect in flight (or finished, waiting to be taken), with its startup deadline, and what its
 * fiber learnt, filled in before it reports. The fiber outlives the connect: once connected, it
 * waits for the session's end, so a live session costs no other fiber to watch.
 */
class Connect<A> {
  readonly id: number
  readonly scope = Scope.makeUnsafe()
  fiber: Fiber.Fiber<void> | undefined
  deadline: Fiber.Fiber<void> | undefined
  connected = false
  session: Session.Session<A> | undefined
  /** The server process, once spawned: shown while the handshake runs. */
  pid: number | undefined

  constructor(id: number) {
    this.id = id
  }
}

/** What the resources report to, and what they are for: the Supervisor's actor. */
export interface Host<A> {
  readonly name: string
  readonly kind: string
  readonly connector: Session.Connector<A>
  readonly policy: Policy.Policy
  /** Whether a tracer is installed: then each connect takes a span. */
  readonly traced: boolean
  /**
   * Starts a fiber with the Supervisor's services in its `FiberSet`; it runs at once, up to its
   * first wait, and is interrupted when the Supervisor's scope closes, if it still runs then.
   */
  readonly fork: <X>(effect: Effect.Effect<X>) => Fiber.Fiber<X>
  /** Reports back to the actor. */
  post(message: Phase.Message): void
  /** Queues a completion for the actor to run once the new snapshot is published. */
  notify(notice: () => void): void
  /** The episode's counters, for the connect's span. */
  counters(): { readonly attempt: number; readonly restarts: number }
}

/** The commands that act on resources (the rest are the actor's own). */
export type Command = Exclude<Phase.Command, { readonly _tag: "Settle" | "Warn" }>

export class Sessions<A> {
  private readonly connects = new Map<number, Connect<A>>()
  /** The backoff timer: the phase holds one at most. Dropped once it fires. */
  private timer: { readonly id: number; readonly fiber: Fiber.Fiber<void> } | undefined
  private current: Live<A> | undefined
  private ended: { readonly handle: A; readonly error: Lost } | undefined

  private readonly host: Host<A>
  /** The closes in flight: also in the host's set, and awaited before a connect and by `closed`. */
  private readonly closing: FiberSet.FiberSet<void>

  constructor(host: Host<A>, closing: FiberSet.FiberSet<void>) {
    this.host = host
    this.closing = closing
  }

  live(): Live<A> | undefined {
    return this.current
  }

  /** The session of a connect that finished but is not live (a parked one). */
  connected(id: number): Session.Session<A> | undefined {
    return this.connects.get(id)?.session
  }

  /** The pid of a connect's server: its session's, or the process it spawned while it connects. */
  pidOf(id: number): number | undefined {
    const connect = this.connects.get(id)
    return connect?.session?.pid ?? connect?.pid
  }

  /** The last session that ended, so a request that saw it die late still learns how. */
  lastEnded(): { readonly handle: A; readonly error: Lost } | undefined {
    return this.ended
  }

  run(command: Command): void {
    switch (command._tag) {
      case "Connect":
        this.open(command.id)
        break
      case "ArmStartup": {
        const connect = this.connects.get(command.id)
        if (connect !== undefined) this.armStartup(connect)
        break
      }
      case "Discard":
        this.discard(command.id)
        break
      case "GoLive":
        this.goLive(command.id, command.stable)
        break
      case "EndLive":
        this.endLive(command.error)
        break
      case "Backoff":
        this.backoff(command.id, command.attempt)
        break
      case "CancelBackoff":
        this.cancelBackoff(command.id)
        break
      case "ReleaseAll":
        this.release(() => command.error)
        break
    }
  }

  /**
   * Releases everything (the Supervisor's finalizer); the closes are awaited by `closed`.
   * `error`, built only when a session is live, is what requests in flight on it get.
   */
  release(error: () => LifecycleError.NotStarted): void {
    if (this.timer !== undefined) this.cancelBackoff(this.timer.id)
    for (const id of Array.from(this.connects.keys())) this.discard(id)
    if (this.current !== undefined) this.endLive(error())
  }

  /** Completes once every close started so far, and any started meanwhile, is done. */
  closed(): Effect.Effect<void> {
    return FiberSet.awaitEmpty(this.closing)
  }

  private closeLater(close: Effect.Effect<void>): void {
    FiberSet.addUnsafe(this.closing, this.host.fork(close))
  }

  /** Runs `work`, then posts `message` — unless the fiber was interrupted first. */
  private report(work: Effect.Effect<void>, message: Phase.Message): Fiber.Fiber<void> {
    return this.host.fork(
      Effect.andThen(
        work,
        Effect.sync(() => this.host.post(message))
      )
    )
  }

  private errorOf(exit: Exit.Exit<unknown, unknown>): LifecycleError.LifecycleError | undefined {
    return Exit.isSuccess(exit) ? undefined : Classify.classify(this.host.name, causeOf(exit))
  }

  private armStartup(connect: Connect<A>): void {
    const timeout = this.host.policy.startupTimeout
    connect.deadline?.interruptUnsafe()
    connect.deadline =
      timeout === undefined ? undefined : this.report(Effect.sleep(timeout), { _tag: "StartupTimeout", id: connect.id })
  }

  /**
   * Reports the end of the session of connect `id`, live or parked (a parked session that ended
   * is let go, never adopted). It yields first, so a request that failed with the same event (a
   * 401, a closed pipe) ends with its own error rather than with "session ended while the
   * request was in flight".
   */
  private watchEnd(id: number, session: Session.Session<A>): Effect.Effect<void> {
    return Effect.flatMap(Effect.exit(session.ended), (exit) =>
      Effect.andThen(
        Effect.yieldNow,
        Effect.sync(() => this.host.post({ _tag: "Ended", id, error: this.errorOf(exit) }))
      )
    )
  }

  private open(id: number): void {
    const host = this.host
    const connect = new Connect<A>(id)
    const spawned = (pid: number) => {
      connect.pid = pid
      host.post({ _tag: "Spawned", id })
    }
    // Never two servers of one toolset at once: wait for earlier closes, if any.
    const provided = Scope.provide(
      Effect.andThen(this.closed(), Effect.provideService(host.connector.connect, ServerProcess.Spawned, spawned)),
      connect.scope
    )
    const traced = host.traced
      ? Tracing.span("toolvisor.connect", {
          attributes: () => ({ toolset: host.name, kind: host.kind, ...host.counters() })
        })(provided)
      : provided
    this.connects.set(id, connect)
    connect.fiber = host.fork(
      Effect.flatMap(Effect.exit(traced), (exit) => {
        connect.connected = true
        if (Exit.isSuccess(exit)) connect.session = exit.value
        host.post({ _tag: "Connected", id, error: this.errorOf(exit) })
        return Exit.isSuccess(exit) ? this.watchEnd(id, exit.value) : Effect.void
      })
    )
    // A connect that finished as it was opened needs no deadline.
    if (!connect.connected) this.armStartup(connect)
  }

  private discard(id: number): void {
    const connect = this.connects.get(id)
    if (connect === undefined) return
    this.connects.delete(id)
    connect.deadline?.interruptUnsafe()
    const fiber = connect.fiber
    const close = Scope.close(connect.scope, Exit.void)
    this.closeLater(fiber === undefined ? close : Effect.andThen(Fiber.interrupt(fiber), close))
  }

  private probeLoop(id: number, probe: Effect.Effect<void, LifecycleError.LifecycleError>, health: Policy.Health) {
    const name = this.host.name
    return Effect.sleep(health.interval).pipe(
      Effect.andThen(
        probe.pipe(
          Effect.timeoutOrElse({
            duration: health.timeout,
            orElse: () =>
              Effect.fail(
                new LifecycleError.CallTimeout({
                  toolset: name,
                  message: `${name}: health probe did not answer within ${Duration.format(health.timeout)}`,
                  afterMillis: Duration.toMillis(health.timeout)
                })
              )
          }),
          Effect.catchDefect((defect) => Effect.fail(Classify.classify(name, defect))),
          Effect.exit
        )
      ),
      Effect.flatMap((exit) => Effect.sync(() => this.host.post({ _tag: "Probed", id, error: this.errorOf(exit) }))),
      Effect.forever
    )
  }

  /**
   * The session's fields are read before anything changes: a session that throws on one (a
   * defect) leaves its connect where `release` finds and closes it.
   */
  private goLive(id: number, stable: boolean): void {
    const { host } = this
    const connect = this.connects.get(id)
    const session = connect?.session
    if (connect?.fiber === undefined || session === undefined) throw new Error(`${host.name}: no session for ${id}`)
    const { toolCountChanges, probe } = session
    this.connects.delete(id)
    connect.deadline?.interruptUnsafe()
    const watchers: Array<Fiber.Fiber<unknown, unknown>> = [connect.fiber]
    if (stable) watchers.push(this.report(Effect.sleep(host.policy.backoff.resetAfter), { _tag: "Stable", id }))
    if (toolCountChanges !== undefined) {
      watchers.push(
        host.fork(
          Stream.runForEach(toolCountChanges, (count) => Effect.sync(() => host.post({ _tag: "ToolCount", id, count })))
        )
      )
    }
    if (host.policy.health !== undefined && probe !== undefined) {
      watchers.push(host.fork(this.probeLoop(id, probe, host.policy.health)))
    }
    this.current = new Live(id, session, connect.scope, watchers)
  }

  private endLive(error: Lost): void {
    const current = this.current
    if (current === undefined) return
    this.current = undefined
    this.ended = { handle: current.session.handle, error }
    this.host.notify(() => current.end(error))
    for (const watcher of current.watchers) watcher.interruptUnsafe()
    this.closeLater(Scope.close(current.scope, Exit.void))
  }

  /** A backoff timer is held only while it runs: a toolset that crashes all day keeps none. */
  private backoff(id: number, attempt: number): void {
    const wait = Effect.flatMap(Policy.delay(this.host.policy, attempt), Effect.sleep)
    const fiber = this.report(wait, { _tag: "BackoffElapsed", id })
    if (fiber.pollUnsafe() !== undefined) return
    const timer = { id, fiber }
    this.timer = timer
    fiber.addObserver(() => {
      if (this.timer === timer) this.timer = undefined
    })
  }

  private cancelBackoff(id: number): void {
    if (this.timer?.id !== id) return
    this.timer.fiber.interruptUnsafe()
    this.timer = undefined
  }
}

const causeOf = <A>(exit: Exit.Exit<A, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  if (reason === undefined) return exit.cause
  return reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : exit.cause
}
