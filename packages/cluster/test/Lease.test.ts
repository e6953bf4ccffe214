/**
 * The lease's fence: a runner that was away past its lease takes no shard for the rebalance
 * cooldown, and every member leaves it out of the shard assignment meanwhile (so no shard waits,
 * unowned, for a runner that would refuse it). The store behind the wrapped runner storage is
 * Effect's in-memory one, shared by the members of a test; the fences are in a real PostgreSQL.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Runner from "effect/cluster/Runner"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardId from "effect/cluster/ShardId"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as SqlClient from "effect/sql/SqlClient"
import { TestClock } from "effect/testing"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as Fences from "../src/internal/fences.ts"
import * as Lease from "../src/internal/lease.ts"
import * as Postgres from "./Postgres.ts"

const shard = (id: number) => ShardId.make("default", id)

const store = Layer.unwrap(Effect.map(Postgres.Postgres, ({ url }) => ClusterClient.database(url, "lease test"))).pipe(
  Layer.provideMerge(Postgres.layer)
)

/** The members' runner storage, as Effect's in-memory one with `addresses` registered healthy. */
const members = (addresses: ReadonlyArray<RunnerAddress.RunnerAddress>) =>
  Effect.gen(function* () {
    const inner = yield* RunnerStorage.makeMemory
    for (const address of addresses) {
      yield* inner.register(Runner.make({ address, groups: ["default"], weight: 1 }), true)
    }
    return inner
  })

/** A member's lease over `inner`: a 10 s lease refreshed every second, and `cooldown`. */
const lease = (inner: RunnerStorage.RunnerStorage["Service"], name: string, cooldown: Duration.Input) =>
  Effect.gen(function* () {
    const { storage } = yield* Lease.make(name, cooldown).pipe(
      Effect.provideService(RunnerStorage.RunnerStorage, inner),
      Effect.provide(ShardingConfig.layer({ shardLockExpiration: "10 seconds", shardLockRefreshInterval: "1 second" }))
    )
    yield* storage.getRunners
    return storage
  })

/** Refreshes `shards` every second for `seconds`, as the cluster's lock loop does. */
const refreshFor = (
  storage: RunnerStorage.RunnerStorage["Service"],
  self: RunnerAddress.RunnerAddress,
  seconds: number,
  shards: ReadonlyArray<ShardId.ShardId>
) =>
  Effect.forEach(
    Array.from({ length: seconds }),
    () => Effect.andThen(TestClock.adjust("1 second"), storage.refresh(self, shards)),
    { discard: true }
  )

/** Whether `storage` shows the runner at `address` healthy. */
const healthyIn = (storage: RunnerStorage.RunnerStorage["Service"], address: RunnerAddress.RunnerAddress) =>
  Effect.map(storage.getRunners, (runners) =>
    runners.some(([runner, up]) => up && runner.address.port === address.port)
  )

/** Polls on the real clock (the fence is written apart, dated by the store) until `storage` shows `address` so. */
const shownHealthy = (
  storage: RunnerStorage.RunnerStorage["Service"],
  address: RunnerAddress.RunnerAddress,
  healthy: boolean
) =>
  TestClock.withLive(
    healthyIn(storage, address).pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (up) => up === healthy }),
      Effect.timeout("5 seconds")
    )
  )

/** Holds a runner away past its lease: back, it refreshes the shard it held and is fenced. */
const pause = (storage: RunnerStorage.RunnerStorage["Service"], self: RunnerAddress.RunnerAddress) =>
  Effect.gen(function* () {
    assert.deepStrictEqual(yield* storage.acquire(self, [shard(1)]), [shard(1)])
    yield* refreshFor(storage, self, 3, [shard(1)])
    yield* TestClock.adjust("15 seconds")
    yield* storage.refresh(self, [shard(1)])
  })

