import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { fastPolicy, open, project, pyright, textOf, toolNames } from "./helpers.ts"

describe("LspToolset with pyright-langserver", () => {
  it.live(
    "the catalogue is filtered by pyright's capabilities; hover and diagnostics answer, hover follows edits",
    () =>
      Effect.gen(function* () {
        const root = project("py-project")
        const { toolset, close } = yield* open({ name: "py", spec: pyright(root), policy: fastPolicy() })
        assert.lengthOf((yield* toolset.tools).items, 15)
        yield* toolset.start
        const listing = yield* toolset.tools
        assert.isTrue(listing.complete)
        assert.deepStrictEqual(toolNames(listing), [
          "lsp_workspace",
          "lsp_diagnostics",
          "lsp_hover",
          "lsp_definition",
          "lsp_references",
          "lsp_document_symbols",
          "lsp_workspace_symbols",
          "lsp_code_actions",
          "lsp_rename",
          "lsp_call_hierarchy",
          "lsp_signature_help"
        ])
        const hover = yield* toolset.callTool("lsp_hover", { file: "app.py", line: 1, character: 5 })
        assert.include(textOf(hover), "def greet(name: str) -> str")
        const diagnostics = yield* toolset.callTool("lsp_diagnostics", { file: "app.py" })
        assert.include(textOf(diagnostics), "app.py:5:14: error")
        assert.include(textOf(diagnostics), '"str" is not assignable to declared type "int"')
        const unsupported = yield* Effect.flip(toolset.callTool("lsp_format", { file: "app.py" }))
        assert.strictEqual(unsupported._tag, "ToolNotFound")
        const pid = (yield* toolset.state).pid ?? 0

        // A hover about an open file goes out before the file is checked, and is cancelled when it
        // changed on disk: pyright exits on a $/cancelRequest for a request it already answered, so
        // edits between hovers must leave it answering about the new text, in the same process.
        for (const name of ["first", "second", "third"]) {
          NodeFs.writeFileSync(
            NodePath.join(root, "app.py"),
            `def greet(name: str) -> str:\n    return "hello " + name\n\n\n${name}: int = greet("world")\n`
          )
          const renamed = yield* toolset.callTool("lsp_hover", { file: "app.py", line: 5, character: 1 })
          assert.include(textOf(renamed), `(variable) ${name}: int`)
        }
        const status = yield* toolset.state
        assert.strictEqual(status.state, "Ready")
        assert.strictEqual(status.pid, pid)
        yield* close
        assert.isFalse(ServerProcess.groupAlive(pid))
      })
  )
})

describe("pull diagnostics with pyright-langserver", () => {
  it.live(
    "pyright registers textDocument/diagnostic; lsp_diagnostics pulls, follows edits on disk, and pyright stays up",
    () =>
      Effect.gen(function* () {
        const root = project("py-project")
        const { toolset, close } = yield* open({ name: "py", spec: pyright(root), policy: fastPolicy() })
        yield* toolset.start
        const pid = (yield* toolset.state).pid

        const first = yield* toolset.callTool("lsp_diagnostics", { file: "app.py" })
        assert.strictEqual(first.structuredContent?.mode, "pull")
        assert.isTrue(first.structuredContent?.fresh)
        assert.include(textOf(first), "1 diagnostics in app.py:")
        assert.include(textOf(first), 'app.py:5:14: error [Pyright reportAssignmentType]: Type "str" is not assignable')
        const workspace = yield* toolset.callTool("lsp_workspace", {})
        assert.include(textOf(workspace), "Registered: textDocument/diagnostic")
        assert.include(textOf(workspace), "Documents with diagnostics: app.py (1)")

        NodeFs.writeFileSync(
          NodePath.join(root, "app.py"),
          'def greet(name: str) -> str:\n    return "hello " + name\n\n\ncount: str = greet("world")\n'
        )
        const fixed = yield* toolset.callTool("lsp_diagnostics", { file: "app.py" })
        assert.strictEqual(textOf(fixed), "No diagnostics in app.py.")
        assert.strictEqual(fixed.structuredContent?.version, 2)
        NodeFs.writeFileSync(
          NodePath.join(root, "app.py"),
          'def greet(name: str) -> str:\n    return "hello " + name\n\n\ngreet(42)\n'
        )
        const broken = yield* toolset.callTool("lsp_diagnostics", { file: "app.py" })
        assert.include(textOf(broken), "app.py:5:7: error")
        assert.include(textOf(broken), '"Literal[42]" is not assignable to "str"')

        // pyright sent workspace/diagnostic/refresh along the way; answered, it did not exit.
        const status = yield* toolset.state
        assert.strictEqual(status.state, "Ready")
        assert.strictEqual(status.pid, pid)
        assert.strictEqual(status.restarts, 0)
        yield* close
        assert.isFalse(ServerProcess.groupAlive(pid ?? 0))
      })
  )
})
