import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Redaction, ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import {
  config,
  fixtureEntry,
  fixtureServer,
  open,
  statusOf,
  text,
  untilBoard
} from "../../../test/support/Registry.ts"

const pidsOf = (board: ReadonlyArray<{ readonly pid?: number | undefined }>) =>
  board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))

describe("ToolsetRegistry.make", () => {
  it.live("ten servers that each take a second to boot start in parallel, well under the sum", () =>
    Effect.gen(function* () {
      const entries = Array.from({ length: 10 }, (_, i) => fixtureEntry(`slow${i}`, { delay: 1, prefix: `slow${i}` }))
      const { registry, close } = yield* open(config(entries))
      const started = Date.now()
      yield* registry.start
      const took = Date.now() - started
      const board = yield* registry.snapshot
      assert.strictEqual(board.filter((s) => s.state === "Ready").length, 10)
      // The sleeps alone add up to 10 s when serial; under 9 s they overlapped, even with the
      // 2-core machine busy with the rest of the suite (about 7 s seen then, 3 s when quiet).
      assert.isBelow(took, 9_000, `took ${took} ms; serial would be over 10 s`)
      const pids = pidsOf(board)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.isAlive(pid))
    })
  )

  it.live("a required toolset that hangs fails the start with one error naming it and InitTimeout", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([
          fixtureEntry("fine"),
          fixtureEntry("stuck", {
            env: { FIXTURE_MODE: "hang" },
            lifecycle: { profile: "strict", startup_timeout: "1s" }
          })
        ])
      )
      const error = yield* Effect.flip(registry.start)
      assert.strictEqual(error._tag, "StartFailed")
      assert.deepStrictEqual(
        error.failures.map((f) => [f.toolset, f.tag]),
        [["stuck", "InitTimeout"]]
      )
      assert.include(error.message, "stuck")
      assert.strictEqual((yield* statusOf(registry, "fine"))?.state, "Ready")
      yield* close
    })
  )

  it.live("an optional toolset that fails does not fail the start", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("fine"), fixtureEntry("broken", { command: "toolvisor-no-such-binary" })])
      )
      yield* registry.start
      assert.strictEqual((yield* statusOf(registry, "fine"))?.state, "Ready")
      assert.strictEqual((yield* statusOf(registry, "broken"))?.lastError?.tag, "ServerUnavailable")
      yield* close
    })
  )

  it.live("the catalog keeps config order and prefixes; a collision goes to the first toolset", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("a", { prefix: "a" }), fixtureEntry("plain"), fixtureEntry("twin")])
      )
      yield* registry.start
      const catalog = yield* registry.catalog()
      assert.isTrue(catalog.complete)
      const names = catalog.tools.map((t) => t.name)
      assert.strictEqual(names[0], "a_echo")
      assert.include(names, "echo")
      assert.strictEqual(catalog.tools.find((t) => t.name === "echo")?.toolset, "plain")
      assert.isTrue(catalog.shadowed.some((s) => s.name === "echo" && s.toolset === "twin" && s.shadowedBy === "plain"))
      assert.strictEqual(text(yield* registry.callTool("a_echo", { message: "routed" })), "routed")
      yield* close
    })
  )

  it.live("the allow-list hides tools; an unknown tool is a typed error with near names", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("fx", { prefix: "fx", tools: ["fx_echo", "fx_pid"] })])
      )
      yield* registry.start
      const catalog = yield* registry.catalog()
      assert.deepStrictEqual(catalog.tools.map((t) => t.name).sort(), ["fx_echo", "fx_pid"])
      const error = yield* Effect.flip(registry.callTool("echo", { message: "x" }))
      assert.strictEqual(error._tag, "UnknownTool")
      if (error._tag === "UnknownTool") assert.include(error.near, "fx_echo")
      // A caller's 100 KB name is not echoed whole, nor compared whole with every name.
      const long = yield* Effect.flip(registry.callTool("q".repeat(100_000), {}))
      assert.isBelow(long.message.length, 400)
      assert.include(long.message, "(100000 characters)")
      yield* close
    })
  )

  it.live("a tool another agent offers is unknown to this one, and the error names the agent that offers it", () =>
    Effect.gen(function* () {
      const fx = fixtureEntry("fx", { prefix: "fx" })
      const rv = fixtureEntry("rv", { prefix: "rv" })
      const { registry, close } = yield* open(
        config(
          [fx, rv],
          [
            { name: "coder", toolsets: [fx.identity] },
            { name: "reviewer", toolsets: [rv.identity] }
          ]
        )
      )
      yield* registry.start
      // "no tool named" alone, while status showed the toolset Ready, read as a lie.
      const error = yield* Effect.flip(registry.callTool("rv_echo", { message: "x" }))
      assert.strictEqual(error._tag, "UnknownTool")
      assert.include(error.message, 'agent "reviewer" offers it')
      assert.strictEqual(text(yield* registry.callTool("rv_echo", { message: "x" }, "reviewer")), "x")
      yield* close
    })
  )

  it.live("a stopped toolset's tools leave the catalog, which says why, and come back when it starts", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("one", { prefix: "one" }), fixtureEntry("two", { prefix: "two" })])
      )
      yield* registry.start
      yield* registry.stopToolset("two")
      const partial = yield* registry.catalog()
      assert.isFalse(partial.complete)
      assert.deepStrictEqual(
        partial.missing.map((m) => [m.toolset, m.state]),
        [["two", "Stopped"]]
      )
      assert.isFalse(partial.tools.some((t) => t.toolset === "two"))
      yield* registry.startToolset("two")
      const whole = yield* registry.catalog()
      assert.isTrue(whole.complete)
      assert.isTrue(whole.tools.some((t) => t.name === "two_echo"))
      const unknown = yield* Effect.flip(registry.restartToolset("three"))
      assert.strictEqual(unknown._tag, "UnknownToolset")
      yield* close
    })
  )

  it.live("the status stream sees every transition of a crash and restart, in order", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("crashy")]))
      const seen = yield* registry.events.pipe(
        Stream.filter((e) => e.toolset === "crashy"),
        Stream.map((e) => `${e.from}→${e.snapshot.state}`),
        Stream.take(4),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* registry.start
      const pid = (yield* statusOf(registry, "crashy"))?.pid ?? 0
      process.kill(pid, "SIGKILL")
      assert.deepStrictEqual(yield* Fiber.join(seen), [
        "Stopped→Starting",
        "Starting→Ready",
        "Ready→Restarting",
        "Restarting→Ready"
      ])
      const board = yield* untilBoard(registry, (b) => b.some((s) => s.name === "crashy" && s.state === "Ready"))
      assert.notStrictEqual(board[0]?.pid, pid)
      yield* close
    })
  )

  it.live("reload starts added, stops removed, restarts changed and leaves an unchanged toolset's process alone", () =>
    Effect.gen(function* () {
      const keep = fixtureEntry("keep")
      const { registry, close } = yield* open(config([keep, fixtureEntry("change"), fixtureEntry("drop")]))
      yield* registry.start
      const before = yield* registry.snapshot
      const pid = (name: string, board: typeof before) => board.find((s) => s.name === name)?.pid
      const diff = yield* registry.reload(
        config([keep, fixtureEntry("change", { env: { CHANGED: "1" } }), fixtureEntry("new")])
      )
      assert.deepStrictEqual(
        [diff.added.map((t) => t.name), diff.removed.map((t) => t.name), diff.changed.map((c) => c.after.name)],
        [["new"], ["drop"], ["change"]]
      )
      const after = yield* untilBoard(registry, (b) => b.length === 3 && b.every((s) => s.state === "Ready"))
      assert.strictEqual(pid("keep", after), pid("keep", before))
      assert.notStrictEqual(pid("change", after), pid("change", before))
      assert.isFalse(ServerProcess.isAlive(pid("drop", before) ?? 0))
      assert.deepStrictEqual(
        after.map((s) => s.name),
        ["keep", "change", "new"]
      )
      yield* close
    })
  )

  it.live("a toolset shared by two agents runs as one process; each agent sees only its own catalog", () =>
    Effect.gen(function* () {
      const shared = fixtureEntry("shared", { prefix: "shared" })
      const own = fixtureEntry("own", { prefix: "own" })
      const { registry, close } = yield* open(
        config(
          [shared, own],
          [
            { name: "alpha", toolsets: [shared.identity] },
            { name: "beta", toolsets: [shared.identity, own.identity] }
          ]
        ),
        { agent: "alpha" }
      )
      yield* registry.start
      const board = yield* registry.snapshot
      assert.strictEqual(board.length, 2)
      const alpha = yield* registry.catalog("alpha")
      const beta = yield* registry.catalog("beta")
      assert.isFalse(alpha.tools.some((t) => t.toolset === "own"))
      assert.isTrue(beta.tools.some((t) => t.toolset === "own"))
      assert.isTrue(alpha.tools.some((t) => t.name === "shared_echo"))
      const error = yield* Effect.flip(registry.callTool("own_echo", { message: "x" }))
      assert.strictEqual(error._tag, "UnknownTool")
      assert.strictEqual(text(yield* registry.callTool("own_echo", { message: "beta" }, "beta")), "beta")
      yield* close
    })
  )

  it.live("a lazy toolset is not started with the others; the first call that needs it starts it", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("eager"), fixtureEntry("later", { lazy: true, prefix: "later" })])
      )
      yield* registry.start
      assert.strictEqual((yield* statusOf(registry, "later"))?.state, "Stopped")
      const catalog = yield* registry.catalog()
      assert.deepStrictEqual(
        catalog.missing.map((m) => m.toolset),
        ["later"]
      )
      assert.strictEqual(text(yield* registry.callTool("later_echo", { message: "woke" })), "woke")
      assert.strictEqual((yield* statusOf(registry, "later"))?.state, "Ready")
      yield* close
    })
  )

  it.live("reprobe brings back a toolset whose server became available, and reports a failure once per streak", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-reprobe-"))
      const script = NodePath.join(dir, "server.sh")
      // best-effort: no background retries of its own, so only reprobe can bring it back
      const entry = fixtureEntry("late", { command: script, lifecycle: { profile: "best-effort" } })
      const { registry, close } = yield* open(config([entry]))
      yield* registry.start
      assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Stopped")
      const first = yield* registry.reprobe
      assert.deepStrictEqual(
        first.failing.map((f) => f.toolset),
        ["late"]
      )
      NodeFs.writeFileSync(script, `#!/bin/sh\nexec "${process.execPath}" "${fixtureServer}"\n`, { mode: 0o755 })
      const second = yield* registry.reprobe
      assert.deepStrictEqual(second.recovered, ["late"])
      assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Ready")
      yield* close
    })
  )

  it.live("reprobe cuts short the backoff of a toolset retrying its first start", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-reprobe-"))
      const script = NodePath.join(dir, "server.sh")
      const entry = fixtureEntry("late", {
        command: script,
        lifecycle: { backoff: { initial: "1h", max: "1h" } }
      })
      const { registry, close } = yield* open(config([entry]))
      yield* registry.start
      assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Restarting")
      NodeFs.writeFileSync(script, `#!/bin/sh\nexec "${process.execPath}" "${fixtureServer}"\n`, { mode: 0o755 })
      const report = yield* registry.reprobe
      assert.deepStrictEqual(report.recovered, ["late"])
      assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Ready")
      yield* close
    })
  )

  it.live("secrets from the environment never appear in status", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([
          fixtureEntry("leaky", {
            command: "/nonexistent/sk-live-abcdef123456/server",
            secrets: ["sk-live-abcdef123456"]
          })
        ])
      )
      yield* registry.start
      const status = yield* statusOf(registry, "leaky")
      assert.isDefined(status?.lastError)
      assert.notInclude(JSON.stringify(status), "sk-live-abcdef123456")
      yield* close
    })
  )
})

