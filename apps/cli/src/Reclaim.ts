/**
 * Hands the garbage of many closed sessions back to the system on an idle gateway. V8 collects its
 * old generation when the heap grows or the process keeps allocating; sessions that expire on a
 * server nobody calls do neither, so their memory (tens of kilobytes each) would stay resident
 * until the next burst of traffic. After closing many at once, the gateway asks for a collection.
 *
 * An ordinary full collection is not enough: it frees the sessions' objects but V8 keeps the
 * emptied pages pooled, and the grown new space at its size, until its memory reducer runs on an
 * idle heuristic — 10 to 20 s later in some runs, never in others (3,000 expired sessions: heap
 * 28 MiB used, RSS still 265 MiB). The last-resort collection V8 makes under memory pressure
 * also releases those pages and shrinks the new space: RSS 98–103 MiB, as before the sessions.
 */
import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import * as Effect from "effect/Effect"

/** V8's memory-reducing full collection, reached without `--expose-gc` on the command line; undefined where refused. */
const collector = ((): (() => void) | undefined => {
  try {
    NodeV8.setFlagsFromString("--expose-gc")
    const gc: unknown = NodeVm.runInNewContext("gc")
    return typeof gc === "function"
      ? () => void gc({ type: "major", execution: "sync", flavor: "last-resort" })
      : undefined
  } catch {
    return undefined
  }
})()

/**
 * How many closed sessions make a collection worth its pause: two or more full collections, 0.1 to
 * 0.3 s after 3,000 sessions on a loaded 2-core machine, 70 ms on a heap with little garbage.
 */
export const threshold = 100

/**
 * Counts closed sessions; once `threshold` have closed since the last collection, collects at the
 * next call. A sweep calls it once with all it closed, so the collection comes a sweep later:
 * right after the close, a session is still reachable from the tasks that finish closing it, and
 * a collection then would only move its garbage to where an idle process never looks again.
 */
export const make = () => {
  let closed = 0
  let due = false
  return (count: number): Effect.Effect<void> =>
    Effect.sync(() => {
      if (due && collector !== undefined) collector()
      due = false
      closed += count
      if (closed < threshold) return
      closed = 0
      due = true
    })
}
