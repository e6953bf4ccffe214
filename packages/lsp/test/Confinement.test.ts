/**
 * The lsp_* tools stay inside the workspace, against typescript-language-server (and the fake
 * server for a hostile `workspace/applyEdit`): every way out — `..`, an absolute path, a `file:`
 * URI, a symlinked file, a symlinked folder, an edit the server proposes — is refused with an
 * error that names the path and the root, and no file outside changes; the paths inside still
 * answer, and `allowOutsideWorkspace` lets exactly the folders it names through.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess, type Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as LspSpec from "../src/LspSpec.ts"
import { escapes, fastPolicy, fixtures, open, snapshot, textOf, typescript } from "./helpers.ts"

/** The typed error a refused call carries, as the agent's structured result shows it. */
const refusal = (result: Toolset.ToolResult) => {
  assert.isTrue(result.isError, `expected a refusal, got: ${textOf(result)}`)
  const error = result.structuredContent?.error
  return Predicate.isObject(error) ? error : {}
}

/**
 * Waits until the server has the whole project, the folder outside included: `src/uses.ts`'s type
 * error is about a value from `../outside`, so it is reported only then.
 */
const loaded = (toolset: Toolset.Toolset) =>
  Effect.gen(function* () {
    const diagnostics = yield* toolset.callTool("lsp_diagnostics", { file: "src/uses.ts" })
    assert.include(textOf(diagnostics), "Type 'number' is not assignable to type 'string'")
  })

const withOutside = (root: string, allowOutsideWorkspace?: true | ReadonlyArray<string>) =>
  LspSpec.make({ ...typescript(root), ...(allowOutsideWorkspace === undefined ? {} : { allowOutsideWorkspace }) })

