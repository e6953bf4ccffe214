/**
 * The tools not covered by TypeScript.test.ts, against typescript-language-server on the fixture
 * project: what each answers (names, 1-based positions, edits on disk), and that the tool the
 * server has no provider for is left out of the catalogue and refused when called.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { fastPolicy, fixtures, open, project, textOf, toolNames, typescript } from "./helpers.ts"

/** typescript-language-server shows inlay hints only when its settings ask for them. */
const inlayHints = {
  typescript: {
    inlayHints: {
      includeInlayParameterNameHints: "all",
      includeInlayVariableTypeHints: true,
      includeInlayFunctionLikeReturnTypeHints: true
    }
  }
}

describe("LspToolset tools with typescript-language-server", () => {
  it.live(
    "implementations, symbols, call hierarchy, signature help and inlay hints answer with the right content",
    () =>
      Effect.gen(function* () {
        const root = project("ts-project")
        const { toolset, close } = yield* open({ name: "ts", spec: typescript(root, inlayHints), policy: fastPolicy() })
        yield* toolset.start
        const listing = yield* toolset.tools
        assert.isTrue(listing.complete)
        assert.deepStrictEqual(toolNames(listing), [
          "lsp_workspace",
          "lsp_diagnostics",
          "lsp_hover",
          "lsp_definition",
          "lsp_references",
          "lsp_implementations",
          "lsp_document_symbols",
          "lsp_workspace_symbols",
          "lsp_code_actions",
          "lsp_rename",
          "lsp_format",
          "lsp_call_hierarchy",
          "lsp_signature_help",
          "lsp_inlay_hints"
        ])
        // No typeHierarchyProvider: left out of the catalogue, and refused by name when called.
        const typeHierarchy = yield* Effect.flip(
          toolset.callTool("lsp_type_hierarchy", { file: "src/math.ts", line: 6, character: 18, direction: "subtypes" })
        )
        assert.strictEqual(typeHierarchy._tag, "ToolNotFound")
        assert.include(typeHierarchy.message, "does not support lsp_type_hierarchy (no typeHierarchyProvider)")

        // Waits for the project to load, so the answers below are semantic ones.
        const clean = yield* toolset.callTool("lsp_diagnostics", { file: "src/shapes.ts" })
        assert.include(textOf(clean), "No diagnostics in src/shapes.ts")

        const shapes = yield* toolset.callTool("lsp_implementations", { file: "src/math.ts", line: 6, character: 18 })
        assert.include(textOf(shapes), "2 implementations:")
        assert.include(textOf(shapes), "src/math.ts:10:14: export class Square implements Shape {")
        assert.include(textOf(shapes), "src/shapes.ts:3:14: export class Circle implements Shape {")
        assert.deepInclude(shapes.structuredContent?.implementations, {
          file: "src/shapes.ts",
          line: 3,
          character: 14,
          endLine: 3,
          endCharacter: 20
        })
        const areas = yield* toolset.callTool("lsp_implementations", { file: "src/math.ts", line: 7, character: 3 })
        assert.include(textOf(areas), "src/math.ts:15:3: area(): number {")
        assert.include(textOf(areas), "src/shapes.ts:8:3: area(): number {")

        const outline = yield* toolset.callTool("lsp_document_symbols", { file: "src/shapes.ts" })
        assert.deepStrictEqual(outline.structuredContent?.symbols, [
          {
            name: "Circle",
            kind: "class",
            line: 3,
            children: [
              { name: "radius", kind: "property", line: 4 },
              { name: "constructor", kind: "constructor", line: 5 },
              { name: "area", kind: "method", line: 8 }
            ]
          },
          {
            name: "totalArea",
            kind: "function",
            line: 14,
            children: [{ name: "shapes.reduce() callback", kind: "function", line: 15 }]
          },
          { name: "label", kind: "function", line: 18 },
          { name: "summary", kind: "function", line: 22 },
          { name: "report", kind: "constant", line: 26 }
        ])
        assert.isTrue(textOf(outline).startsWith("class Circle (line 3)\n  property radius (line 4)\n"))

        const found = yield* toolset.callTool("lsp_workspace_symbols", { query: "totalArea" })
        assert.include(textOf(found), "function totalArea src/shapes.ts:14")
        assert.deepInclude(found.structuredContent?.symbols, {
          name: "totalArea",
          kind: "function",
          file: "src/shapes.ts",
          line: 14
        })
        const none = yield* toolset.callTool("lsp_workspace_symbols", { query: "NoSuchSymbolAnywhere" })
        assert.include(textOf(none), 'No symbols match "NoSuchSymbolAnywhere"')

        const callers = yield* toolset.callTool("lsp_call_hierarchy", {
          file: "src/shapes.ts",
          line: 14,
          character: 17,
          direction: "incoming"
        })
        assert.strictEqual(textOf(callers), "Callers of totalArea:\nfunction summary src/shapes.ts:22:17")
        const callees = yield* toolset.callTool("lsp_call_hierarchy", {
          file: "src/shapes.ts",
          line: 22,
          character: 17,
          direction: "outgoing"
        })
        assert.include(textOf(callees), "Calls from summary:")
        assert.include(textOf(callees), "function label src/shapes.ts:18:17")
        assert.include(textOf(callees), "function totalArea src/shapes.ts:14:17")

        // Inside `label("total", totalArea(shapes))`, on the second argument.
        const signature = yield* toolset.callTool("lsp_signature_help", {
          file: "src/shapes.ts",
          line: 23,
          character: 25
        })
        assert.deepStrictEqual(signature.structuredContent?.signatures, [
          { label: "label(name: string, value: number, unit?: string): string", active: true, activeParameter: 1 }
        ])
        assert.strictEqual(
          textOf(signature),
          "* label(name: string, value: number, unit?: string): string (parameter 2)"
        )

        const hints = yield* toolset.callTool("lsp_inlay_hints", {
          file: "src/shapes.ts",
          start_line: 22,
          end_line: 26
        })
        const list = hints.structuredContent?.hints
        assert.deepInclude(list, { line: 23, character: 16, label: "name:" })
        assert.deepInclude(list, { line: 23, character: 25, label: "value:" })
        assert.deepInclude(list, { line: 26, character: 20, label: ": string" })
        assert.isTrue(
          Array.isArray(list) && list.every((hint) => hint.line >= 22 && hint.line <= 26),
          "only hints of the requested lines"
        )
        assert.include(textOf(hints), "23:16 name:")

        const pid = (yield* toolset.state).pid ?? 0
        yield* close
        assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )

  it.live("format writes the formatted file and re-syncs it; code actions are listed, not applied", () =>
    Effect.gen(function* () {
      const root = project("ts-project")
      const unformatted = NodeFs.readFileSync(NodePath.join(fixtures, "ts-project/unformatted.ts.txt"), "utf8")
      NodeFs.writeFileSync(NodePath.join(root, "src/ugly.ts"), unformatted)
      const needsImport = "export const big = new Square(5)\n"
      NodeFs.writeFileSync(NodePath.join(root, "src/needs-import.ts"), needsImport)
      const { toolset, close } = yield* open({ name: "ts", spec: typescript(root), policy: fastPolicy() })
      yield* toolset.start

      const formatted = yield* toolset.callTool("lsp_format", { file: "src/ugly.ts" })
      assert.match(textOf(formatted), /^Formatted src\/ugly\.ts \(\d+ edits\)\.$/)
      assert.strictEqual(
        NodeFs.readFileSync(NodePath.join(root, "src/ugly.ts"), "utf8"),
        [
          "export function messy(a: number, b: number) {",
          "  const doubled = [a, b].map((x) => x * 2)",
          "  return doubled[0]! + doubled[1]!",
          "}",
          ""
        ].join("\n")
      )
      // The fixture itself is untouched: the test formatted a copy.
      assert.strictEqual(
        NodeFs.readFileSync(NodePath.join(fixtures, "ts-project/unformatted.ts.txt"), "utf8"),
        unformatted
      )
      // The server got the formatted text: a second format finds nothing to do.
      const again = yield* toolset.callTool("lsp_format", { file: "src/ugly.ts" })
      assert.strictEqual(textOf(again), "src/ugly.ts is already formatted.")
      const workspace = yield* toolset.callTool("lsp_workspace", {})
      assert.include(textOf(workspace), "src/ugly.ts (v2)")

      const missing = yield* toolset.callTool("lsp_diagnostics", { file: "src/needs-import.ts" })
      assert.include(textOf(missing), "src/needs-import.ts:1:24: error [typescript 2304]: Cannot find name 'Square'.")
      const actions = yield* toolset.callTool("lsp_code_actions", { file: "src/needs-import.ts", start_line: 1 })
      assert.deepInclude(actions.structuredContent?.actions, { title: 'Add import from "./math"', kind: "quickfix" })
      assert.include(textOf(actions), '- Add import from "./math" (quickfix)')
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(root, "src/needs-import.ts"), "utf8"), needsImport)
      const elsewhere = yield* toolset.callTool("lsp_code_actions", { file: "src/ugly.ts", start_line: 1, end_line: 4 })
      assert.notDeepInclude(elsewhere.structuredContent?.actions, {
        title: 'Add import from "./math"',
        kind: "quickfix"
      })

      const pid = (yield* toolset.state).pid ?? 0
      yield* close
      assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )
})
