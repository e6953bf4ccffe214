import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { config, fixtureEntry, open, replay, statusOf, text, untilBoard } from "./helpers.ts"

const agent = (
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>,
  extra: Partial<AgentConfig.AgentSpec> = {}
): AgentConfig.AgentSpec => ({ name: "root", toolsets: toolsets.map((t) => t.identity), ...extra })

const pids = (board: ReadonlyArray<{ readonly pid?: number | undefined }>) =>
  board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))

describe("registry.searchTools and deferral", () => {
  it.live(
    "deferred tools are marked, found by search and called by name through supervision; instructions come with the server's",
    () =>
      Effect.gen(function* () {
        const toolsets = [fixtureEntry("fx", { prefix: "fx" }), replay("rp", ["memory", "slack"])]
        const offers = { "mcp/fx": { defer: true, instruction: "Use fx_echo to test the wire." } }
        const { registry, close } = yield* open(config(toolsets, [agent(toolsets, { offers })]))
        yield* registry.start
        const catalog = yield* registry.catalog()
        const fx = catalog.tools.filter((e) => e.toolset === "fx")
        assert.isAbove(fx.length, 5)
        assert.isTrue(fx.every((e) => e.deferred === true))
        assert.isTrue(catalog.tools.filter((e) => e.toolset === "rp").every((e) => e.deferred !== true))
        assert.deepStrictEqual(catalog.instructions, [
          { toolset: "fx", text: "Use fx_echo to test the wire.\n\nFixture tools for tests." },
          { toolset: "rp", text: "Replays the tools of memory, slack." }
        ])

        const found = yield* registry.searchTools("sleep for a while")
        assert.strictEqual(found.hits[0]?.name, "fx_sleep")
        assert.isTrue(found.hits[0]?.deferred)
        const slack = yield* registry.searchTools("post a message to a slack channel", { limit: 3 })
        assert.strictEqual(slack.hits[0]?.name, "rp_slack_slack_post_message")
        assert.isAtMost(slack.hits.length, 3)
        const selected = yield* registry.searchTools("select:fx_echo,rp_memory_read_graph")
        assert.deepStrictEqual(
          selected.hits.map((h) => [h.name, h.deferred]),
          [
            ["fx_echo", true],
            ["rp_memory_read_graph", false]
          ]
        )

        // Deferral changes what is offered, not what works.
        assert.strictEqual(text(yield* registry.callTool("fx_echo", { message: "deferred" })), "deferred")
        assert.include(text(yield* registry.callTool("rp_slack_slack_post_message", { text: "hi" })), "replayed")
        const started = pids(yield* registry.snapshot)
        yield* close
        for (const pid of started) assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )

  it.live("a lazy toolset that never listed is started by a search, and its tools are found", () =>
    Effect.gen(function* () {
      const toolsets = [fixtureEntry("fx", { prefix: "fx" }), replay("lz", ["memory"], { lazy: true })]
      const { registry, close } = yield* open(config(toolsets))
      yield* registry.start
      assert.strictEqual((yield* statusOf(registry, "lz"))?.state, "Stopped")
      const found = yield* registry.searchTools("create new entities in the knowledge graph")
      assert.strictEqual(found.hits[0]?.name, "lz_memory_create_entities")
      assert.strictEqual((yield* statusOf(registry, "lz"))?.state, "Ready")
      yield* close
    })
  )

  it.live("a restarting toolset's last-known tools are still found", () =>
    Effect.gen(function* () {
      const toolsets = [
        fixtureEntry("fx", { prefix: "fx", lifecycle: { backoff: { initial: "30s", max: "30s" } } }),
        replay("rp", ["slack"])
      ]
      const { registry, close } = yield* open(config(toolsets))
      yield* registry.start
      assert.strictEqual((yield* registry.searchTools("sleep for a while")).hits[0]?.name, "fx_sleep")
      yield* Effect.ignore(registry.callTool("fx_crash", {}))
      yield* untilBoard(registry, (board) => board.some((s) => s.name === "fx" && s.state === "Restarting"))
      const catalog = yield* registry.catalog()
      assert.isTrue(catalog.tools.some((e) => e.name === "fx_sleep" && e.lastKnown))
      assert.strictEqual((yield* registry.searchTools("sleep for a while")).hits[0]?.name, "fx_sleep")
      yield* close
    })
  )

  it.live(
    "a reload that changes only defer moves the catalog's version and catalogChanges reports it; no server restarts",
    () =>
      Effect.gen(function* () {
        const toolsets = [fixtureEntry("fx", { prefix: "fx" }), replay("rp", ["memory"])]
        const before = config(toolsets)
        const { registry, close } = yield* open(before)
        yield* registry.start
        const first = yield* registry.catalog()
        const started = pids(yield* registry.snapshot)
        const diff = yield* registry.reload(
          config(toolsets, [
            agent(toolsets, { offers: { "mcp/rp": { defer: ["memory_read_graph", "rp_memory_open_nodes"] } } })
          ])
        )
        assert.deepStrictEqual([diff.added, diff.removed, diff.changed], [[], [], []])
        const next = yield* registry.catalogChanges().pipe(
          Stream.filter((c) => c.version !== first.version),
          Stream.runHead
        )
        assert.strictEqual(next._tag, "Some")
        const catalog = yield* registry.catalog()
        assert.isAbove(catalog.version, first.version)
        assert.deepStrictEqual(
          catalog.tools.filter((e) => e.deferred === true).map((e) => e.name),
          ["rp_memory_read_graph", "rp_memory_open_nodes"]
        )
        assert.isTrue((yield* registry.searchTools("select:rp_memory_read_graph")).hits[0]?.deferred)
        assert.deepStrictEqual(pids(yield* registry.snapshot), started)
        yield* close
      })
  )

  it.live("defer_above defers the whole catalog past the threshold but the tools a tools: list names", () =>
    Effect.gen(function* () {
      const toolsets = [fixtureEntry("fx", { prefix: "fx", tools: ["fx_echo"] }), replay("rp", ["memory", "slack"])]
      const { registry, close } = yield* open(config(toolsets, [agent(toolsets, { deferAbove: 10 })]))
      yield* registry.start
      const catalog = yield* registry.catalog()
      assert.strictEqual(catalog.tools.length, 18)
      assert.deepStrictEqual(
        catalog.tools.filter((e) => e.deferred !== true).map((e) => e.name),
        ["fx_echo"]
      )
      yield* close
    })
  )
})
