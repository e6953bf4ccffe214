import { assert, describe, it } from "@effect/vitest"
import { LifecycleError, type State, type Toolset } from "@toolvisor/core"
import * as Catalog from "../src/Catalog.ts"

const tool = (name: string): Toolset.Tool => ({ name, inputSchema: { type: "object" } })

const ready = (
  toolset: string,
  names: ReadonlyArray<string>,
  options: { readonly prefix?: string; readonly allow?: ReadonlyArray<string> } = {}
): Catalog.Source => ({
  toolset,
  prefix: options.prefix,
  allow: options.allow,
  state: "Ready",
  listing: { complete: true, items: names.map(tool) },
  lastKnown: undefined
})

const notReady = (toolset: string, state: State.State, lastKnown?: ReadonlyArray<string>): Catalog.Source => ({
  toolset,
  prefix: undefined,
  allow: undefined,
  state,
  lastKnown: lastKnown?.map(tool),
  listing: {
    complete: false,
    items: [],
    reason: new LifecycleError.NotStarted({ toolset, message: `${toolset}: not ready (${state})` })
  }
})

describe("Catalog", () => {
  it("lists tools in config order, prefixed with the toolset name when the config gave one", () => {
    const catalog = Catalog.make([ready("fs", ["read", "write"], { prefix: "fs" }), ready("memory", ["recall"])])
    assert.deepStrictEqual(
      catalog.tools.map((t) => [t.name, t.toolset, t.tool.name]),
      [
        ["fs_read", "fs", "read"],
        ["fs_write", "fs", "write"],
        ["recall", "memory", "recall"]
      ]
    )
    assert.isTrue(catalog.complete)
  })

  it("applies the allow-list to exposed (prefixed) names", () => {
    const catalog = Catalog.make([ready("fs", ["read", "write"], { prefix: "fs", allow: ["fs_read"] })])
    assert.deepStrictEqual(
      catalog.tools.map((t) => t.name),
      ["fs_read"]
    )
  })

  it("an allow-list entry names a tool by the server's own name as well as by the exposed one", () => {
    const catalog = Catalog.make([ready("fs", ["read", "write", "list"], { prefix: "fs", allow: ["read", "fs_list"] })])
    assert.deepStrictEqual(
      catalog.tools.map((t) => t.name),
      ["fs_read", "fs_list"]
    )
  })

  it("never offers a denied name (a host's disabled-tools list), with or without an allow-list", () => {
    const denied = { ...ready("fs", ["read", "write", "delete"], { prefix: "fs" }), deny: ["fs_delete"] }
    assert.deepStrictEqual(
      Catalog.make([denied]).tools.map((t) => t.name),
      ["fs_read", "fs_write"]
    )
    const both = { ...denied, allow: ["fs_read", "fs_delete"] }
    assert.deepStrictEqual(
      Catalog.make([both]).tools.map((t) => t.name),
      ["fs_read"]
    )
  })

  it("a toolset that is not Ready makes the catalog incomplete and says which and why", () => {
    const catalog = Catalog.make([ready("fs", ["read"]), notReady("lsp", "Restarting")])
    assert.isFalse(catalog.complete)
    assert.deepStrictEqual(catalog.missing, [
      { toolset: "lsp", state: "Restarting", reason: "lsp: not ready (Restarting)" }
    ])
    assert.deepStrictEqual(
      catalog.tools.map((t) => t.name),
      ["read"]
    )
  })

  it("a name collision is resolved deterministically: the first toolset in config order wins", () => {
    const catalog = Catalog.make([ready("a", ["search"]), ready("b", ["search", "other"])])
    assert.deepStrictEqual(
      catalog.tools.map((t) => `${t.toolset}:${t.name}`),
      ["a:search", "b:other"]
    )
    assert.deepStrictEqual(catalog.shadowed, [{ name: "search", toolset: "b", shadowedBy: "a" }])
  })

  it("collisions group the hidden tools by the two toolsets, in order", () => {
    const catalog = Catalog.make([
      ready("a", ["echo", "sum"]),
      ready("b", ["echo", "sum", "own"]),
      ready("c", ["echo"])
    ])
    assert.deepStrictEqual(Catalog.collisions(catalog), [
      { toolset: "b", hiddenBy: "a", names: ["echo", "sum"] },
      { toolset: "c", hiddenBy: "a", names: ["echo"] }
    ])
    assert.deepStrictEqual(Catalog.collisions(Catalog.make([ready("a", ["echo"]), ready("b", ["own"])])), [])
  })

  it("near names: a prefixed variant, a typo, nothing for an unrelated name", () => {
    const names = ["fs_read_file", "fs_write_file", "memory_recall", "echo"]
    assert.deepStrictEqual(Catalog.nearNames("read_file", names), ["fs_read_file"])
    assert.deepStrictEqual(Catalog.nearNames("ecoh", names), ["echo"])
    assert.deepStrictEqual(Catalog.nearNames("completely_different", names), [])
  })

  it("near names of a name too long to be a typo are none, and cost no comparison of the whole", () => {
    const names = Array.from({ length: 2_000 }, (_, i) => `${"x".repeat(1_000)}${i}`)
    const started = performance.now()
    // Unbounded, 990 characters against 2,000 such names held the event loop for 20 s and more.
    assert.deepStrictEqual(Catalog.nearNames("q".repeat(990), names), [])
    assert.deepStrictEqual(Catalog.nearNames("q".repeat(100_000), names), [])
    assert.deepStrictEqual(Catalog.nearNames("x".repeat(100), [...names, "x".repeat(101)]), ["x".repeat(101)])
    assert.isBelow(performance.now() - started, 1_000)
  })

  it("keeps a restarting toolset's last-known tools on offer, marked, and says it is not complete", () => {
    const catalog = Catalog.make([ready("a", ["one"]), notReady("ev", "Restarting", ["echo", "sum"])])
    assert.deepStrictEqual(
      catalog.tools.map((t) => [t.name, t.lastKnown]),
      [
        ["one", false],
        ["echo", true],
        ["sum", true]
      ]
    )
    assert.isFalse(catalog.complete)
    assert.deepStrictEqual(
      catalog.missing.map((m) => [m.toolset, m.state]),
      [["ev", "Restarting"]]
    )
  })

  it("does not offer the tools of a failed toolset, but keeps them to name its error, shadowing nothing", () => {
    const catalog = Catalog.make([notReady("ev", "Failed", ["echo", "shared"]), ready("b", ["shared"])])
    assert.deepStrictEqual(
      catalog.tools.map((t) => [t.name, t.toolset]),
      [["shared", "b"]]
    )
    assert.deepStrictEqual(
      catalog.offline.map((t) => t.name),
      ["echo"]
    )
  })

  it("a toolset never listed offers nothing while it starts", () => {
    const catalog = Catalog.make([notReady("ev", "Starting")])
    assert.deepStrictEqual(catalog.tools, [])
    assert.deepStrictEqual(catalog.offline, [])
    assert.isFalse(catalog.complete)
  })

  it("the version moves only when the offered tools change, not when a toolset restarts with the same tools", () => {
    const first = Catalog.make([ready("ev", ["echo", "sum"])])
    const restarting = Catalog.make([notReady("ev", "Restarting", ["echo", "sum"])], first)
    const back = Catalog.make([ready("ev", ["echo", "sum"])], restarting)
    assert.strictEqual(restarting.version, first.version)
    assert.strictEqual(back.version, first.version)
    const grown = Catalog.make([ready("ev", ["echo", "sum", "new"])], back)
    assert.strictEqual(grown.version, first.version + 1)
    const schema = Catalog.make(
      [
        {
          ...ready("ev", []),
          listing: {
            complete: true,
            items: [{ name: "echo", inputSchema: { type: "object", required: ["x"] } }, tool("sum"), tool("new")]
          }
        }
      ],
      grown
    )
    assert.strictEqual(schema.version, grown.version + 1)
  })
})
