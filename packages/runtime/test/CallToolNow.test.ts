/**
 * `callToolNow`, the call a Promise host (the MCP gateway) makes without entering the Effect
 * runtime, against real fixture processes: it answers as `callTool` does and is timed into the
 * same metrics; a crash in flight is recovered as `callTool` recovers it (a non-idempotent call
 * fails with the crash, recorded once; a read-only one is sent again); a cancelled call ends
 * interrupted; and whenever the call would have to wait, or a tracer wants its span, it is left
 * to `callTool`.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as Tracer from "effect/Tracer"
import * as Telemetry from "../src/Telemetry.ts"
import type * as ToolsetRegistry from "../src/ToolsetRegistry.ts"
import { config, fixtureEntry, open, statusOf, text, untilBoard } from "./helpers.ts"

/** The call as a promise the test can await; fails the test when the call was not sent at once. */
const now = (registry: ToolsetRegistry.Registry, tool: string, args: object, signal?: AbortSignal) =>
  Effect.promise(() => {
    const sent = registry.callToolNow(tool, { ...args }, undefined, signal)
    if (sent === undefined) throw new Error(`${tool} was not sent at once`)
    return sent
  })

const pidOf = (registry: ToolsetRegistry.Registry, toolset: string) =>
  Effect.map(statusOf(registry, toolset), (s) => {
    if (s?.pid === undefined) throw new Error(`${toolset} has no pid`)
    return s.pid
  })

const callsOf = (toolset: string) =>
  Effect.map(Metric.value(Metric.withAttributes(Telemetry.callLatency, { toolset })), (h) => h.count)

const errorOf = <A, E>(exit: Exit.Exit<A, E>) => {
  if (Exit.isSuccess(exit)) throw new Error("the call succeeded")
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag === "None") throw new Error(`no typed error: ${Cause.pretty(exit.cause)}`)
  return error.value
}

describe("callToolNow", () => {
  it.live("answers as callTool does, and is timed into the same call metrics", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("cn")]))
      yield* registry.start
      yield* registry.catalog()
      const before = yield* callsOf("cn")
      const exit = yield* now(registry, "echo", { message: "at once" })
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.strictEqual(text(exit.value), "at once")
      assert.deepStrictEqual(exit, Exit.succeed(yield* registry.callTool("echo", { message: "at once" })))
      assert.strictEqual(yield* callsOf("cn"), before + 2)
      const failed = yield* now(registry, "fail", {})
      assert.isTrue(Exit.isSuccess(failed) && failed.value.isError === true)
      yield* close
    })
  )

  it.live("a non-idempotent call in flight at a SIGKILL fails with the crash, recorded once", () =>
    Effect.gen(function* () {
      // The fixture writes each call it receives to a file: the kill comes once the call is in
      // flight, not before it was written (a call that never reached the server may be resent).
      const calls = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-calls-")), "calls")
      const arrived = (tool: string) =>
        Effect.sync(
          () => NodeFs.existsSync(calls) && NodeFs.readFileSync(calls, "utf8").split("\n").includes(tool)
        ).pipe(Effect.repeat({ until: (done) => done, schedule: Schedule.spaced("10 millis") }))
      const { registry, close } = yield* open(config([fixtureEntry("cn", { env: { FIXTURE_CALLS_FILE: calls } })]))
      yield* registry.start
      yield* registry.catalog()
      const pid = yield* pidOf(registry, "cn")
      const pending = registry.callToolNow("sleep", { ms: 10_000 })
      assert.isDefined(pending)
      yield* arrived("sleep")
      process.kill(pid, "SIGKILL")
      const error = errorOf(yield* Effect.promise(() => pending ?? Promise.reject()))
      assert.strictEqual(error._tag, "ServerCrashed")
      assert.include(error.message, "SIGKILL")
      const back = yield* untilBoard(registry, (b) => b.some((s) => s.name === "cn" && s.state === "Ready"))
      assert.strictEqual(
        (yield* statusOf(registry, "cn"))?.restarts,
        1,
        `one crash, one restart: ${JSON.stringify(back)}`
      )
      yield* close
    })
  )

  it.live("a read-only call in flight at a SIGKILL is sent again on the next session", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("cn")]))
      yield* registry.start
      yield* registry.catalog()
      const pid = yield* pidOf(registry, "cn")
      const pending = registry.callToolNow("slow_read", { ms: 1_000 })
      assert.isDefined(pending)
      process.kill(pid, "SIGKILL")
      const exit = yield* Effect.promise(() => pending ?? Promise.reject())
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.strictEqual(text(exit.value), "read after 1000")
      assert.notStrictEqual(yield* pidOf(registry, "cn"), pid)
      yield* close
    })
  )

  it.live("a cancelled call ends interrupted", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("cn")]))
      yield* registry.start
      yield* registry.catalog()
      const controller = new AbortController()
      const pending = now(registry, "sleep", { ms: 10_000 }, controller.signal)
      controller.abort()
      const exit = yield* pending
      assert.isTrue(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))
      assert.strictEqual((yield* statusOf(registry, "cn"))?.state, "Ready")
      yield* close
    })
  )

  it.live("a call that would wait (restarting) or fail (unknown) is left to callTool", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("cn", { lifecycle: { backoff: { initial: "500ms" } } })])
      )
      yield* registry.start
      yield* registry.catalog()
      assert.isUndefined(registry.callToolNow("no_such_tool", {}))
      process.kill(yield* pidOf(registry, "cn"), "SIGKILL")
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "cn" && s.state === "Restarting"))
      assert.isUndefined(registry.callToolNow("echo", { message: "restarting" }))
      assert.strictEqual(text(yield* registry.callTool("echo", { message: "waited" })), "waited")
      yield* close
    })
  )

  it.live("with a tracer installed, every call goes through callTool and its span", () =>
    Effect.gen(function* () {
      const tracer = Tracer.make({ span: (options) => Tracer.nativeTracer.span(options) })
      const { registry, close } = yield* open(config([fixtureEntry("cn")])).pipe(
        Effect.provideService(Tracer.Tracer, tracer)
      )
      yield* registry.start
      yield* registry.catalog()
      assert.isUndefined(registry.callToolNow("echo", { message: "traced" }))
      yield* close
    })
  )
})
