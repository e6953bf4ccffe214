/**
 * How the registry routes a call once its catalog is kept: the route follows the toolsets when a
 * reload replaces one, and every routed call is recorded in the metrics under its toolset.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import { config, fixtureEntry, open, text } from "../../../test/support/Registry.ts"
import * as Telemetry from "../src/Telemetry.ts"

describe("call routing", () => {
  it.live("a call right after a reload that replaced its toolset reaches the new process", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("one")]))
      yield* registry.start
      const before = text(yield* registry.callTool("pid", {}))
      // The route of "pid" is kept now; the reload must not leave it pointing at the old toolset.
      yield* registry.reload(config([fixtureEntry("one", { env: { CHANGED: "1" } })]))
      const after = text(yield* registry.callTool("pid", {}))
      assert.notStrictEqual(after, before)
      assert.strictEqual(after, text(yield* registry.callTool("pid", {})))
      yield* close
    })
  )

  it.live("every routed call records its latency under its toolset, and a failure its error tag", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("alpha")]))
      yield* registry.start
      yield* registry.callTool("echo", { message: "one" })
      yield* registry.callTool("echo", { message: "two" })
      // The server exits in the middle of the call: its fate is unknown and the tool is not read-only.
      const crashed = yield* Effect.flip(registry.callTool("crash", {}))
      const latency = yield* Metric.value(Metric.withAttributes(Telemetry.callLatency, { toolset: "alpha" }))
      const failures = yield* Metric.value(
        Metric.withAttributes(Telemetry.callFailures, { toolset: "alpha", tag: crashed._tag })
      )
      assert.strictEqual(latency.count, 3)
      assert.strictEqual(failures.count, 1)
      yield* close
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
  )

  it.live("a call interrupted in flight (a client's cancellation) is recorded as Interrupted", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("alpha")]))
      yield* registry.start
      // The route is kept now: the next call runs at once up to the request it sends.
      yield* registry.callTool("echo", { message: "one" })
      for (const options of [undefined, { _meta: { trace: "t-1" } }, { onProgress: () => undefined }]) {
        const call = yield* Effect.forkChild(registry.callTool("sleep", { ms: 60_000 }, undefined, options), {
          startImmediately: true
        })
        yield* Fiber.interrupt(call)
      }
      const latency = yield* Metric.value(Metric.withAttributes(Telemetry.callLatency, { toolset: "alpha" }))
      const interrupted = yield* Metric.value(
        Metric.withAttributes(Telemetry.callFailures, { toolset: "alpha", tag: "Interrupted" })
      )
      assert.strictEqual(latency.count, 4)
      assert.strictEqual(interrupted.count, 3)
      yield* close
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
  )
})
