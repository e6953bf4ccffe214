/**
 * What a Supervisor's actor holds, by the ids `Phase` gives them: connects in flight (each with
 * its startup deadline), the live session and the fibers that watch it, and backoff timers. The
 * actor runs `Phase` commands on it synchronously; nothing here decides anything and nothing here
 * waits: work that waits (a connect, a timer, the end of a session) runs in a fiber of its own and
 * reports back through `post`. Closing is done in the background, so a server slow to die never
 * delays a transition; every close is tracked, a new connect waits for the earlier ones (never two
 * servers of one toolset at once), and `stop` and the finalizer await them.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Classify from "../Classify.ts"
import * as LifecycleError from "../LifecycleError.ts"
import type * as Phase from "../Phase.ts"
import * as Policy from "../Policy.ts"
import type * as Session from "../Session.ts"
import * as Tracing from "../Tracing.ts"

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
export interface Live<A> {
  readonly id: number
  readonly session: Session.Session<A>
  readonly scope: Scope.Closeable
  /** Failed when the session ends, so requests in flight fail at once instead of hanging. */
  readonly closed: Deferred.Deferred<never, Lost>
  /** The same end, for requests in flight outside the runtime; only sessions that are not `selfBounded` have them. */
  readonly ending: Set<(lost: Lost) => void> | undefined
  readonly now: Now<A>
  readonly watchers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>
}

/**
 * A connect in flight (or finished, waiting to be taken), with its startup deadline. Its fiber
 * outlives the connect: once connected, it waits for the session's end, so a live session costs
 * no other fiber to watch.
 */
interface Connect<A> {
  readonly scope: Scope.Closeable
  readonly fiber: Fiber.Fiber<void>
  readonly result: Result<A>
  deadline: Fiber.Fiber<void> | undefined
}

/** What the connect's fiber learnt, filled before it reports it. */
interface Result<A> {
  connected: boolean
  session: Session.Session<A> | undefined
  /** How the session ended, when it ended before it went live (it is reported then). */
  ended: { readonly error: LifecycleError.LifecycleError | undefined } | undefined
}

export interface Options<A> {
  readonly name: string
  readonly kind: string
  readonly connector: Session.Connector<A>
  readonly policy: Policy.Policy
  /** Starts a fiber with the Supervisor's services; it runs at once, up to its first wait. */
  readonly fork: <X>(effect: Effect.Effect<X>) => Fiber.Fiber<X>
  /** Reports back to the actor. */
  readonly post: (message: Phase.Message) => void
  /** Queues a completion for the actor to run once the new snapshot is published. */
  readonly notify: (notice: () => void) => void
  /** The episode's counters, for the connect's span. */
  readonly counters: () => { readonly attempt: number; readonly restarts: number }
}

/** The commands that act on resources (the rest are the actor's own). */
export type Command = Exclude<Phase.Command, { readonly _tag: "Settle" | "Warn" }>

export interface Sessions<A> {
  readonly live: () => Live<A> | undefined
  /** The last session that ended, so a request that saw it die late still learns how. */
  readonly lastEnded: () => { readonly handle: A; readonly error: Lost } | undefined
  readonly run: (command: Command) => void
  /**
   * Releases everything (the Supervisor's finalizer); the closes are awaited by `closed`.
   * `error`, built only when a session is live, is what requests in flight on it get.
   */
  readonly release: (error: () => LifecycleError.NotStarted) => void
  /** Completes once every close started so far, and any started meanwhile, is done. */
  readonly closed: Effect.Effect<void>
}

