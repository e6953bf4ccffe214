/**
 * A runner serves a toolset only while it owns the toolset's shard. The cluster's own view of
 * ownership can lag: a runner paused past its lease comes back still believing it holds shards
 * that another runner has taken, and runs what was queued for it. The fence closes that gap:
 * - before a call, `verdict` says whether this runner may run it: at once when the lease is
 *   fresh, otherwise by asking the store who holds the shard's lock;
 * - every `interval`, and at once after a pause or a store outage, the toolsets whose shards
 *   another runner holds are stopped, before anything is served from them;
 * - `stopAll` stops every hosted toolset at once, for a shutdown that could not finish in time.
 * Calls to tools that are not safe to repeat are fenced once more by the call ledger, whose
 * insert takes effect only while this runner's session holds the shard's lock.
 */
import * as Context from "effect/Context"
import type * as ShardId from "effect/cluster/ShardId"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import * as Lease from "./lease.ts"
import * as ShardLock from "./shardLock.ts"

/** Whether this runner may run a call for a shard now. */
export type Verdict =
  /** It holds the shard: the lease is fresh, or the store says so. */
  | { readonly _tag: "Owner" }
  /** The store cannot be asked: serve only what is safe to repeat. */
  | { readonly _tag: "Outage" }
  /** No runner holds it (it is between owners): serve only what is safe to repeat. */
  | { readonly _tag: "Unowned" }
  /** Another runner holds it (`holder`, e.g. "runner 10.0.0.5:34431"): serve nothing; the toolset lives there now. */
  | { readonly _tag: "Lost"; readonly holder: string }

/** A toolset hosted on this runner, as the fence sees it. */
export interface Hosted {
  readonly shard: ShardId.ShardId
  readonly name: string
  /** Told (to stop the toolset) when another runner holds its shard. */
  readonly onLost: (holder: string) => Effect.Effect<void>
  /** Stops the toolset at once, its server killed: for a shutdown that ran out of time. */
  readonly halt: Effect.Effect<void>
}

/**
 * What the host asks of the fence: whether this runner may serve a shard now, and to stop the
 * toolsets it hosts once another runner holds their shards.
 */
export interface Service {
  readonly verdict: (shard: ShardId.ShardId) => Effect.Effect<Verdict>
  /**
   * Whether this runner's lock on `shard` was taken from it (it did not give it up): its toolset
   * lives on another runner already, so stopping it here must not wait for the server to finish.
   */
  readonly lost: (shard: ShardId.ShardId) => boolean
  /**
   * How long after the ledger recorded a call (proving this runner held the shard) the call may
   * still be sent: the lock outlives the runner's last refresh by a lease, less the time between
   * refreshes, halved for safety.
   */
  readonly sendWithin: Duration.Duration
  /**
   * Stops a toolset that leaves this runner: `stop` (its server asked to finish) only while the
   * store says this runner's session holds the shard, asked before and every `interval` during
   * the stop; otherwise, or once that changes, `halt` (its server killed). The lease is not
   * trusted here: a store restart drops the lock at once, and the next owner may start its copy
   * the moment the store is back, while a stubborn server takes seconds to finish.
   */
  readonly release: (
    shard: ShardId.ShardId,
    stop: Effect.Effect<void>,
    halt: (verdict: Verdict) => Effect.Effect<void>
  ) => Effect.Effect<void>
  /** Hosts a toolset until the scope closes. */
  readonly host: (hosted: Hosted) => Effect.Effect<void, never, Scope.Scope>
  /** Stops every hosted toolset at once (`halt`), for a shutdown that ran out of time. */
  readonly stopAll: Effect.Effect<void>
}

/** The fence, as a service: `layer` on a runner, `layerAlone` for the in-process test runner. */
export class Fence extends Context.Service<Fence, Service>()("@toolvisor/cluster/Fence") {}

const owner: Verdict = { _tag: "Owner" }
const outage: Verdict = { _tag: "Outage" }
const unowned: Verdict = { _tag: "Unowned" }

/** A fence for a runner alone in its cluster (the in-process test runner): it owns every shard. */
export const alone: Service = {
  verdict: () => Effect.succeed(owner),
  release: (_shard, stop) => stop,
  lost: () => false,
  sendWithin: Duration.infinity,
  host: () => Effect.void,
  stopAll: Effect.void
}

