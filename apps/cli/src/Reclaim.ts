/**
 * Hands the garbage of many closed sessions back to the system on an idle gateway. V8 collects its
 * old generation when the heap grows or the process keeps allocating; sessions that expire on a
 * server nobody calls do neither, so their memory (tens of kilobytes each) would stay resident
 * until the next burst of traffic. After closing many at once, the gateway asks for a collection.
 */
import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import * as Effect from "effect/Effect"

/** V8's full collection, reached without `--expose-gc` on the command line; undefined where refused. */
const collector = ((): (() => void) | undefined => {
  try {
    NodeV8.setFlagsFromString("--expose-gc")
    const gc: unknown = NodeVm.runInNewContext("gc")
    return typeof gc === "function" ? () => void gc() : undefined
  } catch {
    return undefined
  }
})()

/** How many closed sessions make a collection worth its pause (tens of milliseconds on a large heap). */
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
