/**
 * The deferred-tools part of `bench:ai` (issue 27), over real tool definitions (the recorded
 * `tools/list` answers in test/fixtures/tools, replayed by real MCP processes):
 *   3. tokens of the tool definitions sent per model call (o200k_base, `gpt-tokenizer`), for an
 *      agent of 637 tools — server-everything and four toolsets replaying every recorded server —
 *      offered eagerly, then with `defer_above: 100` (everything kept eager): a scripted model
 *      searches, calls what it found, and answers, and each call's definitions are counted as an
 *      OpenAI-style `tools` array;
 *   4. search at 5,000 tools: index build, update of one toolset (after 20 untimed), and query
 *      p50/p99 over the 72 labelled queries after warm-up, in wall time and in the process's CPU
 *      time (the machine is shared); `registry.searchTools` p50 on the 637-tool agent;
 *   5. recall@5 of the labelled queries, at 637 and at 5,000 tools.
 */
import * as NodeOs from "node:os"
import { AgentLoop } from "@toolvisor/ai"
import type { AgentConfig } from "@toolvisor/config"
import { ToolSearch } from "@toolvisor/runtime"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import { countTokens } from "gpt-tokenizer"
import { everything } from "../../packages/ai/test/helpers.ts"
import * as ScriptedModel from "../../packages/ai/test/ScriptedModel.ts"
import { config, open, replay } from "../../packages/runtime/test/helpers.ts"
import * as ToolCatalogs from "../support/ToolCatalogs.ts"
import { ascending, formatter, gc, median, percentile, renderTable } from "./stats.ts"

const fmt = formatter(1)
const QUERY_ROUNDS = 30

/** The 637-tool agent (server-everything lists 13 tools to a client without roots or sampling), eager or with `defer_above`. */
const agentConfig = (deferred: boolean): AgentConfig.Config => {
  const toolsets = [everything(), ...[1, 2, 3, 4].map((copy) => replay(`r${copy}`, ToolCatalogs.servers))]
  return config(toolsets, [
    {
      name: "root",
      toolsets: toolsets.map((t) => t.identity),
      ...(deferred ? { offers: { "mcp/everything": { defer: false } }, deferAbove: 100 } : {})
    }
  ])
}

/** What a provider is sent for the tools of one call, as OpenAI's `tools` array. */
const tokensOf = (definitions: ReadonlyArray<ScriptedModel.Definition>): number =>
  countTokens(
    JSON.stringify(
      definitions.map((d) => ({
        type: "function",
        function: { name: d.name, description: d.description, parameters: d.parameters }
      }))
    )
  )

/** One turn: search, call the first tool found, answer. Returns each call's definitions and the catalog size. */
const turn = (deferred: boolean) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { registry, close } = yield* open(agentConfig(deferred))
      yield* registry.start
      const size = (yield* registry.catalog()).tools.length
      // Eager, the model calls the tool at once; deferred, it searches first.
      const script = [
        ...(deferred ? [ScriptedModel.toolCall("s", "search_tools", { query: "geocode an address" })] : []),
        ScriptedModel.toolCall("c", "r1_google-maps_maps_geocode", { address: "x" })
      ]
      const model = ScriptedModel.make((call) => {
        const next = script[call.index]
        return next === undefined
          ? [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
          : [next, ScriptedModel.finish("tool-calls")]
      })
      const loop = yield* AgentLoop.make(registry)
      yield* Effect.flatMap(Chat.empty, (chat) => loop.turn(chat, "geocode")).pipe(Effect.provide(model.layer))
      let searches: Array<number> = []
      if (deferred) {
        for (let i = 0; i < 20; i++) yield* registry.searchTools("geocode an address")
        for (let i = 0; i < 5 * QUERY_ROUNDS; i++) {
          const query = ToolCatalogs.queries[i % ToolCatalogs.queries.length]?.query ?? ""
          const started = performance.now()
          yield* registry.searchTools(query)
          searches.push(performance.now() - started)
        }
      }
      const recall = deferred ? yield* recallOf((query) => registry.searchTools(query)) : Number.NaN
      yield* close
      searches = ascending(searches)
      return { size, calls: model.calls.map((call) => call.definitions), searches, recall }
    })
  )

/** The share of labelled queries whose tool is among the top 5 hits. */
const recallOf = (search: (query: string) => Effect.Effect<ToolSearch.Result, unknown>) =>
  Effect.map(
    Effect.forEach(ToolCatalogs.queries, ({ query, expected }) =>
      Effect.map(search(query), (result) => result.hits.some((hit) => originOf(hit) === expected))
    ),
    (found) => found.filter(Boolean).length / found.length
  )

