/** The pure parts: provider-safe names, what the model reads of a result, and the tool definitions. */
import { assert, describe, it } from "@effect/vitest"
import { type Catalog, Deferral } from "@toolvisor/runtime"
import * as Tool from "effect/ai/Tool"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { config, open } from "../../../test/support/Registry.ts"
import * as SamplingPrompt from "../src/internal/samplingPrompt.ts"
import * as RegistryToolkit from "../src/RegistryToolkit.ts"
import * as ToolNames from "../src/ToolNames.ts"
import * as ToolOutput from "../src/ToolOutput.ts"

describe("ToolNames", () => {
  it("keeps safe names and maps the others deterministically, both ways", () => {
    const names = ["everything_echo", "gh.search/issues", "x".repeat(80), "caf\u00e9", "lsp_hover"]
    const first = ToolNames.make(names)
    const again = ToolNames.make([...names].reverse())
    for (const name of names) {
      const model = first.toModel.get(name)!
      assert.isTrue(ToolNames.isSafe(model), model)
      assert.strictEqual(first.fromModel.get(model), name)
      assert.strictEqual(again.toModel.get(name), model)
    }
    assert.strictEqual(first.toModel.get("everything_echo"), "everything_echo")
    assert.match(first.toModel.get("gh.search/issues")!, /^gh_search_issues_[0-9a-f]{8}$/)
    assert.strictEqual(first.toModel.get("x".repeat(80))!.length, ToolNames.maxLength)
  })

  it("a name that forges another's rewritten form cannot take it, in either order", () => {
    const rewritten = ToolNames.make(["mail.send"]).toModel.get("mail.send")!
    // A server that offers the name the model was shown for `mail.send` would take its calls.
    for (const names of [
      ["mail.send", rewritten],
      [rewritten, "mail.send"]
    ]) {
      const both = ToolNames.make(names)
      assert.strictEqual(both.toModel.get("mail.send"), rewritten)
      assert.strictEqual(both.fromModel.get(rewritten), "mail.send")
      const forged = both.toModel.get(rewritten)!
      assert.notStrictEqual(forged, rewritten)
      assert.isTrue(ToolNames.isSafe(forged))
      assert.strictEqual(both.fromModel.get(forged), rewritten)
    }
  })
})

describe("ToolNames.ofCatalog", () => {
  const entry = (name: string, deferred: boolean): Catalog.Entry => ({
    name,
    toolset: "t",
    tool: { name, inputSchema: { type: "object" } },
    lastKnown: false,
    deferred
  })
  const catalog = (...tools: ReadonlyArray<Catalog.Entry>) =>
    ({ complete: true, tools, missing: [], shadowed: [], version: 1 }) as unknown as Catalog.Catalog

  it("a server's own search_tools is offered under another name while the adapter offers its own", () => {
    const deferring = ToolNames.ofCatalog(catalog(entry("search_tools", false), entry("other", true)))
    const theirs = deferring.toModel.get("search_tools")!
    assert.notStrictEqual(theirs, "search_tools")
    assert.match(theirs, /^search_tools_[0-9a-f]{8}$/)
    assert.isFalse(deferring.fromModel.has("search_tools"))
    // Nothing deferred: no search tool of the adapter's, the server's keeps its name.
    const eager = ToolNames.ofCatalog(catalog(entry("search_tools", false), entry("other", false)))
    assert.strictEqual(eager.toModel.get("search_tools"), "search_tools")
  })
})

describe("ToolOutput.text", () => {
  it("reads text items, names binary ones, and falls back to structured content", () => {
    assert.strictEqual(
      ToolOutput.text({
        content: [
          { type: "text", text: "one" },
          { type: "image", data: "AAAA", mimeType: "image/png" },
          { type: "resource", resource: { uri: "file:///a", text: "inline" } },
          { type: "resource_link", uri: "file:///b", name: "b" }
        ]
      }),
      "one\n[image image/png omitted]\ninline\n[resource_link file:///b]"
    )
    assert.strictEqual(ToolOutput.text({ content: [], structuredContent: { sum: 3 } }), '{"sum":3}')
  })
})

describe("RegistryToolkit.fromCatalog", () => {
  it.live("passes the JSON Schema through and maps MCP hints to Tool annotations", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([]))
      const inputSchema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
      const catalog: Catalog.Catalog = {
        complete: true,
        missing: [],
        shadowed: [],
        offline: [],
        version: 1,
        tools: [
          {
            name: "fs.read",
            toolset: "fs",
            lastKnown: false,
            tool: {
              name: "read",
              description: "Reads a file",
              inputSchema,
              annotations: {
                title: "Read",
                readOnlyHint: true,
                destructiveHint: false,
                idempotentHint: true,
                openWorldHint: false
              }
            }
          },
          {
            name: "fs_write",
            toolset: "fs",
            lastKnown: false,
            tool: { name: "write", inputSchema: { type: "object" } }
          }
        ]
      }
      const toolkit = yield* RegistryToolkit.fromCatalog(registry, catalog)
      const [read, write] = Object.values(toolkit.tools)
      assert.match(read!.name, /^fs_read_[0-9a-f]{8}$/)
      assert.deepStrictEqual(Tool.getJsonSchema(read!), inputSchema)
      assert.strictEqual(Tool.getDescription(read!), "Reads a file")
      assert.deepStrictEqual(Context.getOption(read!.annotations, Tool.Title), Option.some("Read"))
      assert.isTrue(Context.get(read!.annotations, Tool.Readonly))
      assert.isFalse(Context.get(read!.annotations, Tool.Destructive))
      assert.isTrue(Context.get(read!.annotations, Tool.Idempotent))
      assert.isFalse(Context.get(read!.annotations, Tool.OpenWorld))
      assert.isFalse(Tool.getStrictMode(read!))
      assert.strictEqual(write!.name, "fs_write")
      assert.isFalse(Context.get(write!.annotations, Tool.Readonly))
      assert.isTrue(Context.get(write!.annotations, Tool.Destructive))
      yield* close
    })
  )
})

describe("SamplingPrompt", () => {
  it("caps what a server may have the model write at maxTokens", () => {
    const asked = (maxTokens: number) =>
      SamplingPrompt.of({ messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens })
    // 1e15 reached the provider as asked.
    assert.strictEqual(asked(1e15).maxTokens, SamplingPrompt.maxTokens)
    assert.strictEqual(asked(200).maxTokens, 200)
  })
})

describe("select: with the names the model was shown", () => {
  it("turns a rewritten name back into the catalog's; other names and ranked queries pass as written", () => {
    const names = ToolNames.make(["h_uni\u00e7\u00f8de", "everything_echo"])
    const shown = names.toModel.get("h_uni\u00e7\u00f8de")!
    assert.notStrictEqual(shown, "h_uni\u00e7\u00f8de")
    const fromModel = (name: string) => names.fromModel.get(name)
    // The model selected the name the search had shown it, and was told "No tool named".
    assert.strictEqual(
      Deferral.catalogQuery(`select:${shown}, everything_echo,nope`, fromModel),
      "select:h_uni\u00e7\u00f8de,everything_echo,nope"
    )
    assert.strictEqual(Deferral.catalogQuery("echo a message", fromModel), "echo a message")
  })
})
