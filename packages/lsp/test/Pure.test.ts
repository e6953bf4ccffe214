import { assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Protocol from "vscode-languageserver-protocol"
import * as Capabilities from "../src/internal/capabilities.ts"
import * as Edits from "../src/internal/edits.ts"
import * as Paths from "../src/internal/paths.ts"
import * as Render from "../src/internal/render.ts"
import * as ToolHandlers from "../src/internal/toolHandlers.ts"
import * as LspRouter from "../src/LspRouter.ts"
import * as LspSpec from "../src/LspSpec.ts"
import * as LspTools from "../src/LspTools.ts"

describe("positions and paths", () => {
  it("tool positions are 1-based, wire positions 0-based", () => {
    assert.deepStrictEqual(Paths.toWire(1, 1), { line: 0, character: 0 })
    assert.deepStrictEqual(Paths.fromWire({ line: 4, character: 13 }), { line: 5, character: 14 })
  })
  it("language ids come from the extension, case-insensitively", () => {
    assert.strictEqual(Paths.languageId("/a/b.ts"), "typescript")
    assert.strictEqual(Paths.languageId("/a/B.TSX"), "typescriptreact")
    assert.strictEqual(Paths.languageId("x.py"), "python")
    assert.strictEqual(Paths.languageId("Makefile"), "plaintext")
    assert.strictEqual(Paths.languageId("x.zig"), "zig")
  })
  it("URIs round-trip, spaces included; paths show relative to the root", () => {
    assert.strictEqual(Paths.fromUri(Paths.toUri("/tmp/a b/c.ts")), "/tmp/a b/c.ts")
    assert.strictEqual(Paths.display("/w", "/w/src/a.ts"), "src/a.ts")
    assert.strictEqual(Paths.display("/w", "/elsewhere/a.ts"), "/elsewhere/a.ts")
  })
  it("file types match with or without the dot, any case; empty means all", () => {
    const spec = { fileTypes: [".TS", "py"] }
    assert.isTrue(LspSpec.handles(spec, "/a/b.ts"))
    assert.isTrue(LspSpec.handles(spec, "/a/b.PY"))
    assert.isFalse(LspSpec.handles(spec, "/a/b.md"))
    assert.isFalse(LspSpec.handles(spec, "/a/Makefile"))
    assert.isTrue(LspSpec.handles({ fileTypes: [] }, "/a/Makefile"))
  })
})

describe("capability filter", () => {
  it("a provider is on for true or an options object, off for false, null or absent", () => {
    assert.isTrue(Capabilities.isEnabled(true))
    assert.isTrue(Capabilities.isEnabled({}))
    assert.isTrue(Capabilities.isEnabled({ workDoneProgress: true }))
    assert.isFalse(Capabilities.isEnabled(false))
    assert.isFalse(Capabilities.isEnabled(null))
    assert.isFalse(Capabilities.isEnabled(undefined))
  })
  it("every tool of the catalogue has exactly one handler, bound to the catalogue's own definition", () => {
    assert.deepStrictEqual(Array.from(ToolHandlers.handlers.keys()).sort(), LspTools.all.map((d) => d.name).sort())
    for (const definition of LspTools.all) {
      assert.strictEqual(ToolHandlers.handlers.get(definition.name)?.definition, definition, definition.name)
    }
  })
  it("unknown capabilities give the full catalogue; known ones keep the always-on tools plus supported ones", () => {
    assert.lengthOf(LspTools.available(undefined), 15)
    const none = LspTools.available(Capabilities.make({}))
    assert.deepStrictEqual(
      none.map((d) => d.name),
      ["lsp_workspace", "lsp_diagnostics"]
    )
    const some = LspTools.available(
      Capabilities.make({ hoverProvider: true, renameProvider: { prepareProvider: true } })
    )
    assert.deepStrictEqual(
      some.map((d) => d.name),
      ["lsp_workspace", "lsp_diagnostics", "lsp_hover", "lsp_rename"]
    )
    assert.notInclude(
      LspTools.available(Capabilities.make({ hoverProvider: false })).map((d) => d.name),
      "lsp_hover"
    )
  })
  it("dynamic registration adds a provider and unregistration removes it; only real changes report true", () => {
    const capabilities = Capabilities.make({})
    assert.isTrue(capabilities.register([{ id: "1", method: "textDocument/hover" }]))
    assert.isTrue(capabilities.supports("hoverProvider"))
    assert.isFalse(capabilities.register([{ id: "2", method: "workspace/didChangeWatchedFiles" }]))
    assert.isTrue(capabilities.unregister([{ id: "1", method: "textDocument/hover" }]))
    assert.isFalse(capabilities.supports("hoverProvider"))
  })
})

describe("argument validation", () => {
  it("accepts good arguments and drops explicit nulls", () => {
    const ok = LspTools.validate(LspTools.references, {
      file: "a.ts",
      line: 1,
      character: 2,
      include_declaration: null
    })
    assert.isTrue(Result.isSuccess(ok))
  })
  it("names every bad argument", () => {
    const bad = LspTools.validate(LspTools.hover, { file: "", line: 0, character: "x" })
    assert.isTrue(Result.isFailure(bad))
    if (Result.isFailure(bad)) {
      assert.include(bad.failure, 'at ["file"]')
      assert.include(bad.failure, 'at ["line"]')
      assert.include(bad.failure, 'at ["character"]')
      assert.include(bad.failure, "Invalid arguments for lsp_hover")
    }
    const direction = LspTools.validate(LspTools.callHierarchy, { file: "a", line: 1, character: 1, direction: "up" })
    assert.isTrue(Result.isFailure(direction) && direction.failure.includes('"incoming" | "outgoing"'))
    // Past LSP's largest uinteger a position wraps in a server (clangd read 2^32 + 1 as line 1).
    const wraps = LspTools.validate(LspTools.rename, {
      file: "a.c",
      line: 2 ** 32 + 1,
      character: 2 ** 31,
      new_name: "b"
    })
    assert.isTrue(
      Result.isFailure(wraps) && wraps.failure.includes('at ["line"]') && wraps.failure.includes('at ["character"]')
    )
    assert.isTrue(Result.isSuccess(LspTools.validate(LspTools.hover, { file: "a.c", line: 2 ** 31 - 1, character: 1 })))
  })
  it("a validator built once decodes good arguments the same as every time, and still names bad ones", () => {
    const validate = LspTools.validator(LspTools.inlayHints)
    assert.deepStrictEqual(
      validate({ file: "a.ts", start_line: 2, end_line: null }),
      Result.succeed({ file: "a.ts", start_line: 2 })
    )
    const bad = validate({ file: "a.ts", start_line: 0, end_line: -1 })
    assert.isTrue(
      Result.isFailure(bad) && bad.failure.includes('at ["start_line"]') && bad.failure.includes('at ["end_line"]')
    )
  })
  it("every tool has an object JSON Schema with its required arguments", () => {
    // MCP clients reject a tools/list whose entries lack `type: "object"` (the SDK's own check).
    for (const definition of LspTools.all) {
      assert.strictEqual(LspTools.toTool(definition).inputSchema.type, "object", definition.name)
    }
    const hover = LspTools.toTool(LspTools.hover)
    assert.deepStrictEqual(hover.inputSchema.required, ["file", "line", "character"])
    assert.lengthOf(new Set(LspTools.all.map((d) => d.name)), 15)
  })
})

describe("server settings", () => {
  const spec = LspSpec.make({
    command: "x",
    cwd: "/w",
    settings: { typescript: { inlayHints: { includeInlayVariableTypeHints: true } }, yaml: { validate: false } }
  })
  it("answer a configuration section by its dotted path; an absent one is an empty object, never null", () => {
    assert.deepStrictEqual(LspSpec.section(spec, "typescript.inlayHints"), { includeInlayVariableTypeHints: true })
    assert.deepStrictEqual(LspSpec.section(spec, "yaml.validate"), false)
    assert.deepStrictEqual(LspSpec.section(spec, "python.analysis"), {})
    assert.deepStrictEqual(LspSpec.section(spec, undefined), spec.settings)
    assert.deepStrictEqual(LspSpec.section(LspSpec.make({ command: "x", cwd: "/w" }), "css"), {})
  })
})

describe("rendering", () => {
  it("lists document symbols in source order at every level, whatever order the server used", () => {
    const range = (line: number) => ({ start: { line, character: 0 }, end: { line, character: 1 } })
    const symbol = (name: string, line: number, children?: Array<Protocol.DocumentSymbol>) => ({
      name,
      kind: Protocol.SymbolKind.Function,
      range: range(line),
      selectionRange: range(line),
      ...(children === undefined ? {} : { children })
    })
    const items = Render.documentSymbols([symbol("b", 9), symbol("a", 2, [symbol("y", 5), symbol("x", 3)])])
    assert.deepStrictEqual(
      items.map((s) => [s.name, s.line, s.children?.map((c) => c.name)]),
      [
        ["a", 3, ["x", "y"]],
        ["b", 10, undefined]
      ]
    )
  })
})

describe("text edits", () => {
  it("applies edits from the end, by UTF-16 offsets, across CRLF lines", () => {
    const text = "const a = 1\r\nconst b = a\r\n"
    const edits = [
      { range: { start: { line: 0, character: 6 }, end: { line: 0, character: 7 } }, newText: "x" },
      { range: { start: { line: 1, character: 10 }, end: { line: 1, character: 11 } }, newText: "x" }
    ]
    assert.strictEqual(Edits.applyTextEdits(text, edits), "const x = 1\r\nconst b = x\r\n")
    assert.strictEqual(Edits.offsetAt("ab\ncd", { line: 1, character: 99 }), 5)
  })

  it("inserts where another edit starts go before what it puts there, in their order", () => {
    const at = (start: number, end: number, newText: string) => ({
      range: { start: { line: 0, character: start }, end: { line: 0, character: end } },
      newText
    })
    assert.strictEqual(
      Edits.applyTextEdits("abcd", [at(1, 3, "X"), at(1, 1, "1"), at(1, 1, "2"), at(3, 3, "3")]),
      "a12X3d"
    )
  })
})

describe("router state", () => {
  it("is Ready only when every backend is, Degraded when some serve", () => {
    assert.strictEqual(LspRouter.summarize(["Ready", "Ready"]), "Ready")
    assert.strictEqual(LspRouter.summarize(["Ready", "Restarting"]), "Degraded")
    assert.strictEqual(LspRouter.summarize(["Stopped", "Restarting"]), "Restarting")
    assert.strictEqual(LspRouter.summarize(["Stopped", "Failed"]), "Failed")
    assert.strictEqual(LspRouter.summarize(["Stopped"]), "Stopped")
  })
})
