import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import { Policy, ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { project } from "../../lsp/test/helpers.ts"
import * as Toolsets from "../src/Toolsets.ts"
import { config, open } from "./helpers.ts"

const bin = (name: string) => NodePath.resolve(import.meta.dirname, "../../../node_modules/.bin", name)

const lspEntry = (command: string, cwd: string, fileTypes: ReadonlyArray<string>): AgentConfig.ToolsetConfig => ({
  identity: `lsp/cmd/${command}`,
  signature: command,
  name: command,
  prefix: undefined,
  type: "lsp",
  transport: { _tag: "stdio", command: bin(command), args: ["--stdio"], env: {}, cwd },
  fileTypes,
  tools: undefined,
  lifecycle: {},
  policy: Policy.fromLifecycleUnknownSync({ startup_timeout: "30s", call_timeout: "30s" }),
  lazy: false,
  secrets: [],
  path: `agents.root.toolsets.${command}`
})

/** Every text item of a result: a merged workspace answer has one per server. */
const text = (result: { readonly content: ReadonlyArray<{ readonly [key: string]: unknown }> }) =>
  result.content.map((c) => (typeof c.text === "string" ? c.text : "")).join("\n")

describe("several language servers in one agent", () => {
  it.live("sit behind one router: file tools go by file type, workspace tools are merged", () =>
    Effect.gen(function* () {
      const ts = project("ts-project")
      const py = project("py-project")
      const { registry, close } = yield* open(
        config([lspEntry("typescript-language-server", ts, [".ts"]), lspEntry("pyright-langserver", py, [".py"])])
      )
      yield* registry.start
      const catalog = yield* registry.catalog()
      assert.isTrue(catalog.complete)
      assert.deepStrictEqual(catalog.shadowed, [])
      const hover = catalog.tools.find((t) => t.name === "lsp_hover")
      assert.strictEqual(hover?.toolset, "typescript-language-server+pyright-langserver")
      const workspace = text(yield* registry.callTool("lsp_workspace", {}))
      assert.include(workspace, "typescript")
      assert.include(workspace, "pyright")
      const tsHover = text(
        yield* registry.callTool("lsp_hover", { file: NodePath.join(ts, "src/math.ts"), line: 2, character: 17 })
      )
      assert.include(tsHover, "add")
      const pyHover = text(
        yield* registry.callTool("lsp_hover", { file: NodePath.join(py, "app.py"), line: 1, character: 5 })
      )
      assert.include(pyHover, "greet")
      const pids = (yield* registry.snapshot).flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
      assert.strictEqual(pids.length, 2)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it("an entry's allow_outside_workspace reaches the language server's spec", () => {
    const entry = lspEntry("typescript-language-server", "/w", [".ts"])
    assert.isUndefined(Toolsets.lspSpec(entry).allowOutsideWorkspace)
    assert.deepStrictEqual(Toolsets.lspSpec({ ...entry, allowOutsideWorkspace: ["/shared"] }).allowOutsideWorkspace, [
      "/shared"
    ])
    assert.isTrue(Toolsets.lspSpec({ ...entry, allowOutsideWorkspace: true }).allowOutsideWorkspace)
  })
})
