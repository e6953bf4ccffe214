/**
 * The dashboard's call statistics, read from the metrics the call path records: one-minute
 * buckets of calls, failures and latency quantiles per toolset, the bucket in progress included,
 * an hour kept and no more. TestClock drives the buckets; each test has its own metric registry.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { TestClock } from "effect/testing"
import * as Telemetry from "../src/Telemetry.ts"
import * as ToolsetStats from "../src/ToolsetStats.ts"

/** A test with a metric registry of its own, so other tests' calls do not count. */
const isolated = <A, E>(effect: Effect.Effect<A, E>) => Effect.provideService(effect, Metric.MetricRegistry, new Map())

/** `n` calls of `millis` each on `toolset`, `failed` of them failing. */
const calls = (toolset: string, n: number, millis: number, failed = 0) => {
  const recorder = Telemetry.callRecorder(toolset)
  return Effect.forEach(
    Array.from({ length: n }, (_, i) => i),
    (i) =>
      Effect.map(Effect.context<never>(), (context) =>
        recorder.recordUnsafe(millis, i < failed ? "ToolCallFailed" : undefined, context)
      ),
    { discard: true }
  )
}

describe("ToolsetStats", () => {
  it("interpolates quantiles inside a histogram's buckets, and stops at the unbounded one", () => {
    const buckets = [
      [1, 0],
      [2, 50],
      [4, 100],
      [Number.POSITIVE_INFINITY, 100]
    ] as const
    assert.strictEqual(ToolsetStats.quantile(buckets, 0.5), 2)
    assert.strictEqual(ToolsetStats.quantile(buckets, 0.25), 1.5)
    assert.strictEqual(ToolsetStats.quantile(buckets, 0.99), 3.96)
    assert.isNull(ToolsetStats.quantile([[1, 0]], 0.5))
    assert.strictEqual(
      ToolsetStats.quantile(
        [
          [8, 1],
          [Number.POSITIVE_INFINITY, 10]
        ],
        0.99
      ),
      8
    )
  })

  it.effect("shows calls in the bucket in progress at once, then keeps each minute as a bucket of its own", () =>
    isolated(
      Effect.scoped(
        Effect.gen(function* () {
          const stats = yield* ToolsetStats.make()
          yield* calls("fx", 10, 3, 2)
          yield* TestClock.adjust("30 seconds")
          const early = (yield* stats.series).fx ?? []
          assert.strictEqual(early.length, 1)
          assert.deepInclude(early[0], { at: 0, seconds: 30, calls: 10, failures: 2 })
          // All ten took 3 ms: inside the (2, 4] bucket.
          const p50 = early[0]?.p50 ?? 0
          assert.isTrue(p50 > 2 && p50 <= 4, `p50 ${p50}`)

          yield* TestClock.adjust("30 seconds")
          yield* calls("fx", 4, 100)
          yield* TestClock.adjust("15 seconds")
          const later = (yield* stats.series).fx ?? []
          assert.deepStrictEqual(
            later.map((p) => [p.at, p.seconds, p.calls, p.failures]),
            [
              [0, 60, 10, 2],
              [60_000, 15, 4, 0]
            ]
          )
          const slow = later[1]?.p99 ?? 0
          assert.isTrue(slow > 64 && slow <= 128, `p99 ${slow}`)
          assert.isNull((yield* stats.series).other ?? null)
        })
      )
    )
  )

  it.effect("keeps one hour of buckets per toolset, no more", () =>
    isolated(
      Effect.scoped(
        Effect.gen(function* () {
          const stats = yield* ToolsetStats.make()
          for (let minute = 0; minute < 90; minute++) {
            yield* calls("fx", minute + 1, 1)
            yield* TestClock.adjust("1 minute")
          }
          const points = (yield* stats.series).fx ?? []
          assert.strictEqual(points.length, 60)
          // The oldest kept is minute 30 (31 calls); the newest closed one is minute 89 (90 calls).
          assert.strictEqual(points[0]?.calls, 31)
          assert.strictEqual(points[0]?.at, 30 * 60_000)
          assert.strictEqual(points.at(-1)?.calls, 90)
        })
      )
    )
  )

  it.effect("counts a toolset's calls only from when the stats began", () =>
    isolated(
      Effect.scoped(
        Effect.gen(function* () {
          yield* calls("fx", 5, 1, 5)
          const stats = yield* ToolsetStats.make()
          yield* calls("fx", 1, 1)
          yield* TestClock.adjust("1 second")
          const [point] = (yield* stats.series).fx ?? []
          assert.deepInclude(point, { calls: 1, failures: 0 })
        })
      )
    )
  )
})
