import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Settings from "../src/Settings.ts"
import * as Timers from "../src/Timers.ts"

const file = (name: string, text: string) => {
  const path = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-settings-")), name)
  NodeFs.writeFileSync(path, text)
  return path
}

describe("cluster settings", () => {
  it.effect("defaults, then the file, then what was given", () =>
    Effect.gen(function* () {
      const path = file("cluster.yaml", "cluster:\n  lease: 20s\n  lease_refresh: 5s\n")
      const timers = yield* Settings.resolve({ file: path, given: { leaseRefresh: "4 seconds" } })
      assert.strictEqual(Duration.toMillis(timers.lease), 20_000)
      assert.strictEqual(Duration.toMillis(timers.leaseRefresh), 4_000)
      assert.strictEqual(
        Duration.toMillis(timers.healthCheck),
        Duration.toMillis(Duration.fromInputUnsafe(Timers.defaults.healthCheck))
      )
    })
  )

  it.effect("JSON works as well as YAML", () =>
    Effect.gen(function* () {
      const timers = yield* Settings.resolve({ file: file("cluster.json", '{ "cluster": { "lease": "8s" } }') })
      assert.strictEqual(Duration.toMillis(timers.lease), 8_000)
    })
  )

  it.effect("a file with an unknown key or a bad duration names the problem and where", () =>
    Effect.gen(function* () {
      const typo = yield* Effect.flip(Settings.resolve({ file: file("a.yaml", "cluster:\n  leese: 8s\n") }))
      assert.include(typo.message, "did you mean `lease`?")
      const bad = yield* Effect.flip(Settings.resolve({ file: file("b.yaml", "cluster:\n  lease: soon\n") }))
      assert.include(bad.message, "cluster.lease")
      const missing = yield* Effect.flip(Settings.resolve({ file: "/nonexistent/cluster.yaml" }))
      assert.include(missing.message, "cannot read it")
    })
  )

  it.effect("timers that cannot work together are refused, every rule at once", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Settings.resolve({ given: { lease: "500 millis", leaseRefresh: "2 seconds", assignmentsRefresh: "1 second" } })
      )
      assert.include(error.message, "lease (--lease): must be at least 1s")
      assert.include(error.message, "lease_refresh (--lease-refresh): must be at most half the lease")
      assert.include(error.message, "assignments_refresh (--assignments-refresh): must be shorter than the lease")
    })
  )

  it("every member compares the same timers; the shutdown grace is each runner's own", () => {
    assert.deepStrictEqual(
      [...Settings.shared].sort(),
      Object.keys(Timers.defaults)
        .filter((k) => k !== "shutdownGrace")
        .sort()
    )
  })
})
