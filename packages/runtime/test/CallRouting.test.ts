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

  it.live("calls made while a reload replaces their toolset wait for the new one; the name is never unknown", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("one")]))
      yield* registry.start
      const before = text(yield* registry.callTool("pid", {}))
      // A call in flight keeps the old server alive past its stdin's end: its stop takes a while.
      const held = yield* Effect.forkChild(Effect.result(registry.callTool("sleep", { ms: 5_000 })), {
        startImmediately: true
      })
      const reload = yield* Effect.forkChild(
        registry.reload(config([fixtureEntry("one", { env: { CHANGED: "1" } })])),
        { startImmediately: true }
      )
      const answers: Array<string> = []
      while (reload.pollUnsafe() === undefined) {
        const result = yield* Effect.result(registry.callTool("pid", {}))
        assert.strictEqual(result._tag, "Success", result._tag === "Failure" ? result.failure.message : "")
        if (result._tag === "Success") answers.push(text(result.success))
        // The toolset answers at once; the loop asks again until the reload is over.
        yield* Effect.yieldNow
      }
      yield* Fiber.join(reload)
      assert.isAbove(answers.length, 0)
      assert.notInclude(answers, before, "a call reached the replaced server")
      assert.strictEqual((yield* registry.snapshot).find((s) => s.name === "one")?.state, "Ready")
      yield* Fiber.join(held)
      yield* close
    })
  )

  it.live(
    "a reload does not wait for what it started: one that adds a server hanging in initialize holds up no later one",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([fixtureEntry("one")]))
        yield* registry.start
        const hang = fixtureEntry("hang", { env: { FIXTURE_MODE: "hang" }, lifecycle: { startup_timeout: "0" } })
        yield* registry.reload(config([fixtureEntry("one"), hang]))
        // The user sees it hang, removes it and adds another: applied at once, not never.
        const diff = yield* registry
          .reload(config([fixtureEntry("one"), fixtureEntry("two")]))
          .pipe(Effect.timeoutOption("5 seconds"))
        assert.strictEqual(diff._tag, "Some", "the second reload waited for the hanging start")
        const board = yield* registry.snapshot
        assert.deepStrictEqual(
          board.map((s) => s.name),
          ["one", "two"]
        )
        yield* close
      })
  )

  it.live("a reload whose config lost the agent the registry serves is refused whole; calls go on", () =>
    Effect.gen(function* () {
      const one = fixtureEntry("one")
      const { registry, close } = yield* open(config([one]))
      yield* registry.start
      const renamed = config([one, fixtureEntry("two")], [{ name: "main", toolsets: [one.identity] }])
      const refused = yield* Effect.flip(registry.reload(renamed))
      assert.strictEqual(refused._tag, "UnknownAgent")
      assert.include(refused.message, 'the new config has no agent "root"')
      assert.deepStrictEqual(
        (yield* registry.snapshot).map((s) => s.name),
        ["one"]
      )
      assert.isNotEmpty(text(yield* registry.callTool("pid", {})))
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