describe("the lease's fence", () => {
  layer(store, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect(
      "a runner back from a pause sits out one cooldown, not two, and no member assigns it a shard meanwhile",
      () =>
        Effect.gen(function* () {
          const self = RunnerAddress.make("127.0.0.1", 24531)
          const other = RunnerAddress.make("127.0.0.1", 24532)
          const inner = yield* members([self, other])
          const storage = yield* lease(inner, "runner 127.0.0.1:24531", "30 seconds")
          const peer = yield* lease(inner, "runner 127.0.0.1:24532", "30 seconds")
          yield* pause(storage, self)
          // Out of the assignment, in its peer's view and its own: nothing is assigned to it to wait for.
          yield* shownHealthy(peer, self, false)
          assert.isFalse(yield* healthyIn(storage, self))
          assert.isTrue(yield* healthyIn(peer, other))
          yield* refreshFor(storage, self, 10, [])
          assert.deepStrictEqual(yield* storage.acquire(self, [shard(2)]), [], "took a shard during its cooldown")

          // The cooldown is over: it takes a shard, refreshes it, and is not fenced again. (Its
          // refreshes while it held nothing counted: the first with a shard is no "pause".)
          yield* refreshFor(storage, self, 21, [])
          assert.deepStrictEqual(yield* storage.acquire(self, [shard(2)]), [shard(2)])
          yield* refreshFor(storage, self, 2, [shard(2)])
          assert.deepStrictEqual(yield* storage.acquire(self, [shard(3)]), [shard(3)], "fenced a second time")
        }).pipe(Effect.provide(TestClock.layer()))
    )

    it.effect("a fenced runner still serves when no other runner is healthy, and rejoins once its fence ends", () =>
      Effect.gen(function* () {
        const self = RunnerAddress.make("127.0.0.1", 24533)
        const other = RunnerAddress.make("127.0.0.1", 24534)
        const inner = yield* members([self, other])
        const storage = yield* lease(inner, "runner 127.0.0.1:24533", "1 second")
        yield* pause(storage, self)
        yield* shownHealthy(storage, self, false)
        yield* inner.setRunnerHealth(other, false)
        assert.isTrue(yield* healthyIn(storage, self), "no runner left to serve")
        yield* inner.setRunnerHealth(other, true)
        // The other fenced too (runners started together): every member assigns them shards, and they take them.
        const sql = yield* SqlClient.SqlClient
        for (const runner of [self, other]) yield* Fences.record(sql, runner, 30_000)
        yield* Effect.ignore(storage.getRunners)
        assert.deepStrictEqual(yield* storage.acquire(self, [shard(6)]), [shard(6)], "no runner takes the shards")
        for (const runner of [self, other]) yield* Fences.record(sql, runner, 0)
        // The fence's end is the store's clock: a second after it began, it is shown healthy again.
        yield* shownHealthy(storage, self, true)
      }).pipe(Effect.provide(TestClock.layer()))
    )

    it.effect(
      "a runner that joins a cluster others serve sits out the cooldown in every member's view, a new client's too; the first does not",
      () =>
        Effect.gen(function* () {
          const [first, late] = [RunnerAddress.make("127.0.0.1", 24535), RunnerAddress.make("127.0.0.1", 24536)]
          const runner = (address: RunnerAddress.RunnerAddress) =>
            Runner.make({ address, groups: ["default"], weight: 1 })
          const inner = yield* members([])
          const sql = yield* SqlClient.SqlClient
          const a = yield* lease(inner, "runner 127.0.0.1:24535", "30 seconds")
          yield* a.register(runner(first), true)
          assert.isTrue(yield* healthyIn(a, first))
          assert.deepStrictEqual(yield* a.acquire(first, [shard(4)]), [shard(4)])
          // Runners that start together fence none of them: the first is not established yet.
          const b = yield* lease(inner, "runner 127.0.0.1:24536", "30 seconds")
          yield* b.register(runner(late), true)
          assert.isTrue(yield* healthyIn(b, late))
          // The first has served for longer than a cooldown: the next to (re)join sits one out.
          yield* sql`UPDATE toolvisor_runner_joins SET joined = now() - interval '1 minute' WHERE address = '127.0.0.1:24535'`
          yield* b.register(runner(late), true)
          // Fenced before it registered: no member, however new, ever saw it serve.
          const client = Fences.apply(yield* inner.getRunners, yield* Fences.current(sql))
          assert.deepStrictEqual(
            client.map(([r, up]) => [r.address.port, up]),
            [
              [24535, true],
              [24536, false]
            ]
          )
          assert.isFalse(yield* healthyIn(a, late))
          assert.isFalse(yield* healthyIn(b, late))
          assert.deepStrictEqual(yield* b.acquire(late, [shard(5)]), [], "took a shard during its cooldown")
        }).pipe(Effect.provide(TestClock.layer()))
    )
  })
})
