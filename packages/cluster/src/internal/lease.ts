/**
 * A runner's hold on its shards, as it knows it, and the shard-lock storage that keeps it
 * through a store outage. Effect's SQL runner storage is wrapped, not replaced:
 * - every lock it confirms is recorded with the time the confirmation was asked for, so a call
 *   can tell at once whether this runner still surely owns its shard (`fresh`);
 * - when the store cannot be reached, a refresh reports the shards as still held instead of
 *   failing, so the cluster does not stop every toolset while PostgreSQL restarts; what is
 *   unsafe without the store stays fenced (the call ledger needs it, and `fresh` lapses);
 * - when the store is back (or restarted between two refreshes), locks its lost session held are
 *   taken again if no one else has them, so nothing moves and nothing restarts.
 * A lock another runner took in between is not taken back: the refresh reports it lost, and
 * the cluster hands the toolset over as it would after any lost lease. An outage longer than a
 * lease leaves every runner's heartbeat stale at once, so until a lease after the store is back
 * the runners seen before it stay in the cluster's view (see `getRunners`). A runner that was away
 * past its lease (paused) is fenced: it takes no shard for the rebalance cooldown, so toolsets
 * are not moved back to it while its view of the cluster is stale; the store tells every member,
 * and each leaves it out of the shard assignment meanwhile.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as ClusterError from "effect/cluster/ClusterError"
import type * as ClusterRunner from "effect/cluster/Runner"
import type * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import type * as ShardId from "effect/cluster/ShardId"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Fences from "./fences.ts"

/** What the runner knows about its hold on its shards, without asking the store. */
export interface Service {
  /** The runner, as the store names its sessions (`ShardLock.applicationName`). */
  readonly name: string
  /** The shard groups, in the order their lock keys are numbered. */
  readonly groups: ReadonlyArray<string>
  /**
   * Whether this runner's lock on `shard` was confirmed within half a lease: no other runner can
   * hold it then, whatever happened meanwhile (a pause, a lost connection), since a lock outlives
   * its holder's last word by a whole lease.
   */
  readonly fresh: (shard: ShardId.ShardId) => boolean
  /** Whether the store was unreachable within the last lease. */
  readonly outage: () => boolean
  /** Whether the lock of `shard` was found taken from this runner (not released by it). */
  readonly lost: (shard: ShardId.ShardId) => boolean
  /** How long a lock proven held stays surely held: (lease − time between refreshes) / 2. */
  readonly sendWithin: Duration.Duration
}

/** The lease, as a service: provided with the runner storage that keeps it (`layer`). */
export class Lease extends Context.Service<Lease, Service>()("@toolvisor/cluster/Lease") {}

/** How long between the lock operations the cluster runs (Effect's own rule). */
export const interval = (config: ShardingConfig.ShardingConfig["Service"]): Duration.Duration =>
  Duration.min(
    Duration.fromInputUnsafe(config.shardLockRefreshInterval),
    Duration.divideUnsafe(Duration.fromInputUnsafe(config.shardLockExpiration), 3)
  )

/**
 * Builds the lease and the runner storage that keeps it; `name` is the runner's session name, and
 * `cooldown` how long a runner that joins, or comes back from a pause, takes no shard.
 */
