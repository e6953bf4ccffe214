import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as LspRouter from "../src/LspRouter.ts"
import { fastPolicy, open, project, pyright, textOf, toolNames, typescript } from "./helpers.ts"

describe("LspRouter over typescript-language-server and pyright", () => {
  it.live("routes file tools by type, broadcasts workspace tools, keeps each backend's status", () =>
    Effect.gen(function* () {
      const ts = yield* open({ name: "ts", spec: typescript(project("ts-project")), policy: fastPolicy() })
      const py = yield* open({ name: "py", spec: pyright(project("py-project")), policy: fastPolicy() })
      const router = LspRouter.make("lsp", [ts.toolset, py.toolset])
      yield* router.start
      assert.strictEqual((yield* router.state).state, "Ready")
      const listing = yield* router.tools
      assert.isTrue(listing.complete)
      assert.strictEqual(new Set(toolNames(listing)).size, listing.items.length)
      assert.include(toolNames(listing), "lsp_format")

      const tsHover = yield* router.callTool("lsp_hover", { file: "src/math.ts", line: 2, character: 17 })
      assert.include(textOf(tsHover), "add(a: number, b: number): number")
      const pyHover = yield* router.callTool("lsp_hover", { file: "app.py", line: 1, character: 5 })
      assert.include(textOf(pyHover), "def greet(name: str) -> str")

      const workspace = yield* router.callTool("lsp_workspace", {})
      assert.include(textOf(workspace), "[ts]")
      assert.include(textOf(workspace), "[py]")
      assert.include(textOf(workspace), "\n---\n")
      const backends = workspace.structuredContent?.backends
      assert.lengthOf(Array.isArray(backends) ? backends : [], 2)

      const nobody = yield* router.callTool("lsp_hover", { file: "notes.md", line: 1, character: 1 })
      assert.isTrue(nobody.isError)
      assert.include(textOf(nobody), "no language server handles notes.md")
      const noFile = yield* router.callTool("lsp_hover", {})
      assert.isTrue(noFile.isError)
      assert.deepStrictEqual(noFile.structuredContent, { error: { _tag: "InvalidPath", argument: "file" } })
      const nul = yield* router.callTool("lsp_hover", { file: "src/math.ts\u0000.py", line: 1, character: 1 })
      assert.include(textOf(nul), "file: ")
      assert.include(textOf(nul), "contains a NUL byte")
      // Routed by its type, and refused by the backend that owns it: it is outside that one's root.
      const leading = yield* router.callTool("lsp_hover", { file: "../../../../etc/x.py", line: 1, character: 1 })
      assert.nestedInclude(leading.structuredContent, {
        "error._tag": "OutsideWorkspace",
        "error.path": "../../../../etc/x.py"
      })

      yield* py.toolset.stop
      assert.strictEqual((yield* ts.toolset.state).state, "Ready")
      assert.strictEqual((yield* router.state).state, "Degraded")
      assert.isFalse((yield* router.tools).complete)
      yield* ts.close
      yield* py.close
    })
  )
})
