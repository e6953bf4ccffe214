import { assert, describe, it } from "@effect/vitest"
import * as ToolCatalogs from "../../../test/support/ToolCatalogs.ts"
import type * as Catalog from "../src/Catalog.ts"
import * as Deferral from "../src/Deferral.ts"
import * as ToolSearch from "../src/ToolSearch.ts"

/** A catalog of 624 real tool definitions: every recorded server declared four times. */
const copies = ToolCatalogs.copiesFor(500)
const tools = ToolCatalogs.entries(copies)

const indexOf = (entries: ReadonlyArray<Catalog.Entry> = tools) => {
  const index = ToolSearch.make()
  index.update(entries)
  return index
}

const names = (result: ToolSearch.Result) => result.hits.map((hit) => hit.name)

describe("ToolSearch", () => {
  it("splits names written in snake_case, camelCase, kebab-case and dotted form into the same words", () => {
    const fileWords = ["read", "text", "fil"]
    assert.deepStrictEqual(ToolSearch.words("read_text_file"), fileWords)
    assert.deepStrictEqual(ToolSearch.words("readTextFile"), fileWords)
    assert.deepStrictEqual(ToolSearch.words("read-text-file"), fileWords)
    assert.deepStrictEqual(ToolSearch.words("API-get-users"), ["api", "get", "user"])
    assert.deepStrictEqual(ToolSearch.words("HTTPServer.listFiles"), ["http", "server", "list", "fil"])
    // Plurals and verb forms meet: the same word on both sides of a match.
    assert.deepStrictEqual(ToolSearch.words("Reading the files"), ["read", "fil"])
    assert.deepStrictEqual(ToolSearch.words("create created creating creates"), ["creat", "creat", "creat", "creat"])
    assert.deepStrictEqual(ToolSearch.words("entities entity string"), ["entity", "entity", "string"])
    assert.deepStrictEqual(ToolSearch.words("v2Beta getURLFor über"), ["v2", "beta", "get", "url", "ber"])
  })

  it("splits a 100,000-capital name from a hostile server in linear time", () => {
    const started = performance.now()
    assert.strictEqual(ToolSearch.words(`${"A".repeat(100_000)}b`).length, 2)
    // A backtracking split takes tens of seconds here; one pass takes about a millisecond.
    assert.isBelow(performance.now() - started, 1000)
  })

  it("a word most tools have is left out when the query has a rarer one, and searched when it is alone", () => {
    const tool = (name: string, description: string): Catalog.Entry => ({
      name,
      toolset: "t",
      tool: { name, description, inputSchema: { type: "object" } },
      lastKnown: false
    })
    // "get" and "item" are in nine tools of ten, "weather" in one. Scored, the two common words
    // would lift the nine (they match two words of three) over the one that matches the word that tells.
    const entries = [
      tool("forecast", `Tells the weather of a city, ${"with many more words about cities ".repeat(4)}`),
      ...Array.from({ length: 9 }, (_, i) => tool(`get_item_${i}`, "get item"))
    ]
    const index = indexOf(entries)
    assert.strictEqual(index.search("get item weather").hits[0]?.name, "forecast")
    assert.strictEqual(index.search("get").hits.length, ToolSearch.defaultLimit)
  })

  it(`ranks by name, description and parameter names over ${tools.length} real tools`, () => {
    const index = indexOf()
    assert.isAtLeast(index.size(), 500)
    // By a description: "Returns the sum of two numbers".
    assert.strictEqual(index.search("sum of two numbers").hits[0]?.name, "everything_get-sum")
    // By the words of a camelCase name, written apart.
    assert.strictEqual(index.search("sequential thinking").hits[0]?.name, "sequential-thinking_sequentialthinking")
    // By a parameter name: slack_reply_to_thread takes `thread_ts`.
    assert.include(names(index.search("thread ts", 5)), "slack_slack_reply_to_thread")
  })

  it("folds copies of one definition into one hit, naming the others, so five hits are five tools", () => {
    const result = ToolSearch.make()
    result.update(tools)
    const found = result.search("create a new issue in a GitHub repository", 5)
    assert.strictEqual(found.hits.length, 5)
    const origins = found.hits.map(
      (hit) => `${hit.toolset.replace(/-\d+$/, "")}/${hit.name.split("_").slice(1).join("_")}`
    )
    assert.strictEqual(new Set(origins).size, 5)
    const issue = found.hits.find((hit) => hit.name === "github_create_issue")
    assert.deepStrictEqual(issue?.alike, ["github-2_create_issue", "github-3_create_issue", "github-4_create_issue"])
    assert.strictEqual(issue?.summary, "Create a new issue in a GitHub repository")
  })

  it(`finds the labelled tool in the top 5 for at least 90% of ${ToolCatalogs.queries.length} natural-language queries`, () => {
    const index = indexOf()
    const misses = ToolCatalogs.queries.filter(({ query, expected }) => {
      const hits = index.search(query, 5).hits
      return !hits.some((hit) => `${hit.toolset.replace(/-\d+$/, "")}/${expectedTool(hit)}` === expected)
    })
    const recall = 1 - misses.length / ToolCatalogs.queries.length
    assert.isAtLeast(recall, 0.9, `missed: ${misses.map((m) => m.query).join("; ")}`)
  })

  it("select: names tools exactly, in the order asked; unknown names come back with near ones", () => {
    const index = indexOf()
    const result = index.search(
      "select:memory_read_graph, filesystem_read_text_file,memory_read_graph,memory_read_grph"
    )
    assert.deepStrictEqual(names(result), ["memory_read_graph", "filesystem_read_text_file"])
    assert.deepStrictEqual(
      result.unknown.map((u) => u.name),
      ["memory_read_grph"]
    )
    assert.include(result.unknown[0]?.near ?? [], "memory_read_graph")
    assert.deepStrictEqual(names(index.search("SELECT:Memory_Read_Graph")), ["memory_read_graph"])
  })

  it("select: past its limit looks up the first names and says which were not, so the model asks again", () => {
    const index = indexOf()
    const asked = [...new Set(tools.map((t) => t.name))].slice(0, ToolSearch.maxLimit + 10)
    const result = index.search(`select:${asked.join(",")}`)
    assert.deepStrictEqual(result.unread, asked.slice(ToolSearch.maxLimit))
    const looked = new Set([...names(result), ...result.unknown.map((u) => u.name)])
    assert.isTrue(
      asked
        .slice(0, ToolSearch.maxLimit)
        .every((name) => looked.has(name) || result.hits.some((h) => h.alike.includes(name)))
    )
    const told = Deferral.render(result, "select:…", (name) => name)
    assert.include(told, `${result.hits.length} tool(s), callable from your next step:`)
    assert.include(told, `10 more name(s) were not looked up: a select: takes ${ToolSearch.maxLimit} at most.`)
    assert.include(told, `"${asked[ToolSearch.maxLimit]}"`)
    assert.isUndefined(index.search("select:memory_read_graph").unread)
  })

  it("within a tool group: ranks, folds and selects only the tools it accepts, a full page of them", () => {
    const index = indexOf()
    const github = (name: string) => name.startsWith("github-2_")
    const found = index.search("create a new issue in a GitHub repository", 5, github)
    assert.strictEqual(found.hits.length, 5)
    assert.isTrue(found.hits.every((hit) => github(hit.name)))
    assert.strictEqual(found.hits[0]?.name, "github-2_create_issue")
    // Its copies outside the group are not named either.
    assert.deepStrictEqual(found.hits[0]?.alike, [])
    const selected = index.search("select:github_create_issue,github-2_create_issue", 5, github)
    assert.deepStrictEqual(names(selected), ["github-2_create_issue"])
    assert.deepStrictEqual(
      selected.unknown.map((u) => u.name),
      ["github_create_issue"]
    )
    assert.isTrue((selected.unknown[0]?.near ?? []).every(github))
    assert.deepStrictEqual(names(index.search("sum of two numbers", 5, github)).includes("everything_get-sum"), false)
  })

  it("an empty query finds nothing; a limit is kept within 1..50; a huge query is cut, not refused", () => {
    const index = indexOf()
    assert.deepStrictEqual(index.search("   ").hits, [])
    assert.strictEqual(index.search("file", 0).hits.length, 1)
    assert.strictEqual(ToolSearch.clampLimit(500), ToolSearch.maxLimit)
    assert.strictEqual(ToolSearch.clampLimit(Number.NaN), ToolSearch.defaultLimit)
    assert.strictEqual(index.search("get list create update delete file page issue", 3).hits.length, 3)
    assert.isAtMost(index.search("get list create update delete file page issue", 500).hits.length, ToolSearch.maxLimit)
    assert.isAtMost(index.search(`${"file ".repeat(100_000)}`, 5).hits.length, 5)
  })

  it("updates incrementally: the same catalog writes nothing; a changed, an added and a removed tool touch only themselves", () => {
    const index = indexOf()
    const first = index.writes()
    assert.strictEqual(first, tools.length)
    // A toolset that restarted lists new objects with the same definitions: nothing is indexed again.
    index.update(tools.map((entry) => ({ ...entry, tool: { ...entry.tool } })))
    assert.strictEqual(index.writes(), first)
    const changed = tools.map((entry) =>
      entry.name === "memory_read_graph"
        ? { ...entry, tool: { ...entry.tool, description: "Reads the whole zettelkasten" } }
        : entry
    )
    const added: Catalog.Entry = {
      name: "extra_frobnicate",
      toolset: "extra",
      tool: { name: "frobnicate", description: "Frobnicates a widget", inputSchema: { type: "object" } },
      lastKnown: false
    }
    index.update([...changed.filter((entry) => entry.name !== "slack_slack_add_reaction"), added])
    assert.strictEqual(index.writes(), first + 2)
    assert.strictEqual(index.size(), tools.length)
    assert.deepStrictEqual(names(index.search("zettelkasten")), ["memory_read_graph"])
    assert.deepStrictEqual(names(index.search("frobnicate widget")), ["extra_frobnicate"])
    assert.notInclude(names(index.search("reaction emoji", 50)), "slack_slack_add_reaction")
    assert.deepStrictEqual(index.search("select:slack_slack_add_reaction").hits, [])
  })

  it("says which hits are deferred; a deferral change alone re-indexes nothing", () => {
    const index = indexOf()
    const before = index.writes()
    index.update(tools.map((entry) => (entry.toolset === "memory" ? { ...entry, deferred: true } : entry)))
    assert.strictEqual(index.writes(), before)
    const hit = index.search("select:memory_read_graph,filesystem_read_text_file").hits
    assert.deepStrictEqual(
      hit.map((h) => [h.name, h.deferred]),
      [
        ["memory_read_graph", true],
        ["filesystem_read_text_file", false]
      ]
    )
  })

  it("a server's megabyte description is indexed cut and summarised in one short line", () => {
    const huge: Catalog.Entry = {
      name: "x_big",
      toolset: "x",
      tool: {
        name: "big",
        description: `Looks up weather forecasts\n${"filler ".repeat(200_000)} needle`,
        inputSchema: { type: "object" }
      },
      lastKnown: false
    }
    const index = indexOf([huge])
    assert.deepStrictEqual(names(index.search("weather forecast")), ["x_big"])
    assert.deepStrictEqual(index.search("needle").hits, [], "past the indexed length")
    assert.strictEqual(index.search("weather").hits[0]?.summary, "Looks up weather forecasts")
  })
})

/** The tool's own name: the hit's exposed name without its toolset's prefix. */
const expectedTool = (hit: ToolSearch.Hit): string => hit.name.slice(hit.toolset.length + 1)
