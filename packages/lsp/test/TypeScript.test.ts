import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { fastPolicy, inState, open, project, textOf, toolNames, typescript, until } from "./helpers.ts"

describe("LspToolset with typescript-language-server", () => {
  it.live("Ready; hover, definition, references and diagnostics answer with the right content", () =>
    Effect.gen(function* () {
      const root = project("ts-project")
      const { toolset, close } = yield* open({ name: "ts", spec: typescript(root), policy: fastPolicy() })
      const before = yield* toolset.tools
      assert.isFalse(before.complete)
      assert.strictEqual(before.items.length, 15)
      yield* toolset.start
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.kind, "lsp")
      assert.strictEqual(status.server?.name, "typescript-language-server")

      const listing = yield* toolset.tools
      assert.isTrue(listing.complete)
      const names = toolNames(listing)
      assert.include(names, "lsp_hover")
      assert.include(names, "lsp_rename")
      assert.include(names, "lsp_call_hierarchy")
      assert.notInclude(names, "lsp_type_hierarchy")
      assert.strictEqual(status.toolCount, names.length)

      // Diagnostics wait for the project to load; before that tsserver's syntax server answers hovers partially.
      const clean = yield* toolset.callTool("lsp_diagnostics", { file: "src/main.ts" })
      assert.include(textOf(clean), "No diagnostics in src/main.ts")
      assert.isTrue(clean.structuredContent?.fresh)

      const hover = yield* toolset.callTool("lsp_hover", { file: "src/main.ts", line: 3, character: 23 })
      assert.include(textOf(hover), "add(a: number, b: number): number")
      assert.include(textOf(hover), "Adds two numbers.")

      const definition = yield* toolset.callTool("lsp_definition", { file: "src/main.ts", line: 3, character: 23 })
      assert.include(textOf(definition), "src/math.ts:2:17")
      assert.deepInclude(definition.structuredContent?.definitions, {
        file: "src/math.ts",
        line: 2,
        character: 17,
        endLine: 2,
        endCharacter: 20
      })

      const references = yield* toolset.callTool("lsp_references", {
        file: NodePath.join(root, "src/math.ts"),
        line: 2,
        character: 17
      })
      const refs = textOf(references)
      assert.include(refs, "6 references")
      assert.include(refs, "src/math.ts:2:17")
      assert.include(refs, "src/main.ts:1:10")
      assert.include(refs, "src/main.ts:3:23")
      assert.include(refs, "src/main.ts:5:37: export const area = square.area() + add(total, 4)")
      assert.include(refs, "src/broken.ts:3:30")

      const diagnostics = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(diagnostics), "src/broken.ts:3:14: error [typescript 2322]")
      assert.include(textOf(diagnostics), "Type 'number' is not assignable to type 'string'")

      const pid = status.pid ?? 0
      yield* close
      assert.isFalse(ServerProcess.isAlive(pid))
      assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live("rename writes every file and re-syncs; editing a file on disk changes its diagnostics", () =>
    Effect.gen(function* () {
      const root = project("ts-project")
      const { toolset, close } = yield* open({ name: "ts", spec: typescript(root), policy: fastPolicy() })
      yield* toolset.start
      const first = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(first), "Type 'number' is not assignable to type 'string'")

      const renamed = yield* toolset.callTool("lsp_rename", {
        file: "src/math.ts",
        line: 2,
        character: 17,
        new_name: "sum"
      })
      assert.include(textOf(renamed), "Renamed to sum: 6 edits in 3 files")
      const math = NodeFs.readFileSync(NodePath.join(root, "src/math.ts"), "utf8")
      const main = NodeFs.readFileSync(NodePath.join(root, "src/main.ts"), "utf8")
      assert.include(math, "export function sum(a: number, b: number)")
      assert.include(main, 'import { sum, Square } from "./math.ts"')
      assert.include(main, "square.area() + sum(total, 4)")
      assert.notInclude(main, "add(")
      // The server saw the new text: the renamed function is found under its new name.
      const hover = yield* toolset.callTool("lsp_hover", { file: "src/main.ts", line: 3, character: 23 })
      assert.include(textOf(hover), "sum(a: number, b: number): number")

      NodeFs.writeFileSync(
        NodePath.join(root, "src/broken.ts"),
        'import { sum } from "./math.ts"\n\nexport const right: number = sum(1, 2)\n'
      )
      const fixed = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(fixed), "No diagnostics in src/broken.ts")
      NodeFs.writeFileSync(
        NodePath.join(root, "src/broken.ts"),
        'import { sum } from "./math.ts"\n\nexport const flag: boolean = sum(1, 2)\n'
      )
      const again = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(again), "Type 'number' is not assignable to type 'boolean'")

      // A request about an open document goes out before the file is checked (see ToolHandlers'
      // `ask`): a file changed on disk since must still get an answer about its new text.
      const flag = { file: "src/broken.ts", line: 3, character: 14 }
      assert.include(textOf(yield* toolset.callTool("lsp_hover", flag)), "const flag: boolean")
      NodeFs.writeFileSync(
        NodePath.join(root, "src/broken.ts"),
        'import { sum } from "./math.ts"\n\nexport const flag: bigint = BigInt(sum(1, 2))\n'
      )
      assert.include(textOf(yield* toolset.callTool("lsp_hover", flag)), "const flag: bigint")
      NodeFs.rmSync(NodePath.join(root, "src/broken.ts"))
      const gone = yield* toolset.callTool("lsp_hover", flag)
      assert.isTrue(gone.isError)
      assert.include(textOf(gone), "file: cannot read")
      yield* close
    })
  )

  it.live("SIGKILL: Restarting, then Ready; documents re-opened on demand; diagnostics cleared, then refreshed", () =>
    Effect.gen(function* () {
      const root = project("ts-project")
      const { toolset, close } = yield* open({ name: "ts", spec: typescript(root), policy: fastPolicy() })
      yield* toolset.start
      const before = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(before), "error [typescript 2322]")
      const workspace = yield* toolset.callTool("lsp_workspace", {})
      assert.include(textOf(workspace), "Open documents: src/broken.ts (v1)")
      assert.include(textOf(workspace), "Documents with diagnostics: src/broken.ts (1)")
      const status = yield* toolset.state
      const pid = status.pid ?? 0
      process.kill(pid, "SIGKILL")
      const restarting = yield* inState(toolset, "Restarting")
      assert.strictEqual(restarting.lastError?.tag, "ServerCrashed")
      const ready = yield* until(toolset, (s) => s.state === "Ready" && s.restarts === 1)
      assert.notStrictEqual(ready.pid, pid)
      assert.isFalse(ServerProcess.groupAlive(pid))
      const fresh = yield* toolset.callTool("lsp_workspace", {})
      assert.include(textOf(fresh), "Open documents: none")
      assert.include(textOf(fresh), "Documents with diagnostics: none")
      const after = yield* toolset.callTool("lsp_diagnostics", { file: "src/broken.ts" })
      assert.include(textOf(after), "error [typescript 2322]")
      assert.deepStrictEqual(after.structuredContent?.version, 1)
      const newPid = ready.pid ?? 0
      yield* toolset.stop
      assert.isFalse(ServerProcess.groupAlive(newPid))
      yield* close
    })
  )
})