export const make = <A>(options: Options<A>): Sessions<A> => {
  const { name, policy, post, fork } = options
  const closing = new Set<Fiber.Fiber<void>>()
  const connects = new Map<number, Connect<A>>()
  const backoffs = new Map<number, Fiber.Fiber<void>>()
  let live: Live<A> | undefined
  let lastEnded: { readonly handle: A; readonly error: Lost } | undefined

  const closed: Effect.Effect<void> = Effect.suspend(() =>
    closing.size === 0 ? Effect.void : Effect.andThen(Fiber.awaitAll(Array.from(closing)), closed)
  )
  const closeLater = (close: Effect.Effect<void>) => {
    const fiber = fork(close)
    if (fiber.pollUnsafe() !== undefined) return
    closing.add(fiber)
    fiber.addObserver(() => closing.delete(fiber))
  }
  /** Runs `work`, then posts `message` — unless the fiber was interrupted first. */
  const report = (work: Effect.Effect<void>, message: Phase.Message) =>
    fork(
      Effect.andThen(
        work,
        Effect.sync(() => post(message))
      )
    )
  const errorOf = (exit: Exit.Exit<unknown, unknown>) =>
    Exit.isSuccess(exit) ? undefined : Classify.classify(name, causeOf(exit))

  const armStartup = (id: number, connect: Connect<A>) => {
    connect.deadline?.interruptUnsafe()
    connect.deadline =
      policy.startupTimeout === undefined
        ? undefined
        : report(Effect.sleep(policy.startupTimeout), { _tag: "StartupTimeout", id })
  }

  /**
   * Reports the end of the session of connect `id`: when it is live, else when it goes live. It
   * yields first, so a request that failed with the same event (a 401, a closed pipe) ends with
   * its own error rather than with "session ended while the request was in flight".
   */
  const watchEnd = (id: number, session: Session.Session<A>, result: Result<A>) =>
    Effect.flatMap(Effect.exit(session.ended), (exit) =>
      Effect.andThen(
        Effect.yieldNow,
        Effect.sync(() => {
          result.ended = { error: errorOf(exit) }
          if (live?.id === id) post({ _tag: "Ended", id, error: result.ended.error })
        })
      )
    )

  const open = (id: number) => {
    const scope = Scope.makeUnsafe()
    const result: Result<A> = { connected: false, session: undefined, ended: undefined }
    // Never two servers of one toolset at once: wait for earlier closes, if any.
    const connector = options.connector.connect
    const connect = Scope.provide(closing.size === 0 ? connector : Effect.andThen(closed, connector), scope)
    const traced = Tracing.span("toolvisor.connect", {
      attributes: () => ({ toolset: name, kind: options.kind, ...options.counters() })
    })(connect)
    const fiber = fork(
      Effect.flatMap(Effect.exit(traced), (exit) => {
        result.connected = true
        if (Exit.isSuccess(exit)) result.session = exit.value
        post({ _tag: "Connected", id, error: errorOf(exit) })
        return Exit.isSuccess(exit) ? watchEnd(id, exit.value, result) : Effect.void
      })
    )
    const opened: Connect<A> = { scope, fiber, result, deadline: undefined }
    connects.set(id, opened)
    // A connect that finished as it was opened needs no deadline.
    if (!result.connected) armStartup(id, opened)
  }

  const discard = (id: number) => {
    const connect = connects.get(id)
    if (connect === undefined) return
    connects.delete(id)
    connect.deadline?.interruptUnsafe()
    closeLater(Effect.andThen(Fiber.interrupt(connect.fiber), Scope.close(connect.scope, Exit.void)))
  }

  const probeLoop = (id: number, probe: Effect.Effect<void, LifecycleError.LifecycleError>, health: Policy.Health) =>
    Effect.sleep(health.interval).pipe(
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
      Effect.flatMap((exit) => Effect.sync(() => post({ _tag: "Probed", id, error: errorOf(exit) }))),
      Effect.forever
    )

  const goLive = (id: number, stable: boolean) => {
    const connect = connects.get(id)
    const session = connect?.result.session
    if (connect === undefined || session === undefined) throw new Error(`${name}: no session for ${id}`)
    connects.delete(id)
    connect.deadline?.interruptUnsafe()
    const watchers: Array<Fiber.Fiber<unknown, unknown>> = [connect.fiber]
    if (stable) watchers.push(report(Effect.sleep(policy.backoff.resetAfter), { _tag: "Stable", id }))
    if (session.toolCountChanges !== undefined) {
      watchers.push(
        fork(
          Stream.runForEach(session.toolCountChanges, (count) =>
            Effect.sync(() => post({ _tag: "ToolCount", id, count }))
          )
        )
      )
    }
    if (policy.health !== undefined && session.probe !== undefined) {
      watchers.push(fork(probeLoop(id, session.probe, policy.health)))
    }
    const ending = session.selfBounded === true ? undefined : new Set<(lost: Lost) => void>()
    const now: Now<A> = {
      handle: session.handle,
      onEnd:
        ending &&
        ((listener) => {
          ending.add(listener)
          return () => ending.delete(listener)
        })
    }
    live = { id, session, scope: connect.scope, closed: Deferred.makeUnsafe<never, Lost>(), ending, now, watchers }
    const ended = connect.result.ended
    if (ended !== undefined) post({ _tag: "Ended", id, error: ended.error })
  }

  const endLive = (error: Lost) => {
    const current = live
    if (current === undefined) return
    live = undefined
    lastEnded = { handle: current.session.handle, error }
    options.notify(() => {
      Deferred.doneUnsafe(current.closed, Exit.fail(error))
      if (current.ending !== undefined) for (const listener of current.ending) listener(error)
    })
    for (const watcher of current.watchers) watcher.interruptUnsafe()
    closeLater(Scope.close(current.scope, Exit.void))
  }

  const cancelBackoff = (id: number) => {
    backoffs.get(id)?.interruptUnsafe()
    backoffs.delete(id)
  }

  const run = (command: Command): void => {
    switch (command._tag) {
      case "Connect":
        open(command.id)
        break
      case "ArmStartup": {
        const connect = connects.get(command.id)
        if (connect !== undefined) armStartup(command.id, connect)
        break
      }
      case "Discard":
        discard(command.id)
        break
      case "GoLive":
        goLive(command.id, command.stable)
        break
      case "EndLive":
        endLive(command.error)
        break
      case "Backoff": {
        const { id, attempt } = command
        const wait = Effect.flatMap(Policy.delay(policy, attempt), Effect.sleep)
        backoffs.set(id, report(wait, { _tag: "BackoffElapsed", id }))
        break
      }
      case "CancelBackoff":
        cancelBackoff(command.id)
        break
    }
  }

  return {
    live: () => live,
    lastEnded: () => lastEnded,
    run,
    release: (error) => {
      for (const id of Array.from(backoffs.keys())) cancelBackoff(id)
      for (const id of Array.from(connects.keys())) discard(id)
      if (live !== undefined) endLive(error())
    },
    closed
  }
}

const causeOf = <A>(exit: Exit.Exit<A, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  if (reason === undefined) return exit.cause
  return reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : exit.cause
}
