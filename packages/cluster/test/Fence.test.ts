/**
 * The fence's sweep against a real PostgreSQL: a toolset whose shard another member holds is
 * stopped — also while the lease still counts an outage, which it does for a lease after the
 * store was last unreachable. A store restart drops every lock; when another runner takes one
 * the moment the store is back, the toolset here must stop then, not a lease later (the 10-minute
 * soak had two live owners for 3 s that way). And a toolset leaving a runner has its server asked
 * to finish only while the store itself says this runner holds the shard, not the lease.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as ShardId from "effect/cluster/ShardId"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as Fence from "../src/internal/fence.ts"
import * as Lease from "../src/internal/lease.ts"
import * as ShardLock from "../src/internal/shardLock.ts"
import * as Postgres from "./Postgres.ts"

const groups = ["default"]
const shard = ShardId.make("default", 11)
/** The member whose session takes the lock: the runner the toolset moved to. */
const other = "runner 127.0.0.1:34432"

/** A lease that is not fresh and still counts an outage: a runner just after the store came back. */
const afterOutage: Lease.Service = {
  name: ShardLock.applicationName("runner 127.0.0.1:34431"),
  groups,
  fresh: () => false,
  outage: () => true,
  lost: () => false,
  sendWithin: Duration.seconds(1)
}

const store = Layer.unwrap(Effect.map(Postgres.Postgres, ({ url }) => ClusterClient.database(url, other))).pipe(
  Layer.provideMerge(Postgres.layer)
)

/** A fence over a lease named `name` that it trusts as fresh: what a runner believes before the store is asked. */
const fenceOf = (name: string) =>
  Fence.make({ interval: "100 millis" }).pipe(
    Effect.provideService(Lease.Lease, { ...afterOutage, name, fresh: () => true, outage: () => false })
  )

/** Takes `shard`'s lock as Effect's runner storage does, on a session of `other`, until the scope closes. */
const takeShard = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection = yield* sql.reserve
  const key = `${ShardLock.namespaceKey}, ${ShardLock.lockNumber(shard, groups)}`
  yield* Effect.acquireRelease(connection.executeValues(`SELECT pg_try_advisory_lock(${key})`, []), () =>
    Effect.ignore(connection.executeValues(`SELECT pg_advisory_unlock(${key})`, []))
  )
})

describe("the fence", () => {
  layer(store, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("stops a toolset whose shard another runner took, even while the lease counts an outage", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const fence = yield* Fence.make({ interval: "100 millis" }).pipe(
            Effect.provideService(Lease.Lease, afterOutage)
          )
          const lost = yield* Deferred.make<string>()
          yield* fence.host({
            shard,
            name: "notes",
            onLost: (holder) => Deferred.succeed(lost, holder).pipe(Effect.asVoid),
            halt: Effect.void
          })
          // Nobody holds it yet (between owners): nothing is stopped.
          yield* Effect.sleep("300 millis")
          assert.isFalse(yield* Deferred.isDone(lost))
          const taken = Date.now()
          yield* takeShard
          const holder = yield* Deferred.await(lost).pipe(Effect.timeout("2 seconds"))
          assert.strictEqual(holder, other)
          assert.isBelow(Date.now() - taken, 1000)
        })
      )
    )

    it.effect("a toolset leaving is asked to finish only while the store says this runner holds its shard", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const halted = (verdicts: Array<string>) => (verdict: Fence.Verdict) =>
            Effect.sync(() => {
              verdicts.push(verdict._tag)
            })
          // Nobody holds it (a store restart dropped the lock), though the lease looks fresh: killed at once.
          const dropped: Array<string> = []
          const mine = yield* fenceOf(ShardLock.applicationName(other))
          yield* mine.release(
            shard,
            Effect.sync(() => dropped.push("stopped")),
            halted(dropped)
          )
          assert.deepStrictEqual(dropped, ["Unowned"])

          // Held by this runner's session: asked to finish, and killed once the lock is gone mid-way.
          const lock = yield* Scope.make()
          yield* takeShard.pipe(Scope.provide(lock))
          const during: Array<string> = []
          const finishing = yield* Deferred.make<void>()
          const releasing = yield* mine
            .release(shard, Deferred.await(finishing), halted(during))
            .pipe(Effect.forkChild({ startImmediately: true }))
          yield* Effect.sleep("300 millis")
          assert.deepStrictEqual(during, [], "killed while this runner held the lock")
          const gone = Date.now()
          yield* Scope.close(lock, Exit.void)
          yield* Effect.sync(() => during.length).pipe(
            Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (n) => n > 0 }),
            Effect.timeout("2 seconds")
          )
          assert.deepStrictEqual(during, ["Unowned"])
          assert.isBelow(Date.now() - gone, 1000)
          yield* Deferred.succeed(finishing, undefined)
          yield* Fiber.join(releasing)
        })
      )
    )
  })
})
