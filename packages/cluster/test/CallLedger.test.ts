import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as CallLedger from "../src/CallLedger.ts"
import * as ClusterClient from "../src/ClusterClient.ts"
import * as Postgres from "./Postgres.ts"

const ledger = Layer.unwrap(
  Effect.map(Postgres.Postgres, ({ url }) => CallLedger.layerSql.pipe(Layer.provide(ClusterClient.database(url))))
).pipe(Layer.provide(Postgres.layer))

describe("the call ledger in PostgreSQL", () => {
  layer(ledger, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("a request id starts once; a second begin gets the first start back", () =>
      Effect.gen(function* () {
        const { begin } = yield* CallLedger.CallLedger
        const entry = { requestId: "1001", toolset: "notes", tool: "append", runner: "127.0.0.1:34431" }
        assert.isUndefined(yield* begin(entry))
        const again = yield* begin({ ...entry, runner: "127.0.0.1:34432" })
        assert.strictEqual(again?.runner, "127.0.0.1:34431")
        assert.instanceOf(again?.startedAt, Date)
      })
    )

    it.effect("of many runners racing to start one request, exactly one wins", () =>
      Effect.gen(function* () {
        const { begin } = yield* CallLedger.CallLedger
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => begin({ requestId: "2002", toolset: "notes", tool: "append", runner: `runner-${i}` }),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(outcomes.filter((o) => o === undefined).length, 1)
      })
    )
  })
})
