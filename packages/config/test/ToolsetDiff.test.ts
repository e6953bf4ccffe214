import { assert, describe, it } from "@effect/vitest"
import { Policy } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as AgentConfig from "../src/AgentConfig.ts"
import * as ToolsetDiff from "../src/ToolsetDiff.ts"
import { parse } from "./helpers.ts"

const stdio = (command: string): AgentConfig.ToolsetConfig => {
  const signed: ToolsetDiff.Signed = {
    type: "mcp",
    prefix: undefined,
    transport: { _tag: "stdio", command, args: [], env: {}, cwd: undefined },
    fileTypes: [],
    tools: undefined,
    lifecycle: {},
    lazy: false
  }
  return {
    ...signed,
    identity: `mcp/${command}`,
    signature: ToolsetDiff.signature(signed),
    name: command,
    policy: Policy.defaults,
    secrets: [],
    path: "test"
  }
}

/** A toolset `id` whose definition is `command`. */
const named = (id: string, command: string) => ({ ...stdio(command), identity: `mcp/${id}` })
const config = (...toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>) => ({ toolsets })
const identities = (toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>) => toolsets.map((entry) => entry.identity)

describe("ToolsetDiff.diff (docker-agent TestDiffToolsets_*)", () => {
  it("NoChanges: everything unchanged, hasChanges false", () => {
    const diff = ToolsetDiff.diff(config(named("a", "x"), named("b", "y")), config(named("a", "x"), named("b", "y")))
    assert.deepStrictEqual(identities(diff.unchanged), ["mcp/a", "mcp/b"])
    assert.isFalse(ToolsetDiff.hasChanges(diff))
  })

  it("Added", () => {
    const diff = ToolsetDiff.diff(config(named("a", "x")), config(named("a", "x"), named("b", "y")))
    assert.deepStrictEqual(identities(diff.added), ["mcp/b"])
    assert.isTrue(ToolsetDiff.hasChanges(diff))
  })

  it("Removed", () => {
    const diff = ToolsetDiff.diff(config(named("a", "x"), named("b", "y")), config(named("a", "x")))
    assert.deepStrictEqual(identities(diff.removed), ["mcp/b"])
    assert.isTrue(ToolsetDiff.hasChanges(diff))
  })

  it("Changed: same identity, command x → y", () => {
    const diff = ToolsetDiff.diff(config(named("a", "x")), config(named("a", "y")))
    assert.strictEqual(diff.changed.length, 1)
    const [change] = diff.changed
    assert.deepStrictEqual(
      [change?.before.transport, change?.after.transport].map((t) => (t?._tag === "stdio" ? t.command : undefined)),
      ["x", "y"]
    )
  })

  it("PreservesOrder: unchanged in the new order, removed in the old order", () => {
    const diff = ToolsetDiff.diff(
      config(named("a", "1"), named("b", "2"), named("c", "3"), named("d", "4")),
      config(named("c", "3"), named("e", "5"), named("a", "1"))
    )
    assert.deepStrictEqual(identities(diff.unchanged), ["mcp/c", "mcp/a"])
    assert.deepStrictEqual(identities(diff.removed), ["mcp/b", "mcp/d"])
    assert.deepStrictEqual(identities(diff.added), ["mcp/e"])
  })

  it.effect("works on loaded configs: a changed lifecycle is a change, an equal duration spelling is not", () =>
    Effect.gen(function* () {
      const before = yield* parse(`agents: { root: { toolsets: [
        { type: mcp, name: a, command: x, lifecycle: { startup_timeout: 30s } },
        { type: lsp, command: gopls } ] } }`)
      const after = yield* parse(`agents: { root: { toolsets: [
        { type: lsp, command: gopls, lifecycle: { profile: strict } },
        { type: mcp, name: a, command: x, lifecycle: { startup_timeout: 30 } } ] } }`)
      const diff = ToolsetDiff.diff(before, after)
      assert.deepStrictEqual(identities(diff.unchanged), ["mcp/a"])
      assert.deepStrictEqual(
        diff.changed.map((change) => change.after.identity),
        ["lsp/cmd/gopls"]
      )
    })
  )
})

describe("ToolsetDiff.identity (docker-agent TestToolsetIdentity_*)", () => {
  it("NamedFirst", () => {
    assert.strictEqual(ToolsetDiff.identity({ type: "mcp", name: "n", command: "c" }), "mcp/n")
    assert.strictEqual(ToolsetDiff.identity({ type: "mcp", command: "c" }), "mcp/cmd/c")
  })

  it("RefCommandRemoteFallback", () => {
    assert.strictEqual(ToolsetDiff.identity({ type: "mcp", ref: "docker:foo" }), "mcp/ref/docker:foo")
    assert.strictEqual(ToolsetDiff.identity({ type: "mcp", command: "bar" }), "mcp/cmd/bar")
    assert.strictEqual(ToolsetDiff.identity({ type: "mcp", url: "https://x" }), "mcp/remote/https://x")
    assert.strictEqual(ToolsetDiff.identity({ type: "lsp", command: "gopls" }), "lsp/cmd/gopls")
  })
})

describe("ToolsetDiff.signature (docker-agent TestToolsetSignature_*)", () => {
  const signed: ToolsetDiff.Signed = {
    type: "mcp",
    prefix: "fs",
    transport: { _tag: "stdio", command: "npx", args: ["-y", "server"], env: { A: "1", B: "2" }, cwd: undefined },
    fileTypes: [],
    tools: ["fs_read"],
    lifecycle: { profile: "strict", startup_timeout: Duration.seconds(5) },
    lazy: false
  }

  it("StableAcrossEqualValues, whatever the key order", () => {
    const reordered: ToolsetDiff.Signed = {
      lazy: false,
      lifecycle: { startup_timeout: Duration.millis(5000), profile: "strict" },
      tools: ["fs_read"],
      fileTypes: [],
      transport: { _tag: "stdio", cwd: undefined, env: { B: "2", A: "1" }, args: ["-y", "server"], command: "npx" },
      prefix: "fs",
      type: "mcp"
    }
    assert.strictEqual(ToolsetDiff.signature(signed), ToolsetDiff.signature(reordered))
    assert.match(ToolsetDiff.signature(signed), /^[0-9a-f]{64}$/)
  })

  it("DifferentForDifferentValues", () => {
    const signatures = new Set([
      ToolsetDiff.signature(signed),
      ToolsetDiff.signature({ ...signed, lazy: true }),
      ToolsetDiff.signature({ ...signed, tools: undefined }),
      ToolsetDiff.signature({ ...signed, lifecycle: { profile: "resilient" } }),
      ToolsetDiff.signature({
        ...signed,
        transport: { _tag: "stdio", command: "npx", args: ["-y", "server"], env: { A: "1", B: "3" }, cwd: undefined }
      })
    ])
    assert.strictEqual(signatures.size, 5)
  })
})