/** `<server>/<tool>` of a hit in either catalog: replayed toolsets name tools `<server>_<tool>`. */
const originOf = (hit: ToolSearch.Hit): string => {
  const tool = hit.name.slice(hit.toolset.length + 1)
  if (hit.toolset === "everything") return `everything/${tool}`
  if (/^r\d+$/.test(hit.toolset)) {
    const server = ToolCatalogs.servers.find((s) => tool.startsWith(`${s}_`))
    return server === undefined ? tool : `${server}/${tool.slice(server.length + 1)}`
  }
  return `${hit.toolset.replace(/-\d+$/, "")}/${tool}`
}

/** The index alone at 5,000 tools: build, update of one toolset, queries. */
const atScale = (size: number) => {
  const entries = ToolCatalogs.entries(ToolCatalogs.copiesFor(size)).slice(0, size)
  const builds: Array<number> = []
  let index = ToolSearch.make()
  for (let i = 0; i < 5; i++) {
    gc("bench:ai")
    const started = performance.now()
    index = ToolSearch.make()
    index.update(entries)
    builds.push(performance.now() - started)
  }
  // One toolset (github-3, 26 tools) comes back with new descriptions, then with the old ones.
  const updates: Array<number> = []
  const changed = entries.map((e) =>
    e.toolset === "github-3" ? { ...e, tool: { ...e.tool, description: `${e.tool.description} (v2)` } } : e
  )
  for (let i = 0; i < 60; i++) {
    const started = performance.now()
    index.update(i % 2 === 0 ? changed : entries)
    if (i >= 20) updates.push(performance.now() - started)
  }
  for (let i = 0; i < 3; i++) for (const { query } of ToolCatalogs.queries) index.search(query)
  // Wall time, and the process's CPU time: on a loaded machine the first counts waits for a core.
  const times: Array<number> = []
  const cpu: Array<number> = []
  for (let i = 0; i < QUERY_ROUNDS; i++) {
    for (const { query } of ToolCatalogs.queries) {
      const usage = process.cpuUsage()
      const started = performance.now()
      index.search(query)
      times.push(performance.now() - started)
      const spent = process.cpuUsage(usage)
      cpu.push((spent.user + spent.system) / 1000)
    }
  }
  const recall = Effect.runSync(recallOf((query) => Effect.succeed(index.search(query))))
  return { builds, updates, times: ascending(times), cpu: ascending(cpu), recall, size: index.size() }
}

export const run = async (): Promise<void> => {
  const load = () =>
    NodeOs.loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")
  console.log(`\nconditions: ${NodeOs.cpus().length} cores, load average ${load()} at the start of part 3`)

  const eager = await Effect.runPromise(turn(false))
  const deferred = await Effect.runPromise(turn(true))
  const eagerTokens = tokensOf(eager.calls[0] ?? [])
  console.log(
    `\n3. tokens of the tool definitions sent per model call, ${eager.size} tools (o200k_base), one search-call-answer turn`
  )
  console.log(
    renderTable(
      ["model call", "tools offered", "tokens", "vs eager"],
      [
        ["eager, every call", String(eager.calls[0]?.length ?? 0), String(eagerTokens), "1.000"],
        ...deferred.calls.map((definitions, i) => {
          const tokens = tokensOf(definitions)
          return [`deferred, call ${i + 1}`, String(definitions.length), String(tokens), fmt(tokens / eagerTokens, 3)]
        })
      ]
    )
  )

  const scale = atScale(5000)
  console.log(
    `\n4. search at ${scale.size} tools (${ToolCatalogs.queries.length} queries × ${QUERY_ROUNDS}), load ${load()}`
  )
  console.log(
    renderTable(
      ["measure", "p50", "p99"],
      [
        ["index build, ms", fmt(median(scale.builds), 1), fmt(percentile(ascending(scale.builds), 0.99), 1)],
        [
          "update of one toolset (26 tools), ms",
          fmt(median(scale.updates), 2),
          fmt(percentile(ascending(scale.updates), 0.99), 2)
        ],
        [
          "ToolSearch query, µs",
          fmt(percentile(scale.times, 0.5) * 1000, 0),
          fmt(percentile(scale.times, 0.99) * 1000, 0)
        ],
        [
          "ToolSearch query, CPU µs",
          fmt(percentile(scale.cpu, 0.5) * 1000, 0),
          fmt(percentile(scale.cpu, 0.99) * 1000, 0)
        ],
        [
          `registry.searchTools at ${deferred.size} tools, µs`,
          fmt(percentile(deferred.searches, 0.5) * 1000, 0),
          fmt(percentile(deferred.searches, 0.99) * 1000, 0)
        ]
      ]
    )
  )

  console.log(`\n5. recall@5 of ${ToolCatalogs.queries.length} labelled queries`)
  console.log(
    renderTable(
      ["catalog", "recall@5"],
      [
        [`registry, ${deferred.size} tools`, fmt(deferred.recall, 3)],
        [`index, ${scale.size} tools`, fmt(scale.recall, 3)]
      ]
    )
  )
}
