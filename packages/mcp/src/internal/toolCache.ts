/**
 * A cached listing (tools, prompts) for one session, guarded by a generation counter. Every
 * invalidation bumps the generation; a fetch stores its result only if the generation did not
 * move while it ran, so a listing that raced a `list_changed` is never kept as current, and the
 * caller that started it fetches again. Concurrent readers of one generation share one fetch.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"

export interface ToolCache<A, E> {
  /** The current listing: cached, joined to a fetch in flight, or fetched now. */
  readonly get: Effect.Effect<A, E>
  /** The cached listing if it is current, without fetching. */
  readonly current: Effect.Effect<A | undefined>
  /** The same, read synchronously: for the per-call path, which runs it on every tool call. */
  readonly currentUnsafe: () => A | undefined
  /** Forgets the listing; a fetch in flight will not store what it brings back. */
  readonly invalidate: Effect.Effect<void>
  /**
   * The same, callable from a library callback: a notification must invalidate before any
   * message that follows it on the wire is handled.
   */
  readonly invalidateUnsafe: () => void
  /** The listing stored last, then every one stored after it. */
  readonly stored: Stream.Stream<A>
  /** How many fetches ran (for tests and benchmarks). */
  readonly fetches: Effect.Effect<number>
}

/** A raced fetch is retried at most this many times, so a server that changes its list nonstop cannot livelock a reader. */
const maxRaces = 3

export const make = <A, E>(fetch: Effect.Effect<A, E>): Effect.Effect<ToolCache<A, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const latest = yield* SubscriptionRef.make<A | undefined>(undefined)
    const scope = yield* Effect.scope
    let generation = 0
    let cached: { readonly generation: number; readonly value: A } | undefined
    let inflight: { readonly generation: number; readonly result: Deferred.Deferred<A, E> } | undefined
    let fetches = 0

    /**
     * Runs one fetch in the cache's scope, so a reader that gives up does not cancel it for the
     * others. Nothing here waits, so it runs uninterrupted: `inflight` always gets its answer.
     */
    const startFetch = Effect.uninterruptible(
      Effect.gen(function* () {
        const at = generation
        const result = yield* Deferred.make<A, E>()
        inflight = { generation: at, result }
        fetches += 1
        const fiber = yield* fetch.pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Effect.suspend(() => {
              if (inflight?.result === result) inflight = undefined
              const fresh = Exit.isSuccess(exit) && generation === at
              if (fresh) cached = { generation: at, value: exit.value }
              return (fresh ? SubscriptionRef.set(latest, exit.value) : Effect.void).pipe(
                Effect.andThen(Deferred.done(result, exit))
              )
            })
          ),
          Effect.forkIn(scope, { startImmediately: true, uninterruptible: false })
        )
        // Interrupted (the scope closed, perhaps before the fetch could start): release the readers.
        fiber.addObserver((exit) => {
          if (inflight?.result === result) inflight = undefined
          if (Exit.isFailure(exit)) Deferred.doneUnsafe(result, Effect.failCause(exit.cause))
        })
        return { generation: at, result }
      })
    )

    /** One read; a result that raced an invalidation (success or failure) is not fresh. */
    const attempt: Effect.Effect<{ readonly exit: Exit.Exit<A, E>; readonly fresh: boolean }> = Effect.gen(
      function* () {
        if (cached !== undefined && cached.generation === generation) {
          return { exit: Exit.succeed(cached.value), fresh: true }
        }
        const running = inflight !== undefined && inflight.generation === generation ? inflight : yield* startFetch
        const exit = yield* Effect.exit(Deferred.await(running.result))
        return { exit, fresh: running.generation === generation }
      }
    )

    const get = Effect.gen(function* () {
      let result = yield* attempt
      for (let race = 0; !result.fresh && race < maxRaces; race++) result = yield* attempt
      return yield* result.exit
    })

    const invalidateUnsafe = () => {
      generation += 1
      cached = undefined
    }

    const currentUnsafe = () => (cached !== undefined && cached.generation === generation ? cached.value : undefined)

    return {
      get,
      current: Effect.sync(currentUnsafe),
      currentUnsafe,
      invalidate: Effect.sync(invalidateUnsafe),
      invalidateUnsafe,
      stored: SubscriptionRef.changes(latest).pipe(Stream.filter((value) => value !== undefined)),
      fetches: Effect.sync(() => fetches)
    }
  })
