/**
 * clangd, the one language server the tests run that has a type hierarchy. Debian 12's clangd 14
 * advertises `typeHierarchyProvider` but answers only its own earlier protocol, so this also pins
 * the fallback. clangd is a system package, which `.ci/run` installs (`apt-get install clangd`).
 */
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { clangd, fastPolicy, open, project, textOf, toolNames } from "./helpers.ts"

describe("LspToolset with clangd", () => {
  it.live("lsp_type_hierarchy gives the supertypes and subtypes of a class; stop leaves no process", () =>
    Effect.gen(function* () {
      const root = project("cpp-project")
      const { toolset, close } = yield* open({ name: "cpp", spec: clangd(root), policy: fastPolicy() })
      yield* toolset.start
      assert.include(toolNames(yield* toolset.tools), "lsp_type_hierarchy")

      const up = yield* toolset.callTool("lsp_type_hierarchy", {
        file: "shapes.cpp",
        line: 6,
        character: 8,
        direction: "supertypes"
      })
      assert.strictEqual(textOf(up), "Supertypes of Square:\nstruct Shape shapes.cpp:1:8")
      assert.deepStrictEqual(up.structuredContent?.types, [
        { name: "Shape", kind: "struct", file: "shapes.cpp", line: 1, character: 8, endLine: 1, endCharacter: 13 }
      ])
      const down = yield* toolset.callTool("lsp_type_hierarchy", {
        file: "shapes.cpp",
        line: 6,
        character: 8,
        direction: "subtypes"
      })
      assert.strictEqual(textOf(down), "Subtypes of Square:\nstruct Cube shapes.cpp:12:8")
      const top = yield* toolset.callTool("lsp_type_hierarchy", {
        file: "shapes.cpp",
        line: 1,
        character: 8,
        direction: "supertypes"
      })
      assert.strictEqual(textOf(top), "Supertypes of Shape: none.")
      const nothing = yield* toolset.callTool("lsp_type_hierarchy", {
        file: "shapes.cpp",
        line: 17,
        character: 1,
        direction: "subtypes"
      })
      assert.strictEqual(textOf(nothing), "No type at shapes.cpp:17:1.")

      // clangd ignores a closed stdin: stopping has to escalate, and must still leave nothing.
      const pid = (yield* toolset.state).pid ?? 0
      yield* toolset.stop
      assert.isFalse(ServerProcess.groupAlive(pid))
      yield* close
    })
  )
})
