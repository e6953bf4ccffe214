/**
 * The registry where calls meet supervision, against real fixture processes: a call made during a
 * restart waits and succeeds, a tool of a failed toolset names its toolset's error, a call made
 * during a first start waits for it, stop ends first-start retries, the catalog's version holds
 * across a restart, and shutdown closes every toolset at once.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { config, fixtureEntry, fixtureServer, open, statusOf, text, untilBoard } from "./helpers.ts"

const pidOf = (registry: Parameters<typeof statusOf>[0], toolset: string) =>
  Effect.map(statusOf(registry, toolset), (s) => {
    if (s?.pid === undefined) throw new Error(`${toolset} has no pid`)
    return s.pid
  })

describe("calls through restarts", () => {
  it.live("a call made right after a crash waits for the restart and succeeds on the new process", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("ev", { lifecycle: { backoff: { initial: "300ms" } } })])
      )
      yield* registry.start
      const before = yield* pidOf(registry, "ev")
      process.kill(before, "SIGKILL")
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "ev" && s.state === "Restarting"))
      const during = yield* registry.catalog()
      assert.isFalse(during.complete)
      assert.deepInclude(
        during.tools.filter((t) => t.name === "pid").map((t) => t.lastKnown),
        true
      )
      const after = text(yield* registry.callTool("pid", {}))
      assert.notStrictEqual(after, String(before))
      assert.strictEqual(after, String(yield* pidOf(registry, "ev")))
      yield* close
    })
  )

  it.live("the catalog's version holds across a restart that brings back the same tools", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("ev")]))
      yield* registry.start
      const first = yield* registry.catalog()
      process.kill(yield* pidOf(registry, "ev"), "SIGKILL")
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "ev" && s.state === "Restarting"))
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "ev" && s.state === "Ready"))
      const back = yield* registry.catalog()
      assert.isTrue(back.complete)
      assert.strictEqual(back.version, first.version)
      const grown = yield* registry.catalogChanges().pipe(
        Stream.filter((c) => c.version !== first.version),
        Stream.runHead,
        Effect.forkChild({ startImmediately: true })
      )
      yield* registry.callTool("add_tool", {})
      const changed = Option.getOrThrow(yield* Fiber.join(grown))
      assert.strictEqual(changed.version, first.version + 1)
      assert.include(
        changed.tools.map((t) => t.name),
        "dynamic_1"
      )
      yield* close
    })
  )

  it.live("a tool of a failed toolset fails at once with that toolset's error, not UnknownTool", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("ev", { lifecycle: { restart: "never" } })]))
      yield* registry.start
      process.kill(yield* pidOf(registry, "ev"), "SIGKILL")
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "ev" && s.state === "Failed"))
      const error = yield* Effect.flip(registry.callTool("echo", { message: "hi" }))
      assert.strictEqual(error._tag, "NotStarted")
      assert.include(error.message, "ev")
      assert.include(error.message, "SIGKILL")
      const unknown = yield* Effect.flip(registry.callTool("no_such_tool", {}))
      assert.strictEqual(unknown._tag, "UnknownTool")
      yield* close
    })
  )

  it.live("a call made while the first start is in flight waits for it instead of UnknownTool", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("slow", { delay: 1 })]))
      const started = yield* Effect.forkChild(registry.start, { startImmediately: true })
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "slow" && s.state === "Starting"))
      const answer = yield* registry.callTool("echo", { message: "waited" })
      assert.strictEqual(text(answer), "waited")
      yield* Fiber.join(started)
      yield* close
    })
  )
})

describe("stop means stop", () => {
  it.live("stop during first-start retries: the server becoming available does not bring it back", () =>
    Effect.gen(function* () {
      const backoffMs = 100
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-stop-"))
      const binary = NodePath.join(dir, "server")
      const starts = NodePath.join(dir, "starts")
      const { registry, close } = yield* open(
        config([
          fixtureEntry("late", {
            command: binary,
            env: { FIXTURE_STARTS_FILE: starts },
            lifecycle: { backoff: { initial: `${backoffMs}ms`, max: `${backoffMs}ms` }, max_restarts: -1 }
          })
        ])
      )
      yield* registry.start
      yield* untilBoard(registry, (b) => b.some((s) => s.name === "late" && s.state === "Restarting"))
      yield* registry.stopToolset("late")
      NodeFs.writeFileSync(binary, `#!/bin/sh\nexec "${process.execPath}" "${fixtureServer}"\n`, { mode: 0o755 })
      // Nothing signals a retry that never comes, so this waits on the wall clock: ten backoff
      // periods, by which a retry left running would have started the server.
      yield* Effect.sleep(Duration.millis(10 * backoffMs))
      assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Stopped")
      assert.isFalse(NodeFs.existsSync(starts))
      yield* registry.startToolset("late")
      assert.strictEqual(NodeFs.readFileSync(starts, "utf8").trim().split("\n").length, 1)
      yield* close
    })
  )
})

describe("shutdown", () => {
  it.live(
    "closing the registry closes every toolset at once: five SIGSTOPped servers take one grace, not five",
    () =>
      Effect.gen(function* () {
        const names = ["a", "b", "c", "d", "e"]
        const { registry, close } = yield* open(config(names.map((name) => fixtureEntry(name))))
        yield* registry.start
        const pids = yield* Effect.forEach(names, (name) => pidOf(registry, name))
        for (const pid of pids) process.kill(pid, "SIGSTOP")
        const started = Date.now()
        yield* close
        const took = Date.now() - started
        assert.isBelow(took, 5_000)
        for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid), `server ${pid} is still alive`)
      }),
    30_000
  )
})
