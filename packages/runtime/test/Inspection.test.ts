/**
 * `registry.inspect` over real fixture servers: the tools a toolset offers under its prefix and
 * allow-list, the policy it runs on, and the stderr of its latest server — kept after the server
 * died, with the config's secrets masked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Policy } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Toolsets from "../src/Toolsets.ts"
import { config, fixtureEntry, open, untilBoard } from "./helpers.ts"

describe("registry.inspect", () => {
  it.live("a crash-looping server's last stderr, kept after it died and masked, with the policy it gave up by", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([
          fixtureEntry("loop", {
            env: { FIXTURE_EXIT_AFTER_MS: "300" },
            lifecycle: { max_restarts: 1, backoff: { initial: "100ms", max: "100ms" } },
            secrets: ["gave up on purpose"]
          })
        ])
      )
      yield* Effect.ignore(registry.start)
      yield* untilBoard(registry, (board) => board.some((s) => s.name === "loop" && s.state === "Failed"))
      const inspection = yield* registry.inspect("loop")
      const stderr = (inspection.stderr ?? []).join("\n")
      assert.include(stderr, "Error: fixture")
      assert.include(stderr, "(FIXTURE_EXIT_AFTER_MS)")
      assert.notInclude(stderr, "gave up on purpose")
      assert.strictEqual(inspection.policy.maxRestarts, 1)
      assert.deepStrictEqual(inspection.tools, { complete: false, names: [] })
      yield* close
    })
  )

  it.live("a Ready toolset's offered tools by the names the agent sees, after its allow-list", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(
        config([fixtureEntry("fx", { prefix: "fx", tools: ["fx_echo", "fx_pid"] })])
      )
      yield* registry.start
      const inspection = yield* registry.inspect("fx")
      assert.deepStrictEqual(inspection.tools, { complete: true, names: ["fx_echo", "fx_pid"] })
      assert.deepStrictEqual(inspection.stderr, [])
      const unknown = yield* Effect.flip(registry.inspect("nope"))
      assert.strictEqual(unknown._tag, "UnknownToolset")
      yield* close
    })
  )

  it("the policy shown is the one the transport runs: a remote server reconnects after a clean close and is probed", () => {
    const policy = Toolsets.policyOf({
      type: "mcp",
      transport: { _tag: "http", url: "https://tools.example/mcp", headers: {} },
      policy: Policy.defaults
    })
    assert.strictEqual(policy.restart, "always")
    assert.strictEqual(Duration.toMillis(policy.health?.interval ?? Duration.zero), 15_000)
    const local = Toolsets.policyOf({ type: "mcp", transport: fixtureEntry("fx").transport, policy: Policy.defaults })
    assert.strictEqual(local, Policy.defaults)
  })
})
