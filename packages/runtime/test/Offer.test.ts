import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import type * as Catalog from "../src/Catalog.ts"
import * as Offer from "../src/Offer.ts"
import { fixtureEntry } from "./helpers.ts"

const tool = (toolset: string, name: string, prefix = true): Catalog.Entry => ({
  name: prefix ? `${toolset}_${name}` : name,
  toolset,
  tool: { name, inputSchema: { type: "object" } },
  lastKnown: false
})

const catalog = (tools: ReadonlyArray<Catalog.Entry>, version = 0): Catalog.Catalog => ({
  complete: true,
  tools,
  missing: [],
  shadowed: [],
  offline: [],
  version
})

const toolsets = [
  fixtureEntry("a", { prefix: "a" }),
  fixtureEntry("b", { prefix: "b" }),
  fixtureEntry("c", { prefix: "c", tools: ["c_keep"] })
]
const tools = [tool("a", "one"), tool("a", "two"), tool("b", "one"), tool("b", "two"), tool("c", "keep")]

const spec = (offers: AgentConfig.AgentSpec["offers"], deferAbove?: number): AgentConfig.AgentSpec => ({
  name: "root",
  toolsets: toolsets.map((t) => t.identity),
  ...(offers === undefined ? {} : { offers }),
  ...(deferAbove === undefined ? {} : { deferAbove })
})

const deferred = (offered: Catalog.Catalog) => offered.tools.filter((e) => e.deferred === true).map((e) => e.name)

describe("Offer", () => {
  it("defer: true defers a toolset's every tool; a list defers by the server's name or the exposed one", () => {
    const offered = Offer.defer(
      catalog(tools),
      spec({ "mcp/a": { defer: true }, "mcp/b": { defer: ["one"] } }),
      toolsets
    )
    assert.deepStrictEqual(deferred(offered), ["a_one", "a_two", "b_one"])
    const exposed = Offer.defer(catalog(tools), spec({ "mcp/b": { defer: ["b_two"] } }), toolsets)
    assert.deepStrictEqual(deferred(exposed), ["b_two"])
    assert.strictEqual(offered.tools.length, tools.length, "deferred tools stay in the catalog, callable")
  })

  it("nothing deferred is the very same catalog", () => {
    const plain = catalog(tools)
    assert.strictEqual(Offer.defer(plain, spec(undefined), toolsets), plain)
    assert.strictEqual(Offer.defer(plain, spec({ "mcp/a": { defer: false } }, 100), toolsets), plain)
  })

  it("defer_above defers every tool past the threshold but those a tools: list names and toolsets with defer: false", () => {
    const above = Offer.defer(catalog(tools), spec({ "mcp/b": { defer: false } }, 4), toolsets)
    assert.deepStrictEqual(deferred(above), ["a_one", "a_two"])
    const at = Offer.defer(catalog(tools), spec({ "mcp/b": { defer: false } }, 5), toolsets)
    assert.deepStrictEqual(deferred(at), [], "at the threshold nothing is deferred")
  })

  it("behind an LSP router, a tool is deferred only where every language server's toolset defers it", () => {
    const lsp = [
      { ...fixtureEntry("ts"), type: "lsp" as const, identity: "lsp/ts", prefix: undefined },
      { ...fixtureEntry("py"), type: "lsp" as const, identity: "lsp/py", prefix: undefined }
    ]
    const routed = catalog([tool("ts+py", "lsp_hover", false), tool("ts+py", "lsp_rename", false)])
    const agent = (offers: AgentConfig.AgentSpec["offers"]): AgentConfig.AgentSpec => ({
      name: "root",
      toolsets: ["lsp/ts", "lsp/py"],
      ...(offers === undefined ? {} : { offers })
    })
    assert.deepStrictEqual(deferred(Offer.defer(routed, agent({ "lsp/ts": { defer: true } }), lsp)), [])
    assert.deepStrictEqual(
      deferred(Offer.defer(routed, agent({ "lsp/ts": { defer: true }, "lsp/py": { defer: ["lsp_rename"] } }), lsp)),
      ["lsp_rename"]
    )
  })

  it("an instruction goes with the server's own, or in place of {ORIGINAL_INSTRUCTIONS}", () => {
    assert.strictEqual(
      Offer.instruction("Prefer search_nodes.", "Memory server."),
      "Prefer search_nodes.\n\nMemory server."
    )
    assert.strictEqual(
      Offer.instruction("Before: {ORIGINAL_INSTRUCTIONS} After.", "Memory server."),
      "Before: Memory server. After."
    )
    assert.strictEqual(Offer.instruction("[{ORIGINAL_INSTRUCTIONS}]", "costs $& and $1"), "[costs $& and $1]")
    assert.strictEqual(Offer.instruction(undefined, " Memory server. "), "Memory server.")
    assert.strictEqual(Offer.instruction("Only mine.", undefined), "Only mine.")
    assert.strictEqual(Offer.instruction(undefined, "x".repeat(100_000)).length, Offer.maxInstructionLength)
  })

  it("the tracker's version moves when only the deferral changes, and not when nothing does", () => {
    const tracker = Offer.tracker()
    const none = () => undefined
    const input = catalog(tools, 3)
    const first = tracker.offer(input, spec(undefined), toolsets, none)
    assert.strictEqual(first.version, 3)
    assert.strictEqual(tracker.offer(input, spec(undefined), toolsets, none).version, 3, "a new but equal spec")
    const deferring = spec({ "mcp/a": { defer: true } })
    const second = tracker.offer(input, deferring, toolsets, none)
    assert.strictEqual(second.version, 4)
    assert.strictEqual(tracker.offer(input, deferring, toolsets, none), second, "the same inputs: the same catalog")
    assert.strictEqual(tracker.offer(catalog(tools, 4), deferring, toolsets, none).version, 5)
  })

  it("attaches each toolset's instructions in config order, the server's read through the given lookup", () => {
    const tracker = Offer.tracker()
    const offered = tracker.offer(
      catalog(tools),
      spec({ "mcp/b": { instruction: "Use b for billing." } }),
      toolsets,
      (identity) => (identity === "mcp/a" ? "A's server says hi." : undefined)
    )
    assert.deepStrictEqual(offered.instructions, [
      { toolset: "a", text: "A's server says hi." },
      { toolset: "b", text: "Use b for billing." }
    ])
  })
})
