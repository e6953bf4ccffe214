/**
 * One actor per toolset. A single fiber owns the session and handles commands (start, stop,
 * restart) and events (connect done, session ended, timer fired, probe result) from one queue,
 * so every transition happens in one place, in order. Long waits — connecting, backoff, the
 * session itself, health probes — run in child fibers that report back to the queue; each report
 * carries the id of the work it belongs to, and reports about superseded work are dropped.
 *
 * The transition table in DESIGN.md is the contract; the tests in Supervisor.test.ts pin it down.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Classify from "./Classify.ts"
import * as LifecycleError from "./LifecycleError.ts"
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

export interface Supervisor<A> {
  readonly name: string
  readonly policy: Policy.Policy
  /** Connects and resolves when Ready. Idempotent; a failed first start leaves the toolset Stopped. */
  readonly start: Effect.Effect<void, LifecycleError.LifecycleError>
  /** Closes the session and any connect in flight; idempotent; `start` works again afterwards. */
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
   * Runs a request on the live session under `call_timeout`: waits for Ready while starting or
   * restarting, fails at once when the toolset is terminal or when the session dies mid-request.
   */
  readonly use: <B, E, R>(f: (handle: A) => Effect.Effect<B, E, R>) => Effect.Effect<B, E | UseError, R>
  /**
   * Runs a request on the live session with neither a deadline nor a watch on the session's end,
   * waiting for Ready (under `call_timeout`) only when the toolset is not usable. For transports
   * whose requests already fail when the session closes and that enforce `call_timeout`
   * themselves: the hot path then costs no fiber and no timer.
   */
  readonly useDirect: <B, E, R>(
    f: (handle: A) => Effect.Effect<B, E, R>
  ) => Effect.Effect<B, E | LifecycleError.NotStarted | LifecycleError.CallTimeout, R>
}

type Reply = Deferred.Deferred<void, LifecycleError.LifecycleError>

type Message<A> =
  | { readonly _tag: "Start"; readonly reply: Reply }
  | { readonly _tag: "Restart"; readonly reply: Reply }
  | { readonly _tag: "Stop"; readonly reply: Deferred.Deferred<void> }
  | { readonly _tag: "Connected"; readonly id: number; readonly exit: Exit.Exit<Session.Session<A>, unknown> }
  | { readonly _tag: "StartupTimeout"; readonly id: number }
  | { readonly _tag: "Ended"; readonly id: number; readonly exit: Exit.Exit<void, unknown> }
  | { readonly _tag: "BackoffElapsed"; readonly id: number }
  | { readonly _tag: "Probed"; readonly id: number; readonly exit: Exit.Exit<void, LifecycleError.LifecycleError> }
  | { readonly _tag: "Stable"; readonly id: number }
  | { readonly _tag: "ToolCount"; readonly id: number; readonly count: number }

/** A connect in flight, or finished but not yet taken by a start (a late connect after a timeout). */
interface Connecting<A> {
  readonly id: number
  readonly scope: Scope.Closeable
  readonly fiber: Fiber.Fiber<void>
  parked: Session.Session<A> | undefined
}

/** The established session and the fibers that watch it. */
interface Live<A> {
  readonly id: number
  readonly session: Session.Session<A>
  readonly scope: Scope.Closeable
  /** Failed when the session ends, so requests in flight fail at once instead of hanging. */
  readonly closed: Deferred.Deferred<never, LifecycleError.ServerCrashed | LifecycleError.NotStarted>
  readonly watchers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>
}

/** What other fibers read: the snapshot, the session to run requests on, the full last error. */
interface View<A> {
  readonly status: State.StatusSnapshot
  readonly live: Live<A> | undefined
  readonly error: LifecycleError.LifecycleError | undefined
}