/** How often the fence looks, and how long it waits for the store's answer. */
export interface Options {
  /** How often hosted toolsets whose lease is no longer fresh are checked (default 500 ms). */
  readonly interval?: Duration.Input
  /** How long one question to the store may take before it counts as unanswered (default 2 s). */
  readonly askTimeout?: Duration.Input
}

/**
 * The fence of this runner's lease, with its sweep forked in the current scope. A store that does
 * not answer in time counts as an outage: the sweep then stops nothing, and `verdict` serves only
 * what is safe to repeat.
 */
export const make = (options: Options = {}) =>
  Effect.gen(function* () {
    const lease = yield* Lease.Lease
    const sql = yield* SqlClient.SqlClient
    const interval = Duration.fromInputUnsafe(options.interval ?? "500 millis")
    const askTimeout = Duration.fromInputUnsafe(options.askTimeout ?? "2 seconds")
    const hosted = new Set<Hosted>()

    /** The verdicts for `shards`, from one question to the store. */
    const ask = (shards: ReadonlyArray<ShardId.ShardId>): Effect.Effect<ReadonlyArray<Verdict>> =>
      ShardLock.holders(sql, shards, lease.groups).pipe(
        Effect.timeout(askTimeout),
        Effect.map((rows) => {
          const byLock = new Map(rows.map((row) => [Number(row.objid), row.holder ?? "an unknown member"]))
          return shards.map((shard): Verdict => {
            const holder = byLock.get(ShardLock.lockNumber(shard, lease.groups))
            return holder === undefined
              ? unowned
              : holder === lease.name
                ? owner
                : { _tag: "Lost", holder: ShardLock.memberOf(holder) }
          })
        }),
        Effect.catchCause(() => Effect.succeed(shards.map(() => outage)))
      )

    const verdict = (shard: ShardId.ShardId): Effect.Effect<Verdict> => {
      if (lease.fresh(shard)) return Effect.succeed(owner)
      if (lease.outage()) return Effect.succeed(outage)
      return Effect.map(ask([shard]), (verdicts) => verdicts[0] ?? outage)
    }

    const release: Service["release"] = (shard, stop, halt) =>
      Effect.gen(function* () {
        const asked = Effect.map(ask([shard]), (verdicts) => verdicts[0] ?? outage)
        const first = yield* asked
        if (first._tag !== "Owner") return yield* halt(first)
        const watch = yield* asked.pipe(
          Effect.repeat({ schedule: Schedule.spaced(interval), until: (v) => v._tag !== "Owner" }),
          Effect.flatMap(halt),
          Effect.forkChild({ startImmediately: true })
        )
        yield* stop
        yield* Fiber.interrupt(watch)
      })

    const stop = (h: Hosted, holder: string) =>
      Effect.andThen(Effect.logWarning(`${h.name}: ${holder} holds its shard now; stopping it here`), h.onLost(holder))

    /**
     * Stops the hosted toolsets whose shards another runner holds. It asks during an outage too
     * (a store that does not answer stops nothing): the moment the store is back, a lock that its
     * restart dropped and another runner then took is found, not a lease later.
     */
    const sweep = Effect.suspend(() => {
      const stale = [...hosted].filter((h) => !lease.fresh(h.shard))
      if (stale.length === 0) return Effect.void
      return Effect.flatMap(ask(stale.map((h) => h.shard)), (verdicts) =>
        Effect.forEach(
          stale,
          (h, i) => {
            const v = verdicts[i]
            return v?._tag === "Lost" ? stop(h, v.holder) : Effect.void
          },
          { discard: true }
        )
      )
    })

    yield* sweep.pipe(
      Effect.repeat(Schedule.spaced(interval)),
      Effect.catchCause((cause) => Effect.logWarning("the fence's sweep failed", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    const service: Service = {
      verdict,
      release,
      lost: lease.lost,
      sendWithin: lease.sendWithin,
      host: (h) =>
        Effect.acquireRelease(
          Effect.sync(() => hosted.add(h)),
          () => Effect.sync(() => hosted.delete(h))
        ),
      stopAll: Effect.suspend(() =>
        Effect.forEach([...hosted], (h) => h.halt, { concurrency: "unbounded", discard: true })
      )
    }
    return service
  })

/** The fence over the runner's lease and its SQL client. */
export const layer = (options: Options = {}): Layer.Layer<Fence, never, Lease.Lease | SqlClient.SqlClient> =>
  Layer.effect(Fence, make(options))

/** The fence of a runner alone in its cluster (`alone`). */
export const layerAlone: Layer.Layer<Fence> = Layer.succeed(Fence, alone)