describe("ToolsetRegistry.make log lines", () => {
  it.live("a secret a server prints where JSON-RPC belongs is masked in the warning about it, for every logger", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ message, logLevel }) => {
      if (logLevel === "Warn") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    const secret = "Zx9kQ2mP7vL4nR8tY1wE"
    return Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([
          fixtureEntry("noisy", {
            env: { FIXTURE_MODE: "noisy", FIXTURE_BANNER: `booting with ${secret}` },
            secrets: [secret]
          })
        ])
      )
      yield* registry.start
      while (!warnings.some((w) => w.includes("not JSON-RPC"))) yield* Effect.sleep("10 millis")
      const warning = warnings.find((w) => w.includes("not JSON-RPC")) ?? ""
      // Its producer masks credential shapes only: the value stood in the warning as the server wrote it.
      assert.notInclude(warning, secret)
      assert.include(warning, `booting with ${Redaction.mask}`)
      yield* close
    }).pipe(Effect.provide(Logger.layer([capture], { mergeWithExisting: true })))
  })
})

describe("ToolsetRegistry.make allow-lists", () => {
  it.live("an allow-list entry that matches no tool of a Ready toolset is a warning naming it", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ message, logLevel }) => {
      if (logLevel === "Warn") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    return Effect.gen(function* () {
      const { registry, close } = yield* open(config([fixtureEntry("fx", { tools: ["echo", "ehco"] })]))
      yield* registry.start
      const catalog = yield* registry.catalog()
      assert.deepStrictEqual(
        catalog.tools.map((t) => t.name),
        ["echo"]
      )
      while (!warnings.some((w) => w.includes('"ehco"'))) yield* Effect.sleep("10 millis")
      const warning = warnings.find((w) => w.includes('"ehco"')) ?? ""
      // One entry, the typo, with the name it was meant as; "echo" matched and is no entry of it.
      assert.include(warning, 'fx: tools allow-list entry "ehco" (did you mean "echo"?) matches no tool it offers')
      yield* close
    }).pipe(Effect.provide(Logger.layer([capture], { mergeWithExisting: true })))
  })
})
