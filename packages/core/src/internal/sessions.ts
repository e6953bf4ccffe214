/**
 * What a Supervisor's actor holds, by the ids `Phase` gives them: connects in flight (each with
 * its startup deadline), the live session and the fibers that watch it, and backoff timers. The
 * actor runs `Phase` commands on it; nothing here decides anything. Closing is done in the
 * background, so a server slow to die never delays a transition; every close is tracked, a new
 * connect waits for the earlier ones (never two servers of one toolset at once), and `stop` and
 * the finalizer await them.
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
import type * as Phase from "../Phase.ts"
import * as Policy from "../Policy.ts"
import type * as Session from "../Session.ts"

/** How a session ended, as requests that were in flight on it see it. */
export type Lost = LifecycleError.ServerCrashed | LifecycleError.NotStarted

/** The established session and the fibers that watch it. */
export interface Live<A> {
  readonly id: number
  readonly session: Session.Session<A>
  readonly scope: Scope.Closeable
  /** Failed when the session ends, so requests in flight fail at once instead of hanging. */
  readonly closed: Deferred.Deferred<never, Lost>
  readonly watchers: ReadonlyArray<Fiber.Fiber<unknown, unknown>>
}

/** A connect in flight (or finished, waiting to be taken), with its startup deadline. */
interface Connect<A> {
  readonly scope: Scope.Closeable
  readonly fiber: Fiber.Fiber<void>
  /** Filled by the connect's fiber before it reports success. */
  readonly result: { session: Session.Session<A> | undefined }
  deadline: Fiber.Fiber<void> | undefined
}

export interface Options<A> {
  readonly name: string
  readonly kind: string
  readonly connector: Session.Connector<A>
  readonly policy: Policy.Policy
  /** Reports back to the actor. */
  readonly post: (message: Phase.Message) => Effect.Effect<unknown>
  /** Queues an effect for the actor to run once the new snapshot is published. */
  readonly notify: (effect: Effect.Effect<unknown>) => void
  /** The episode's counters, for the connect's span. */
  readonly counters: () => { readonly attempt: number; readonly restarts: number }
}

/** The commands that act on resources (the rest are the actor's own). */
export type Command = Exclude<Phase.Command, { readonly _tag: "Settle" | "Warn" }>

export interface Sessions<A> {
  readonly live: () => Live<A> | undefined
  /** The last session that ended, so a request that saw it die late still learns how. */
  readonly lastEnded: () => { readonly handle: A; readonly error: Lost } | undefined
  readonly run: (command: Command) => Effect.Effect<void>
  /** Releases everything (the Supervisor's finalizer); the closes are awaited by `closed`. */
  readonly release: (error: LifecycleError.NotStarted) => Effect.Effect<void>
  /** Completes once every close started so far is done. */
  readonly closed: Effect.Effect<void>
}

/** A connect's span needs no stack trace: its call site is always the same line of this file. */
const noStackTrace = { captureStackTrace: false } as const

