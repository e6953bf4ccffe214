import { assert, describe, layer } from "@effect/vitest"
import * as ShardId from "effect/cluster/ShardId"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as CallLedger from "../src/internal/callLedger.ts"
import * as Lease from "../src/internal/lease.ts"
import * as ShardLock from "../src/internal/shardLock.ts"
import * as Settings from "../src/Settings.ts"
import * as Postgres from "./Postgres.ts"

const member = "runner 127.0.0.1:34431"
const groups = ["default"]
const shard = ShardId.make("default", 7)

/** The ledger of a runner named `member` on the database at `url`, whose sessions carry that name. */
const ledgerAt = (url: string, member: string) =>
  CallLedger.layerSql.pipe(
    Layer.provideMerge(
      Layer.succeed(Lease.Lease, {
        name: ShardLock.applicationName(member),
        groups,
        fresh: () => true,
        outage: () => false,
        lost: () => false,
        sendWithin: Duration.seconds(1)
      })
    ),
    Layer.provideMerge(ClusterClient.database(url, member))
  )

const ledger = Layer.unwrap(Effect.map(Postgres.Postgres, ({ url }) => ledgerAt(url, member))).pipe(
  Layer.provideMerge(Postgres.layer)
)

/** Holds `shard`'s lock, as Effect's runner storage takes it, on one of this runner's sessions. */
const holdShard = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection = yield* sql.reserve
  const key = `${ShardLock.namespaceKey}, ${ShardLock.lockNumber(shard, groups)}`
  const [taken] = yield* Effect.acquireRelease(
    connection.executeValues(`SELECT pg_try_advisory_lock(${key})`, []),
    () => Effect.ignore(connection.executeValues(`SELECT pg_advisory_unlock(${key})`, []))
  )
  assert.deepStrictEqual(taken, [true])
})

const entry = (requestId: string, runner = "127.0.0.1:34431") => ({
  requestId,
  toolset: "notes",
  tool: "append",
  runner,
  shard
})

describe("the call ledger in PostgreSQL", () => {
  layer(ledger, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a runner that does not hold the toolset's shard cannot start a call", () =>
      Effect.gen(function* () {
        const { begin } = yield* CallLedger.CallLedger
        assert.deepStrictEqual(yield* begin(entry("0999")), { _tag: "NotOwner" })
      })
    )

    it.effect("a request id starts once; a second begin gets the first start back", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* holdShard
          const { begin } = yield* CallLedger.CallLedger
          assert.deepStrictEqual(yield* begin(entry("1001")), { _tag: "Started" })
          const again = yield* begin(entry("1001", "127.0.0.1:34432"))
          assert.strictEqual(again._tag, "Repeated")
          assert.strictEqual(again._tag === "Repeated" ? again.runner : undefined, "127.0.0.1:34431")
          const { lookup } = yield* CallLedger.CallLedger
          assert.strictEqual((yield* lookup("1001"))?.runner, "127.0.0.1:34431")
          assert.isUndefined(yield* lookup("1002"))
        })
      )
    )

    it.effect("of many runners racing to start one request, exactly one wins", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* holdShard
          const { begin } = yield* CallLedger.CallLedger
          const outcomes = yield* Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i),
            (i) => begin(entry("2002", `runner-${i}`)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(outcomes.filter((o) => o._tag === "Started").length, 1)
        })
      )
    )

    it.effect(
      "members starting at once on a fresh database all find Toolvisor's tables made, none fails making them",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { url } = yield* Postgres.Postgres
          const timers = yield* Settings.resolve({})
          // A few fresh databases: one concurrent `CREATE TABLE IF NOT EXISTS` too many fails at random.
          for (const round of [1, 2, 3]) {
            yield* sql.unsafe(`CREATE DATABASE fresh_${round}`)
            const fresh = url.replace(/\/postgres$/, `/fresh_${round}`)
            yield* Effect.forEach(
              Array.from({ length: 8 }, (_, i) => `runner 127.0.0.1:${35000 + i}`),
              (name) =>
                Effect.scoped(
                  Effect.andThen(Layer.build(ledgerAt(fresh, name)), (context) =>
                    Settings.agree(timers, name).pipe(Effect.provideContext(context))
                  )
                ),
              { concurrency: "unbounded", discard: true }
            )
          }
        })
    )
  })
})