describe("LSP tools stay inside the workspace", () => {
  it.live("file arguments that lead out are refused, naming the path and the root; inside ones answer", () =>
    Effect.gen(function* () {
      const { root, outside } = escapes()
      const { toolset, close } = yield* open({ name: "ts", spec: withOutside(root), policy: fastPolicy() })
      yield* toolset.start
      // Waits for the project to load, so the hovers below are semantic ones.
      yield* loaded(toolset)

      const secret = NodePath.join(outside, "secret.ts")
      const ways = [
        { file: "../outside/secret.ts", resolved: secret },
        { file: secret, resolved: secret },
        { file: NodeUrl.pathToFileURL(secret).href, resolved: secret },
        { file: "linked.ts", resolved: secret },
        { file: "outdir/secret.ts", resolved: secret },
        { file: "src/../../outside/secret.ts", resolved: secret }
      ]
      for (const { file, resolved } of ways) {
        const hover = yield* toolset.callTool("lsp_hover", { file, line: 2, character: 14 })
        assert.deepStrictEqual(refusal(hover), {
          _tag: "OutsideWorkspace",
          argument: "file",
          path: file,
          resolved,
          root
        })
        assert.include(textOf(hover), `file: ${JSON.stringify(file)} is not inside the workspace ${root}`)
        assert.include(textOf(hover), resolved)
        assert.notInclude(textOf(hover), "hunter2")
        const diagnostics = yield* toolset.callTool("lsp_diagnostics", { file })
        assert.strictEqual(refusal(diagnostics)._tag, "OutsideWorkspace")
      }
      const elsewhere = yield* toolset.callTool("lsp_document_symbols", { file: "/etc/hostname.ts" })
      assert.strictEqual(refusal(elsewhere)._tag, "OutsideWorkspace")
      // Nothing outside was ever opened on the server.
      const workspace = yield* toolset.callTool("lsp_workspace", {})
      assert.include(textOf(workspace), "Open documents: src/uses.ts (v1)\n")

      // Hostile spellings are refused before the disk is touched, naming the argument.
      const bad = [
        { file: "src/main.ts\u0000.txt", problem: "NUL" },
        { file: `src/${"a/".repeat(2100)}main.ts`, problem: "longer than" },
        { file: "file://remote-host/etc/passwd", problem: "file URI" }
      ]
      for (const { file, problem } of bad) {
        const hover = yield* toolset.callTool("lsp_hover", { file, line: 1, character: 1 })
        assert.deepStrictEqual(refusal(hover), { _tag: "InvalidPath", argument: "file" })
        assert.include(textOf(hover), "file: ")
        assert.include(textOf(hover), problem)
      }

      // Inside, by any spelling: relative, absolute, a file: URI, out and back in.
      for (const file of [
        "src/main.ts",
        NodePath.join(root, "src/main.ts"),
        NodeUrl.pathToFileURL(NodePath.join(root, "src/main.ts")).href,
        "../ws/src/main.ts"
      ]) {
        const hover = yield* toolset.callTool("lsp_hover", { file, line: 3, character: 23 })
        // tsserver's syntax server may answer first ("import add"): either way, an answer about `add`.
        assert.isNotTrue(hover.isError, file)
        assert.include(textOf(hover), "add", file)
      }
      // An open file swapped for a symlink that leads out is refused when it is read again.
      const shapes = NodePath.join(root, "src/shapes.ts")
      assert.isNotTrue(
        (yield* toolset.callTool("lsp_hover", { file: "src/shapes.ts", line: 3, character: 14 })).isError
      )
      NodeFs.rmSync(shapes)
      NodeFs.symlinkSync(secret, shapes)
      const swapped = yield* toolset.callTool("lsp_hover", { file: "src/shapes.ts", line: 2, character: 14 })
      assert.deepStrictEqual(refusal(swapped), {
        _tag: "OutsideWorkspace",
        argument: "file",
        path: "src/shapes.ts",
        resolved: secret,
        root
      })
      assert.notInclude(textOf(swapped), "hunter2")

      // A reference outside the workspace is still listed, but its source line is not read.
      const references = yield* toolset.callTool("lsp_references", { file: "src/math.ts", line: 2, character: 17 })
      assert.include(textOf(references), "src/main.ts:3:23: const total: number = add(1, 2)")
      assert.include(textOf(references), `${NodePath.join(outside, "consumer.ts")}:1:10: \n`)
      assert.include(textOf(references), `${NodePath.join(outside, "consumer.ts")}:3:21: `)
      assert.notInclude(textOf(references), "import { add }")
      assert.notInclude(textOf(references), "export const four")

      const pid = (yield* toolset.state).pid ?? 0
      yield* close
      assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )

  it.live("format and rename that would write outside are refused whole; no file changes, inside or out", () =>
    Effect.gen(function* () {
      const { base, root, outside } = escapes()
      const { toolset } = yield* open({ name: "ts", spec: withOutside(root), policy: fastPolicy() })
      yield* toolset.start
      yield* loaded(toolset)
      const before = snapshot(base)

      for (const file of ["../outside/ugly.ts", "outdir/ugly.ts", NodePath.join(outside, "ugly.ts")]) {
        const format = yield* toolset.callTool("lsp_format", { file })
        assert.strictEqual(refusal(format)._tag, "OutsideWorkspace", file)
      }
      // `add` is used by ../outside/consumer.ts too, which the project takes in.
      const rename = yield* toolset.callTool("lsp_rename", {
        file: "src/math.ts",
        line: 2,
        character: 17,
        new_name: "sum"
      })
      const error = refusal(rename)
      assert.strictEqual(error._tag, "OutsideWorkspace")
      assert.strictEqual(error.path, NodeUrl.pathToFileURL(NodePath.join(outside, "consumer.ts")).href)
      assert.strictEqual(error.root, root)
      assert.include(textOf(rename), "refused whole")
      assert.include(textOf(rename), "consumer.ts")
      assert.deepStrictEqual(snapshot(base), before)

      // A rename that stays inside is applied.
      const inside = yield* toolset.callTool("lsp_rename", {
        file: "src/math.ts",
        line: 6,
        character: 18,
        new_name: "Figure"
      })
      assert.include(textOf(inside), "Renamed to Figure: ")
      assert.include(NodeFs.readFileSync(NodePath.join(root, "src/math.ts"), "utf8"), "interface Figure {")
      assert.include(NodeFs.readFileSync(NodePath.join(root, "src/shapes.ts"), "utf8"), "implements Figure")
    })
  )

  it.live("allowOutsideWorkspace lets the extra roots it lists through, and only those; true lets all", () =>
    Effect.gen(function* () {
      const { root, outside, other } = escapes()
      const { toolset } = yield* open({ name: "ts", spec: withOutside(root, ["../outside"]), policy: fastPolicy() })
      yield* toolset.start
      yield* loaded(toolset)

      const references = yield* toolset.callTool("lsp_references", { file: "src/math.ts", line: 2, character: 17 })
      assert.include(textOf(references), `${NodePath.join(outside, "consumer.ts")}:3:21: export const four = add(2, 2)`)
      for (const file of ["../outside/secret.ts", "linked.ts", "outdir/secret.ts"]) {
        // Each spelling may land in a project of its own: its diagnostics wait for that to load.
        const diagnostics = yield* toolset.callTool("lsp_diagnostics", { file })
        assert.include(textOf(diagnostics), "No diagnostics in ", file)
        const hover = yield* toolset.callTool("lsp_hover", { file, line: 2, character: 14 })
        assert.isNotTrue(hover.isError, file)
        assert.include(textOf(hover), "const secret", file)
      }
      const note = yield* toolset.callTool("lsp_hover", { file: "../other/note.ts", line: 1, character: 14 })
      assert.deepInclude(refusal(note), { _tag: "OutsideWorkspace", root })
      assert.include(textOf(note), outside)

      const rename = yield* toolset.callTool("lsp_rename", {
        file: "src/math.ts",
        line: 2,
        character: 17,
        new_name: "sum"
      })
      assert.include(textOf(rename), "Renamed to sum: ")
      assert.include(
        NodeFs.readFileSync(NodePath.join(outside, "consumer.ts"), "utf8"),
        "export const four = sum(2, 2)"
      )

      const anywhere = yield* open({ name: "ts-anywhere", spec: withOutside(root, true), policy: fastPolicy() })
      yield* anywhere.toolset.start
      const symbols = yield* anywhere.toolset.callTool("lsp_document_symbols", {
        file: NodePath.join(other, "note.ts")
      })
      assert.include(textOf(symbols), "constant note (line 1)")
    })
  )

  it.live(
    "a FIFO inside the workspace that the server points at or edits is refused at once, never opened to wait",
    () =>
      Effect.gen(function* () {
        const { root } = escapes()
        const fifo = NodePath.join(root, "src/pipe.ts")
        NodeChildProcess.execFileSync("mkfifo", [fifo])
        const uri = NodeUrl.pathToFileURL(fifo).href
        const edit = {
          changes: {
            [uri]: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "x" }]
          }
        }
        const spec = LspSpec.make({
          command: process.execPath,
          args: [NodePath.join(fixtures, "fake-server.mjs")],
          env: { FAKE_LSP_MODE: "edit", FAKE_LSP_EDITS: JSON.stringify([edit]), FAKE_LSP_DEFINITION: uri },
          cwd: root
        })
        const { toolset, close } = yield* open({ name: "fake", spec, policy: fastPolicy({ call_timeout: "20s" }) })
        yield* toolset.start
        // Reading the FIFO for the definition's snippet blocked the whole process in open(); editing
        // it held a thread-pool thread, the call past its timeout, and the process's exit.
        const definition = yield* toolset.callTool("lsp_definition", { file: "src/main.ts", line: 1, character: 1 })
        assert.include(textOf(definition), "src/pipe.ts:1")
        const reply = JSON.parse(
          textOf(yield* toolset.callTool("lsp_hover", { file: "src/main.ts", line: 1, character: 1 }))
        )
        assert.isFalse(reply.applied)
        assert.include(reply.failureReason, "not a regular file (a FIFO)")
        yield* close
      })
  )

  it.live("a workspace/applyEdit from the server that touches a file outside is not applied at all", () =>
    Effect.gen(function* () {
      const { base, root, outside } = escapes()
      const edit = (uri: string) => ({
        changes: {
          [NodeUrl.pathToFileURL(NodePath.join(root, "src/main.ts")).href]: [
            { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "// edited\n" }
          ],
          [uri]: [
            { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "// edited\n" }
          ]
        }
      })
      const edits = [
        edit(NodeUrl.pathToFileURL(NodePath.join(outside, "secret.ts")).href),
        {
          documentChanges: [{ kind: "create", uri: NodeUrl.pathToFileURL(NodePath.join(root, "outdir/new.ts")).href }]
        },
        { documentChanges: [{ kind: "delete", uri: NodeUrl.pathToFileURL(NodePath.join(root, "linked.ts")).href }] },
        edit(NodeUrl.pathToFileURL(NodePath.join(root, "src/shapes.ts")).href)
      ]
      const spec = LspSpec.make({
        command: process.execPath,
        args: [NodePath.join(fixtures, "fake-server.mjs")],
        env: { FAKE_LSP_MODE: "edit", FAKE_LSP_EDITS: JSON.stringify(edits) },
        cwd: root
      })
      const { toolset, close } = yield* open({ name: "fake", spec, policy: fastPolicy() })
      yield* toolset.start
      const before = snapshot(base)
      // The fake server sends edit N when asked to hover line N, and answers with the client's reply.
      for (const line of [1, 2, 3]) {
        const hover = yield* toolset.callTool("lsp_hover", { file: "src/main.ts", line, character: 1 })
        const reply = JSON.parse(textOf(hover))
        assert.isFalse(reply.applied, `edit ${line}`)
        assert.include(reply.failureReason, "is not inside the workspace")
      }
      assert.deepStrictEqual(snapshot(base), before)
      assert.isTrue(NodeFs.lstatSync(NodePath.join(root, "linked.ts")).isSymbolicLink())
      const applied = JSON.parse(
        textOf(yield* toolset.callTool("lsp_hover", { file: "src/main.ts", line: 4, character: 1 }))
      )
      assert.deepStrictEqual(applied, { applied: true })
      assert.isTrue(NodeFs.readFileSync(NodePath.join(root, "src/shapes.ts"), "utf8").startsWith("// edited\n"))
      const pid = (yield* toolset.state).pid ?? 0
      yield* close
      assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )
})
