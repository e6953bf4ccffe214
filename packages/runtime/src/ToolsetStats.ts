/**
 * Each toolset's tool calls over the last hour, in one-minute buckets — calls, failures, p50 and
 * p99 latency — for the dashboard's charts. Read from the metrics `Telemetry` already records on
 * every call (the latency histogram and the failure counter), sampled once per bucket, so the
 * call path pays nothing more; the bucket in progress is read when asked for, so a call shows at
 * once. The ring holds one hour per toolset: its memory is bounded whatever the call rate.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import * as Telemetry from "./Telemetry.ts"

/** One bucket of one toolset's calls. */
export interface Point {
  /** When the bucket began, in epoch milliseconds of the Effect `Clock`. */
  readonly at: number
  /** How long it covers, in seconds: the last one is still filling. */
  readonly seconds: number
  readonly calls: number
  /** Calls that failed (a tool's own `isError` answer is a result, not a failure). */
  readonly failures: number
  /** Latency quantiles in milliseconds, interpolated in the histogram's buckets; null without calls. */
  readonly p50: number | null
  readonly p99: number | null
}

export interface Stats {
  /** The bucket length, in milliseconds. */
  readonly bucketMillis: number
  /** Each called toolset's buckets of the last hour, oldest first, the one in progress last. */
  readonly series: Effect.Effect<Readonly<Record<string, ReadonlyArray<Point>>>>
}

export interface Options {
  /** One bucket; a minute by default. */
  readonly bucket?: Duration.Input
  /** How far back the buckets reach; an hour by default. */
  readonly window?: Duration.Input
}

/** What the metrics hold for one toolset, counted since they began. */
interface Totals {
  calls: number
  failures: number
  /** The latency histogram's `[boundary, cumulative count]` pairs. */
  buckets: ReadonlyArray<readonly [number, number]>
}

/** Every toolset's call totals, from one snapshot of the metrics. */
const totalsOf = (snapshots: ReadonlyArray<Metric.Metric.Snapshot>): Map<string, Totals> => {
  const totals = new Map<string, Totals>()
  const of = (toolset: string) => {
    let found = totals.get(toolset)
    if (found === undefined) {
      found = { calls: 0, failures: 0, buckets: [] }
      totals.set(toolset, found)
    }
    return found
  }
  for (const s of snapshots) {
    const toolset = s.attributes?.toolset
    if (toolset === undefined) continue
    if (s.id === Telemetry.callLatency.id && s.type === "Histogram") {
      const entry = of(toolset)
      entry.calls = s.state.count
      entry.buckets = s.state.buckets
    } else if (s.id === Telemetry.callFailures.id && s.type === "Counter") {
      of(toolset).failures += Number(s.state.count)
    }
  }
  return totals
}

/**
 * The `q` quantile of a histogram given as `[boundary, cumulative count]` pairs, interpolated
 * linearly inside its bucket (as Prometheus' `histogram_quantile` does); in the last, unbounded
 * bucket it is that bucket's lower bound. Null for an empty histogram.
 */
export const quantile = (buckets: ReadonlyArray<readonly [number, number]>, q: number): number | null => {
  const total = buckets.at(-1)?.[1] ?? 0
  if (total === 0) return null
  const rank = q * total
  let lower = 0
  let below = 0
  for (const [bound, cumulative] of buckets) {
    if (cumulative >= rank) {
      if (!Number.isFinite(bound)) return lower
      return lower + ((bound - lower) * (rank - below)) / (cumulative - below)
    }
    lower = bound
    below = cumulative
  }
  return lower
}

/** The calls between two readings of one toolset's totals. */
const between = (at: number, until: number, now: Totals, before: Totals | undefined): Point => {
  const buckets = now.buckets.map(([bound, cumulative], i): readonly [number, number] => [
    bound,
    cumulative - (before?.buckets[i]?.[1] ?? 0)
  ])
  return {
    at,
    seconds: (until - at) / 1000,
    calls: now.calls - (before?.calls ?? 0),
    failures: now.failures - (before?.failures ?? 0),
    p50: quantile(buckets, 0.5),
    p99: quantile(buckets, 0.99)
  }
}

/** Starts sampling the current context's metrics; closing the scope stops it. */
export const make = (options: Options = {}): Effect.Effect<Stats, never, Scope.Scope> =>
  Effect.gen(function* () {
    const bucket = Duration.fromInputUnsafe(options.bucket ?? Duration.minutes(1))
    const bucketMillis = Duration.toMillis(bucket)
    const capacity = Math.max(1, Math.ceil(Duration.toMillis(options.window ?? Duration.hours(1)) / bucketMillis))
    const read = Effect.map(Metric.snapshot, totalsOf)
    const rings = new Map<string, Array<Point>>()
    let last = { at: yield* Clock.currentTimeMillis, totals: yield* read }

    const close = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const totals = yield* read
      for (const [toolset, t] of totals) {
        const ring = rings.get(toolset) ?? []
        ring.push(between(last.at, now, t, last.totals.get(toolset)))
        if (ring.length > capacity) ring.splice(0, ring.length - capacity)
        rings.set(toolset, ring)
      }
      last = { at: now, totals }
    })
    yield* Effect.sleep(bucket).pipe(Effect.andThen(close), Effect.forever, Effect.forkScoped)

    const series = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const totals = yield* read
      const result: Record<string, ReadonlyArray<Point>> = {}
      for (const [toolset, t] of totals) {
        const closed = rings.get(toolset) ?? []
        // The bucket in progress, except right at its start: a window of one hour, not one more.
        const current = now > last.at ? [between(last.at, now, t, last.totals.get(toolset))] : []
        result[toolset] = [...closed.slice(current.length > 0 && closed.length >= capacity ? 1 : 0), ...current]
      }
      return result
    })
    return { bucketMillis, series }
  })