export const make = <A>(options: Options<A>): Effect.Effect<Sessions<A>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, policy, post } = options
    const closers = yield* FiberSet.make()
    const connects = new Map<number, Connect<A>>()
    const backoffs = new Map<number, Fiber.Fiber<void>>()
    let live: Live<A> | undefined
    let lastEnded: { readonly handle: A; readonly error: Lost } | undefined

    const spawn = <X>(work: Effect.Effect<X>) => Effect.forkChild(work, { startImmediately: true })
    const report = <X>(work: Effect.Effect<X>, message: () => Phase.Message) =>
      spawn(
        Effect.asVoid(
          Effect.andThen(
            work,
            Effect.suspend(() => post(message()))
          )
        )
      )
    const errorOf = (exit: Exit.Exit<unknown, unknown>) =>
      Exit.isSuccess(exit) ? undefined : Classify.classify(name, causeOf(exit))
    const closeLater = (close: Effect.Effect<void>) => FiberSet.run(closers, close, { startImmediately: true })

    const armStartup = (id: number, connect: Connect<A>) =>
      Effect.gen(function* () {
        if (connect.deadline !== undefined) yield* Fiber.interrupt(connect.deadline)
        connect.deadline =
          policy.startupTimeout === undefined
            ? undefined
            : yield* report(Effect.sleep(policy.startupTimeout), () => ({ _tag: "StartupTimeout", id }))
      })

    const open = (id: number) =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const result: Connect<A>["result"] = { session: undefined }
        const fiber = yield* spawn(
          Effect.andThen(FiberSet.awaitEmpty(closers), options.connector.connect).pipe(
            Scope.provide(scope),
            Effect.withSpan(
              "toolvisor.connect",
              { attributes: { toolset: name, kind: options.kind, ...options.counters() } },
              noStackTrace
            ),
            Effect.exit,
            Effect.flatMap((exit) => {
              if (Exit.isSuccess(exit)) result.session = exit.value
              return post({ _tag: "Connected", id, error: errorOf(exit) })
            }),
            Effect.asVoid
          )
        )
        const connect: Connect<A> = { scope, fiber, result, deadline: undefined }
        connects.set(id, connect)
        yield* armStartup(id, connect)
      })

    const discard = (id: number) =>
      Effect.suspend(() => {
        const connect = connects.get(id)
        connects.delete(id)
        if (connect === undefined) return Effect.void
        const deadline = connect.deadline
        return Effect.andThen(
          deadline === undefined ? Effect.void : Fiber.interrupt(deadline),
          closeLater(Fiber.interrupt(connect.fiber).pipe(Effect.andThen(Scope.close(connect.scope, Exit.void))))
        )
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
            Effect.catchDefect((defect) => Effect.fail(Classify.classify(name, defect))),
            Effect.exit
          )
        ),
        Effect.flatMap((exit) => post({ _tag: "Probed", id, error: errorOf(exit) })),
        Effect.forever
      )

    const goLive = (id: number, stable: boolean) =>
      Effect.gen(function* () {
        const connect = connects.get(id)
        const session = connect?.result.session
        if (connect === undefined || session === undefined) return yield* Effect.die(`${name}: no session for ${id}`)
        connects.delete(id)
        if (connect.deadline !== undefined) yield* Fiber.interrupt(connect.deadline)
        const watchers: Array<Fiber.Fiber<unknown, unknown>> = [
          yield* spawn(
            Effect.flatMap(Effect.exit(session.ended), (exit) => post({ _tag: "Ended", id, error: errorOf(exit) }))
          )
        ]
        if (stable)
          watchers.push(yield* report(Effect.sleep(policy.backoff.resetAfter), () => ({ _tag: "Stable", id })))
        if (session.toolCountChanges !== undefined) {
          watchers.push(
            yield* spawn(Stream.runForEach(session.toolCountChanges, (count) => post({ _tag: "ToolCount", id, count })))
          )
        }
        if (policy.health !== undefined && session.probe !== undefined) {
          watchers.push(yield* spawn(probeLoop(id, session.probe, policy.health)))
        }
        live = { id, session, scope: connect.scope, closed: yield* Deferred.make<never, Lost>(), watchers }
      })

    const endLive = (error: Lost) =>
      Effect.suspend(() => {
        const current = live
        live = undefined
        if (current === undefined) return Effect.void
        lastEnded = { handle: current.session.handle, error }
        options.notify(Deferred.fail(current.closed, error))
        return Effect.forEach(current.watchers, Fiber.interrupt, { discard: true }).pipe(
          Effect.andThen(closeLater(Scope.close(current.scope, Exit.void)))
        )
      })

    const cancelBackoff = (id: number) =>
      Effect.suspend(() => {
        const fiber = backoffs.get(id)
        backoffs.delete(id)
        return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
      })

    const run = (command: Command): Effect.Effect<void> => {
      switch (command._tag) {
        case "Connect":
          return open(command.id)
        case "ArmStartup": {
          const connect = connects.get(command.id)
          return connect === undefined ? Effect.void : armStartup(command.id, connect)
        }
        case "Discard":
          return discard(command.id)
        case "GoLive":
          return goLive(command.id, command.stable)
        case "EndLive":
          return endLive(command.error)
        case "Backoff":
          return Effect.flatMap(Policy.delay(policy, command.attempt), (wait) =>
            Effect.map(
              report(Effect.sleep(wait), () => ({ _tag: "BackoffElapsed", id: command.id })),
              (fiber) => {
                backoffs.set(command.id, fiber)
              }
            )
          )
        case "CancelBackoff":
          return cancelBackoff(command.id)
      }
    }

    return {
      live: () => live,
      lastEnded: () => lastEnded,
      run,
      release: (error) =>
        Effect.gen(function* () {
          yield* Effect.forEach([...backoffs.keys()], cancelBackoff, { discard: true })
          yield* Effect.forEach([...connects.keys()], discard, { discard: true })
          yield* endLive(error)
        }),
      closed: FiberSet.awaitEmpty(closers)
    }
  })

const causeOf = <A>(exit: Exit.Exit<A, unknown>): unknown => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  if (reason === undefined) return exit.cause
  return reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : exit.cause
}