/** Creates a supervisor in the current scope; closing the scope stops it and everything it started. */
export const make = <A>(options: Options<A>): Effect.Effect<Supervisor<A>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, connector } = options
    const policy = options.policy ?? Policy.defaults
    const mailbox = yield* Queue.unbounded<Message<A>>()
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
      live: undefined,
      error: undefined
    })

    // Actor state: read and written only by the actor fiber (and by the finalizer once it is gone).
    let nextId = 0
    let connecting: Connecting<A> | undefined
    let live: Live<A> | undefined
    let status = (yield* SubscriptionRef.get(view)).status
    let lastError: LifecycleError.LifecycleError | undefined
    let waiters: Array<Reply> = []
    let startupTimer: Fiber.Fiber<void> | undefined
    let backoffTimer: { readonly id: number; readonly fiber: Fiber.Fiber<void> } | undefined
    let probeFailures = 0
    let toolCount: number | undefined
    let toolsVersion = 0

    const post = (message: Message<A>) => Queue.offer(mailbox, message)

    /** Runs child work that reports back; interruptible even though handlers are not. */
    const spawn = <X>(work: Effect.Effect<X>) => Effect.forkChild(work, { startImmediately: true })

    const interrupt = (fiber: Fiber.Fiber<unknown> | undefined) => (fiber ? Fiber.interrupt(fiber) : Effect.void)

    const publish = (
      patch: Partial<Pick<State.StatusSnapshot, "state" | "restarts" | "attempt">>,
      error: LifecycleError.LifecycleError | undefined
    ) =>
      Effect.gen(function* () {
        lastError = error
        const state = patch.state ?? status.state
        const current = State.isUsable(state) ? live : undefined
        const session = current?.session
        const next = new State.StatusSnapshot({
          name,
          kind: options.kind,
          state,
          since: state === status.state ? status.since : yield* Clock.currentTimeMillis,
          restarts: patch.restarts ?? status.restarts,
          attempt: patch.attempt ?? status.attempt,
          ...State.errorFields(error),
          ...(session?.pid === undefined ? {} : { pid: session.pid }),
          ...(current === undefined || toolCount === undefined ? {} : { toolCount }),
          toolsVersion,
          ...(session?.server === undefined ? {} : { server: session.server }),
          ...(session?.instructions === undefined ? {} : { instructions: session.instructions })
        })
        const from = status.state
        status = next
        yield* SubscriptionRef.set(view, { status: next, live: current, error })
        if (from !== state) yield* PubSub.publish(hub, new State.Transition({ from, snapshot: next }))
      })

    const settleWaiters = (exit: Exit.Exit<void, LifecycleError.LifecycleError>) =>
      Effect.suspend(() => {
        const settled = waiters
        waiters = []
        return Effect.forEach(settled, (reply) => Deferred.done(reply, exit), { discard: true })
      })

    const notStarted = (message: string, cause?: LifecycleError.LifecycleError) =>
      new LifecycleError.NotStarted({ toolset: name, message: `${name}: ${message}`, cause })

    /** Enters a terminal state and fails everyone waiting for Ready with `error`. */
    const settle = (state: "Stopped" | "Failed", error: LifecycleError.LifecycleError | undefined, reason: string) =>
      publish(state === "Stopped" ? { state, attempt: 0 } : { state }, error).pipe(
        Effect.andThen(settleWaiters(Exit.fail(error ?? notStarted(reason)))),
        Effect.andThen(
          state === "Failed" ? Effect.logWarning(`${name} failed: ${error?.message ?? reason}`) : Effect.void
        )
      )

    const classify = (cause: unknown) => Classify.classify(name, cause)

    // ---- resources ---------------------------------------------------------------------------

    const closeLive = (error: LifecycleError.ServerCrashed | LifecycleError.NotStarted) =>
      Effect.suspend(() => {
        const current = live
        live = undefined
        probeFailures = 0
        if (current === undefined) return Effect.void
        return Deferred.fail(current.closed, error).pipe(
          Effect.andThen(Effect.forEach(current.watchers, Fiber.interrupt, { discard: true })),
          Effect.andThen(Scope.close(current.scope, Exit.void))
        )
      })

    const closeConnecting = Effect.suspend(() => {
      const current = connecting
      connecting = undefined
      if (current === undefined) return Effect.void
      return Fiber.interrupt(current.fiber).pipe(Effect.andThen(Scope.close(current.scope, Exit.void)))
    })

    const cancelTimers = Effect.suspend(() => {
      const timers = [startupTimer, backoffTimer?.fiber]
      startupTimer = undefined
      backoffTimer = undefined
      return Effect.forEach(timers, interrupt, { discard: true })
    })

    /** Starts the one connect in flight, with the startup deadline armed. */
    const connect = Effect.gen(function* () {
      const id = ++nextId
      const scope = yield* Scope.make()
      const fiber = yield* spawn(
        connector.connect.pipe(
          Scope.provide(scope),
          Effect.withSpan("toolvisor.connect", {
            attributes: { toolset: name, kind: options.kind, attempt: status.attempt, restarts: status.restarts }
          }),
          Effect.exit,
          Effect.flatMap((exit) => post({ _tag: "Connected", id, exit })),
          Effect.asVoid
        )
      )
      connecting = { id, scope, fiber, parked: undefined }
      yield* armStartupTimer(id)
    })

    const armStartupTimer = (id: number) =>
      Effect.gen(function* () {
        yield* interrupt(startupTimer)
        startupTimer =
          policy.startupTimeout === undefined
            ? undefined
            : yield* spawn(
                Effect.sleep(policy.startupTimeout).pipe(
                  Effect.andThen(post({ _tag: "StartupTimeout", id })),
                  Effect.asVoid
                )
              )
      })

    const initTimeout = () =>
      new LifecycleError.InitTimeout({
        toolset: name,
        message: `${name}: did not connect within ${Duration.format(policy.startupTimeout ?? Duration.zero)}`,
        afterMillis: Duration.toMillis(policy.startupTimeout ?? Duration.zero)
      })

    // ---- transitions -------------------------------------------------------------------------

    /** Stopped/Failed → Starting: a fresh start, adopting a late connect if one is in flight. */
    const beginStart = Effect.gen(function* () {
      yield* publish({ state: "Starting", restarts: 0, attempt: 0 }, undefined)
      const pending = connecting
      if (pending === undefined) return yield* connect
      if (pending.parked !== undefined) return yield* becomeReady(pending, pending.parked)
      yield* armStartupTimer(pending.id)
    })

    const becomeReady = (from: Connecting<A>, session: Session.Session<A>) =>
      Effect.gen(function* () {
        connecting = undefined
        yield* interrupt(startupTimer)
        startupTimer = undefined
        const id = from.id
        const closed = yield* Deferred.make<never, LifecycleError.ServerCrashed | LifecycleError.NotStarted>()
        const watchers: Array<Fiber.Fiber<unknown, unknown>> = [
          yield* spawn(
            session.ended.pipe(
              Effect.exit,
              Effect.flatMap((exit) => post({ _tag: "Ended", id, exit }))
            )
          ),
          yield* spawn(
            Effect.sleep(policy.backoff.resetAfter).pipe(Effect.andThen(post({ _tag: "Stable", id })), Effect.asVoid)
          )
        ]
        const counts = session.toolCountChanges
        if (counts !== undefined) {
          watchers.push(yield* spawn(Stream.runForEach(counts, (count) => post({ _tag: "ToolCount", id, count }))))
        }
        const probe = session.probe
        if (policy.health !== undefined && probe !== undefined)
          watchers.push(yield* spawn(probeLoop(id, probe, policy.health)))
        live = { id, session, scope: from.scope, closed, watchers }
        probeFailures = 0
        toolCount = session.toolCount
        toolsVersion += 1
        yield* publish({ state: "Ready" }, undefined)
        yield* settleWaiters(Exit.void)
      })

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
            Effect.catchDefect((defect) => Effect.fail(classify(defect))),
            Effect.exit
          )
        ),
        Effect.flatMap((exit) => post({ _tag: "Probed", id, exit })),
        Effect.forever
      )

    /**
     * After a session ended or a reconnect failed: wait `delay(attempt)` and reconnect, or go to
     * Failed when the error is permanent, the policy says never, or the budget is spent.
     */
    const scheduleReconnect = (error: LifecycleError.LifecycleError | undefined) =>
      Effect.gen(function* () {
        if (error !== undefined && LifecycleError.isPermanent(error)) return yield* settle("Failed", error, "failed")
        if (policy.restart === "never") return yield* settle("Failed", error, "session ended (restart: never)")
        if (!Policy.hasBudget(policy, status.attempt)) {
          return yield* settle("Failed", error ?? lastError, `gave up after ${status.attempt} restarts`)
        }
        yield* publish({ state: "Restarting" }, error ?? lastError)
        const id = ++nextId
        const wait = yield* Policy.delay(policy, status.attempt)
        const fiber = yield* spawn(
          Effect.sleep(wait).pipe(Effect.andThen(post({ _tag: "BackoffElapsed", id })), Effect.asVoid)
        )
        backoffTimer = { id, fiber }
      })

    /** One reconnect of the episode: it counts against the budget whether or not it succeeds. */
    const reconnect = (error: LifecycleError.LifecycleError | undefined) =>
      Effect.gen(function* () {
        yield* interrupt(backoffTimer?.fiber)
        backoffTimer = undefined
        yield* publish({ state: "Restarting", attempt: status.attempt + 1, restarts: status.restarts + 1 }, error)
        yield* connect
      })

    const sessionEnded = (error: LifecycleError.LifecycleError | undefined) =>
      closeLive(
        new LifecycleError.ServerCrashed({
          toolset: name,
          message: `${name}: session ended while the request was in flight${error ? `: ${error.message}` : ""}`,
          cause: error
        })
      )

    const crashed = (error: LifecycleError.LifecycleError | undefined) =>
      Effect.gen(function* () {
        yield* sessionEnded(error)
        const clean = error === undefined
        if (clean && policy.restart !== "always") {
          return yield* settle("Failed", undefined, `session closed cleanly (restart: ${policy.restart})`)
        }
        yield* scheduleReconnect(error)
      })

    // ---- handlers ----------------------------------------------------------------------------

    const handle = (message: Message<A>): Effect.Effect<void> => {
      switch (message._tag) {
        case "Start":
          return onStart(message.reply)
        case "Restart":
          return onRestart(message.reply)
        case "Stop":
          return onStop.pipe(Effect.andThen(Deferred.succeed(message.reply, undefined)), Effect.asVoid)
        case "Connected":
          return onConnected(message.id, message.exit)
        case "StartupTimeout":
          return onStartupTimeout(message.id)
        case "Ended":
          return live?.id === message.id
            ? crashed(Exit.isSuccess(message.exit) ? undefined : classify(causeOf(message.exit)))
            : Effect.void
        case "BackoffElapsed":
          return backoffTimer?.id === message.id ? reconnect(lastError) : Effect.void
        case "Probed":
          return live?.id === message.id ? onProbed(message.exit) : Effect.void
        case "Stable":
          return live?.id === message.id && status.attempt !== 0 ? publish({ attempt: 0 }, lastError) : Effect.void
        case "ToolCount":
          if (live?.id !== message.id) return Effect.void
          toolCount = message.count
          toolsVersion += 1
          return publish({}, lastError)
      }
    }

    const onStart = (reply: Reply) =>
      Effect.gen(function* () {
        if (State.isUsable(status.state)) return yield* Deferred.succeed(reply, undefined)
        waiters.push(reply)
        if (State.isTerminal(status.state)) yield* beginStart
      })

    const onRestart = (reply: Reply) =>
      Effect.gen(function* () {
        waiters.push(reply)
        switch (status.state) {
          case "Stopped":
          case "Failed":
            return yield* beginStart
          case "Starting":
            return
          case "Restarting":
            // Share a connect in flight; cut a backoff wait short.
            return connecting === undefined ? yield* reconnect(lastError) : undefined
          case "Ready":
          case "Degraded": {
            yield* sessionEnded(notStarted("restarted while the request was in flight"))
            yield* publish({ state: "Restarting", attempt: 0 }, undefined)
            return yield* reconnect(lastError)
          }
        }
      })

    const onStop = Effect.gen(function* () {
      yield* cancelTimers
      yield* closeConnecting
      yield* closeLive(notStarted("stopped while the request was in flight"))
      yield* settle("Stopped", undefined, "stopped")
    })

    const onConnected = (id: number, exit: Exit.Exit<Session.Session<A>, unknown>) =>
      Effect.gen(function* () {
        const current = connecting
        if (current === undefined || current.id !== id) return
        if (Exit.isSuccess(exit)) {
          // A late connect that finished while Stopped is kept for the next start to adopt.
          if (status.state === "Stopped") current.parked = exit.value
          else yield* becomeReady(current, exit.value)
          return
        }
        yield* closeConnecting
        if (status.state === "Stopped") return
        yield* connectFailed(classify(causeOf(exit)))
      })

    const connectFailed = (error: LifecycleError.LifecycleError) =>
      Effect.gen(function* () {
        yield* interrupt(startupTimer)
        startupTimer = undefined
        if (status.state === "Starting") return yield* settle("Stopped", error, "start failed")
        yield* scheduleReconnect(error)
      })

    const onStartupTimeout = (id: number) =>
      Effect.gen(function* () {
        if (connecting?.id !== id) return
        startupTimer = undefined
        const error = initTimeout()
        // The first start keeps its connect running so that a later start adopts it instead of
        // opening a second one; a reconnect that hangs is abandoned and counts as a failed attempt.
        if (status.state === "Starting") return yield* settle("Stopped", error, "start timed out")
        yield* closeConnecting
        yield* scheduleReconnect(error)
      })

    const onProbed = (exit: Exit.Exit<void, LifecycleError.LifecycleError>) =>
      Effect.gen(function* () {
        if (Exit.isSuccess(exit)) {
          probeFailures = 0
          return status.state === "Degraded" ? yield* publish({ state: "Ready" }, undefined) : undefined
        }
        const error = classify(causeOf(exit))
        probeFailures += 1
        if (probeFailures < (policy.health?.failures ?? 1)) return yield* publish({ state: "Degraded" }, error)
        yield* Effect.logWarning(`${name}: ${probeFailures} health probes failed in a row, restarting`)
        yield* sessionEnded(error)
        if (policy.restart === "never" || !Policy.hasBudget(policy, status.attempt)) {
          return yield* settle("Failed", error, "health probes failed")
        }
        yield* reconnect(error)
      })

    // ---- the actor ---------------------------------------------------------------------------

    const actor = yield* Queue.take(mailbox).pipe(
      Effect.flatMap((message) =>
        handle(message).pipe(
          // A defect in a handler is a bug, but it must not kill the actor and leave callers hanging.
          Effect.catchDefect((defect) => Effect.logError(`${name}: supervisor bug handling ${message._tag}`, defect)),
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
        yield* cancelTimers
        yield* closeConnecting
        yield* closeLive(notStarted("supervisor closed while the request was in flight"))
        yield* settleWaiters(Exit.fail(notStarted("supervisor closed")))
        yield* PubSub.shutdown(hub)
      })
    )

    const ask = (make: (reply: Reply) => Message<A>) =>
      Effect.gen(function* () {
        const reply = yield* Deferred.make<void, LifecycleError.LifecycleError>()
        if (!(yield* Queue.offer(mailbox, make(reply)))) return yield* notStarted("supervisor closed")
        return yield* Deferred.await(reply)
      })

    const settled = (current: View<A> | undefined): Effect.Effect<Live<A>, LifecycleError.NotStarted> => {
      if (current?.live !== undefined) return Effect.succeed(current.live)
      if (current === undefined) return Effect.fail(notStarted("supervisor closed"))
      return Effect.fail(notStarted(`not running (${current.status.state})`, current.error))
    }

    const isSettled = (v: View<A>) => State.isUsable(v.status.state) || State.isTerminal(v.status.state)

    /** The live session; reads the current view first, and subscribes only while starting or restarting. */
    const awaitUsable: Effect.Effect<Live<A>, LifecycleError.NotStarted> = Effect.flatMap(
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

    const callTimeout = (timeout: Duration.Duration) =>
      new LifecycleError.CallTimeout({
        toolset: name,
        message: `${name}: request did not complete within ${Duration.format(timeout)}`,
        afterMillis: Duration.toMillis(timeout)
      })

    const withCallTimeout = <B, E, R>(effect: Effect.Effect<B, E, R>) => {
      const timeout = policy.callTimeout
      return timeout === undefined
        ? effect
        : Effect.timeoutOrElse(effect, { duration: timeout, orElse: () => Effect.fail(callTimeout(timeout)) })
    }

    const use = <B, E, R>(f: (handle: A) => Effect.Effect<B, E, R>): Effect.Effect<B, E | UseError, R> =>
      withCallTimeout(
        awaitUsable.pipe(
          Effect.flatMap((current) => Effect.raceFirst(f(current.session.handle), Deferred.await(current.closed)))
        )
      )

    const useDirect = <B, E, R>(
      f: (handle: A) => Effect.Effect<B, E, R>
    ): Effect.Effect<B, E | LifecycleError.NotStarted | LifecycleError.CallTimeout, R> =>
      Effect.suspend(() => {
        const live = SubscriptionRef.getUnsafe(view).live
        return live !== undefined
          ? f(live.session.handle)
          : Effect.flatMap(withCallTimeout(awaitUsable), (current) => f(current.session.handle))
      })

    return {
      name,
      policy,
      start: ask((reply) => ({ _tag: "Start", reply })),
      restart: ask((reply) => ({ _tag: "Restart", reply })),
      stop: Effect.gen(function* () {
        const reply = yield* Deferred.make<void>()
        if (yield* Queue.offer(mailbox, { _tag: "Stop", reply })) yield* Deferred.await(reply)
      }),
      awaitReady: Effect.asVoid(awaitUsable),
      state: Effect.map(SubscriptionRef.get(view), (v) => v.status),
      changes: Stream.map(SubscriptionRef.changes(view), (v) => v.status),
      events: Stream.fromPubSub(hub),
      use,
      useDirect
    }
  })

const causeOf = <A>(exit: Exit.Exit<A, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  if (reason === undefined) return exit.cause
  return reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : exit.cause
}
