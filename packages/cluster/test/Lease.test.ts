/**
 * The lease's fence, on the test clock: a runner that was away past its lease takes no shard for
 * the rebalance cooldown, once — the refreshes of a runner that holds nothing (as one that was
 * just fenced does) count as refreshes, so the first one with a shard after the cooldown is not
 * taken for another pause. The store behind the wrapped runner storage is Effect's in-memory one;
 * PostgreSQL is there only for the store's health query, which these refreshes never need.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Runner from "effect/cluster/Runner"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardId from "effect/cluster/ShardId"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { TestClock } from "effect/testing"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as Lease from "../src/internal/lease.ts"
import * as Postgres from "./Postgres.ts"

const self = RunnerAddress.make("127.0.0.1", 24531)
const other = RunnerAddress.make("127.0.0.1", 24532)
const shard = (id: number) => ShardId.make("default", id)

const store = Layer.unwrap(Effect.map(Postgres.Postgres, ({ url }) => ClusterClient.database(url, "lease test"))).pipe(
  Layer.provideMerge(Postgres.layer)
)

/** A lease of 10 s refreshed every second, a cooldown of 30 s, and two healthy runners in view. */
const lease = Effect.gen(function* () {
  const inner = yield* RunnerStorage.makeMemory
  const made = yield* Lease.make("runner lease test").pipe(
    Effect.provideService(RunnerStorage.RunnerStorage, inner),
    Effect.provide(
      ShardingConfig.layer({
        shardLockExpiration: "10 seconds",
        shardLockRefreshInterval: "1 second",
        runnerJoinDebounce: "30 seconds"
      })
    )
  )
  for (const address of [self, other]) {
    yield* inner.register(Runner.make({ address, groups: ["default"], weight: 1 }), true)
  }
  yield* made.storage.getRunners
  return made.storage
})

/** Refreshes `shards` every second for `seconds`, as the cluster's lock loop does. */
const refreshFor = (
  storage: RunnerStorage.RunnerStorage["Service"],
  seconds: number,
  shards: ReadonlyArray<ShardId.ShardId>
) =>
  Effect.forEach(
    Array.from({ length: seconds }),
    () => Effect.andThen(TestClock.adjust("1 second"), storage.refresh(self, shards)),
    { discard: true }
  )

describe("the lease's fence", () => {
  layer(store, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a runner back from a pause sits out one cooldown, not two", () =>
      Effect.gen(function* () {
        const storage = yield* lease
        assert.deepStrictEqual(yield* storage.acquire(self, [shard(1)]), [shard(1)])
        yield* refreshFor(storage, 3, [shard(1)])

        // Paused past its lease: back, it refreshes its shard, is fenced, and holds nothing after.
        yield* TestClock.adjust("15 seconds")
        yield* storage.refresh(self, [shard(1)])
        yield* refreshFor(storage, 10, [])
        assert.deepStrictEqual(yield* storage.acquire(self, [shard(2)]), [], "took a shard during its cooldown")

        // The cooldown is over: it takes a shard, refreshes it, and is not fenced again.
        yield* refreshFor(storage, 21, [])
        assert.deepStrictEqual(yield* storage.acquire(self, [shard(2)]), [shard(2)])
        yield* refreshFor(storage, 2, [shard(2)])
        assert.deepStrictEqual(yield* storage.acquire(self, [shard(3)]), [shard(3)], "fenced a second time")
      }).pipe(Effect.provide(TestClock.layer()))
    )
  })
})