export const make = (name: string, cooldown: Duration.Input) =>
  Effect.gen(function* () {
    const config = yield* ShardingConfig.ShardingConfig
    const sql = yield* SqlClient.SqlClient
    const inner = yield* RunnerStorage.RunnerStorage
    const clock = yield* Clock.Clock
    const scope = yield* Scope.Scope
    const leaseMillis = Duration.toMillis(Duration.fromInputUnsafe(config.shardLockExpiration))
    const every = Duration.toMillis(interval(config))
    const confirmed = new Map<string, number>()
    /** When the store was last found unreachable, and when the outage that includes it began. */
    let unreachableAt: number | undefined
    let outageSince: number | undefined
    /**
     * A runner that was away past its lease (paused, its event loop stuck) has been fenced: its
     * shards went elsewhere, and its own view of who owns what is stale until the cluster has
     * seen it back for a cooldown. Until then it takes no shard.
     */
    const cooldownMillis = Duration.toMillis(Duration.fromInputUnsafe(cooldown))
    let fencedUntil = 0
    yield* Fences.ensure(sql)
    /** The runners that serve unfenced, as the cluster last read them: while another does, a fenced runner takes no shard. */
    let unfenced: ReadonlyArray<RunnerAddress.RunnerAddress> = []
    /** The runners as read before the last outage, and when the store was found reachable again. */
    let beforeOutage: ReadonlyArray<readonly [ClusterRunner.Runner, boolean]> = []
    let reachableAgainAt = Number.NEGATIVE_INFINITY
    let lastRefresh: number | undefined
    /**
     * Fences this runner, and records it in the store (`Fences`), so that no member assigns it a
     * shard meanwhile; without the store, its own refusal to acquire still holds. Recorded apart
     * from the refresh that found it, whose time is short, and again until the store has it.
     */
    const fenced = (address: RunnerAddress.RunnerAddress, at: number, why: string) => {
      const first = at >= fencedUntil
      fencedUntil = at + cooldownMillis
      const record = Fences.record(sql, address, cooldownMillis).pipe(
        Effect.timeout(every),
        Effect.retry(Schedule.spaced(every)),
        Effect.timeout(cooldownMillis),
        Effect.catchCause((cause) => Effect.logWarning("could not record this runner's fence in the store", cause)),
        Effect.forkIn(scope),
        Effect.asVoid
      )
      return first
        ? Effect.andThen(
            Effect.logWarning(
              `${why}: this runner takes no shard for the next ${Duration.format(Duration.millis(cooldownMillis))}`
            ),
            record
          )
        : record
    }

    const now = () => clock.currentTimeMillisUnsafe()
    /** Shards whose lock was found taken from this runner (not released by it). */
    const lostShards = new Set<string>()
    const confirm = (shards: Array<ShardId.ShardId>, at: number) => {
      for (const shard of shards) {
        confirmed.set(shard.toString(), at)
        lostShards.delete(shard.toString())
      }
      return shards
    }

    const lease: Service = {
      name,
      groups: config.availableShardGroups,
      fresh: (shard) => {
        const at = confirmed.get(shard.toString())
        return at !== undefined && now() - at < leaseMillis / 2
      },
      outage: () => unreachableAt !== undefined && now() - unreachableAt < leaseMillis,
      lost: (shard) => lostShards.has(shard.toString()),
      sendWithin: Duration.millis((leaseMillis - every) / 2)
    }

    /**
     * Whether the store answers a plain query: it is down only if the query fails (refused, reset,
     * "starting up"); one that is merely slow (a loaded machine) does not make an outage.
     */
    const down = sql`SELECT 1`.pipe(
      Effect.timeoutOption(every * 0.2),
      Effect.as(false),
      Effect.catchCause(() => Effect.succeed(true))
    )

    const enterOutage = (shards: Array<ShardId.ShardId>) =>
      Effect.suspend(() => {
        const first = !lease.outage()
        unreachableAt = now()
        outageSince ??= unreachableAt
        return first
          ? Effect.as(
              Effect.logWarning(
                "the cluster's store is unreachable: this runner keeps its toolsets running and runs no call that needs the store until it is back"
              ),
              shards
            )
          : Effect.succeed(shards)
      })

    const leaveOutage = Effect.suspend(() => {
      if (unreachableAt === undefined) return Effect.void
      unreachableAt = undefined
      outageSince = undefined
      reachableAgainAt = now()
      return Effect.logInfo("the cluster's store is reachable again")
    })

    /**
     * The locks the refresh found missing, taken again where no one else has them — only those
     * this runner's lease still covered when the store went away (or now, if it did not): their
     * session was lost with the store, not their lease, so no other runner was entitled to them.
     */
    const retake = (
      address: RunnerAddress.RunnerAddress,
      held: ReadonlyArray<ShardId.ShardId>,
      requested: ReadonlyArray<ShardId.ShardId>
    ) => {
      const kept = new Set(held.map(String))
      const since = (outageSince ?? now()) - leaseMillis
      // Shards being released are refreshed too, and have no confirmation any more: not lost.
      const lost = requested.filter((shard) => !kept.has(shard.toString()) && confirmed.has(shard.toString()))
      const missing = lost.filter((shard) => (confirmed.get(shard.toString()) ?? 0) > since)
      const expired = missing.length < lost.length ? fenced(address, now(), "this runner's lease ran out") : Effect.void
      return Effect.andThen(
        expired,
        missing.length === 0
          ? Effect.succeed([...held])
          : Effect.map(inner.acquire(address, missing), (again) => [...held, ...again])
      )
    }

    const refresh: RunnerStorage.RunnerStorage["Service"]["refresh"] = (address, shardIds) => {
      const requested = Array.from(shardIds)
      // Every refresh counts, an empty one too (a runner holding nothing, as one just fenced
      // does): otherwise the first refresh with a shard after a cooldown looks like another pause.
      const asked = now()
      const away = lastRefresh !== undefined && asked - lastRefresh > leaseMillis
      lastRefresh = asked
      const refreshed = Effect.andThen(
        away ? fenced(address, asked, "this runner was away longer than its lease") : Effect.void,
        inner.refresh(address, requested)
      )
      // An empty refresh is also the cluster's own probe of an unhealthy store: passed on as it is.
      if (requested.length === 0) return refreshed
      return refreshed.pipe(
        Effect.flatMap((held) => retake(address, held, requested)),
        Effect.timeout(every * 0.7),
        Effect.flatMap((held) => {
          const kept = new Set(held.map(String))
          for (const shard of requested) {
            const key = shard.toString()
            if (!kept.has(key) && confirmed.has(key)) lostShards.add(key)
            confirmed.delete(key)
          }
          return Effect.as(leaveOutage, confirm(held, asked))
        }),
        Effect.catchCause((cause) =>
          Effect.flatMap(down, (isDown) => {
            if (isDown || lease.outage()) return enterOutage(requested)
            // A lock session that is alive but slow (queued behind releases, a loaded machine)
            // still holds its locks; only a failed one may have lost them, and the cluster
            // retries on a new one.
            return Option.exists(Cause.findErrorOption(cause), Cause.isTimeoutError)
              ? Effect.succeed(requested)
              : Effect.fail(new ClusterError.PersistenceError({ cause: Cause.squash(cause) }))
          })
        )
      )
    }

    /**
     * A runner that joins a cluster its established members serve (there for a cooldown at least;
     * runners starting together are not) is fenced for the cooldown before it registers,
     * in the store, so that every member leaves it out of the assignment for the same time: a
     * client started a moment ago as much as a runner up for hours. (Effect's own join debounce,
     * off here, held a join back only in the views of members that had seen the cluster without
     * it: a new client sent the newcomer calls, which waited out the cooldown for their shards.)
     */
    const joining = (address: RunnerAddress.RunnerAddress) =>
      Effect.flatMap(
        Effect.all([
          inner.getRunners,
          Fences.current(sql),
          Fences.join(sql, address, cooldownMillis).pipe(Effect.orElseSucceed((): ReadonlySet<string> => new Set()))
        ]),
        ([runners, fences, established]) =>
          Fences.apply(runners, fences).some(
            ([runner, up]) => up && !Equal.equals(runner.address, address) && Fences.among(established, runner.address)
          )
            ? Effect.andThen(
                fenced(address, now(), "this runner joins a cluster that others serve"),
                Fences.record(sql, address, cooldownMillis).pipe(Effect.timeout(every), Effect.ignore)
              )
            : Effect.void
      )

    return {
      lease,
      storage: RunnerStorage.RunnerStorage.of({
        ...inner,
        register: (runner, healthy) => Effect.andThen(joining(runner.address), inner.register(runner, healthy)),
        /**
         * The runners, with those seen before an outage kept until a lease after the store is
         * back: a runner's heartbeat is stale then only because the store was away, and the
         * first runner to write one would otherwise see itself alone and take every shard,
         * moving the toolsets that the others are still running. A runner that died meanwhile
         * is dropped a lease later, and its toolsets move then.
         */
        getRunners: Effect.map(Effect.all([inner.getRunners, Fences.current(sql)]), ([runners, fences]) => {
          const recovering = unreachableAt !== undefined || now() - reachableAgainAt < leaseMillis
          if (!recovering) beforeOutage = runners
          const kept = recovering
            ? [
                ...runners,
                ...beforeOutage.filter(
                  ([seen]) => !runners.some(([runner]) => Equal.equals(runner.address, seen.address))
                )
              ]
            : runners
          const shown = Fences.apply(kept, fences)
          unfenced = kept.filter(([runner, up]) => up && !Fences.among(fences, runner.address)).map(([r]) => r.address)
          return shown
        }),
        acquire: (address, shardIds) => {
          const asked = now()
          // Fenced, it waits for the cooldown — unless no other runner serves unfenced (runners that
          // started together may all be: then every member assigns them shards, and they take them).
          if (asked < fencedUntil && unfenced.some((other) => !Equal.equals(other, address))) return Effect.succeed([])
          return Effect.map(inner.acquire(address, shardIds), (held) => confirm(held, asked))
        },
        refresh,
        release: (address, shard) =>
          Effect.andThen(
            Effect.sync(() => {
              confirmed.delete(shard.toString())
              lostShards.delete(shard.toString())
            }),
            inner.release(address, shard)
          ),
        releaseAll: (address) =>
          Effect.andThen(
            Effect.sync(() => confirmed.clear()),
            inner.releaseAll(address)
          )
      })
    }
  })

/**
 * The lease, and the runner storage that keeps it, over Effect's SQL runner storage; `name` is
 * the `application_name` of the runner's sessions.
 */
export const layer = (
  name: string,
  cooldown: Duration.Input
): Layer.Layer<
  Lease | RunnerStorage.RunnerStorage,
  SqlError.SqlError,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig
> =>
  Layer.effectContext(
    Effect.map(make(name, cooldown), ({ lease, storage }) =>
      Context.make(Lease, lease).pipe(Context.add(RunnerStorage.RunnerStorage, storage))
    )
  ).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))
