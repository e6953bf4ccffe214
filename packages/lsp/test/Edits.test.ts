/**
 * Workspace edits on a real file tree: one that names a file outside the workspace — as a text
 * edit, or a file it creates, renames or deletes, directly or through a symlink — is refused
 * whole, before anything is written; one that stays inside is applied in order.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Edits from "../src/internal/edits.ts"
import * as Workspace from "../src/internal/workspace.ts"
import { escapes, snapshot } from "./helpers.ts"

const uri = (path: string) => NodeUrl.pathToFileURL(path).href

const insert = (text: string): Protocol.TextEdit => ({
  range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
  newText: text
})

const replace = (
  [startLine, startCharacter]: readonly [number, number],
  [endLine, endCharacter]: readonly [number, number],
  newText: string
): Protocol.TextEdit => ({
  range: { start: { line: startLine, character: startCharacter }, end: { line: endLine, character: endCharacter } },
  newText
})

describe("Edits", () => {
  it.effect("an edit that names any file outside is refused whole, naming it, and writes nothing", () =>
    Effect.gen(function* () {
      const { base, root, outside } = escapes()
      const workspace = Workspace.make(root)
      const main = uri(NodePath.join(root, "src/main.ts"))
      const secret = uri(NodePath.join(outside, "secret.ts"))
      const inside: Protocol.TextDocumentEdit = {
        textDocument: { uri: main, version: null },
        edits: [insert("// edited\n")]
      }
      const cases: ReadonlyArray<readonly [Protocol.WorkspaceEdit, string, string]> = [
        [{ changes: { [main]: [insert("// edited\n")], [secret]: [insert("x")] } }, "changes", secret],
        [
          { documentChanges: [inside, { textDocument: { uri: secret, version: null }, edits: [insert("x")] }] },
          "documentChanges[1].textDocument.uri",
          secret
        ],
        [
          { documentChanges: [inside, { kind: "create", uri: uri(NodePath.join(outside, "new.ts")) }] },
          "documentChanges[1].uri",
          uri(NodePath.join(outside, "new.ts"))
        ],
        [
          { documentChanges: [inside, { kind: "create", uri: uri(NodePath.join(root, "outdir/new.ts")) }] },
          "documentChanges[1].uri",
          uri(NodePath.join(root, "outdir/new.ts"))
        ],
        [
          {
            documentChanges: [inside, { kind: "rename", oldUri: main, newUri: uri(NodePath.join(outside, "main.ts")) }]
          },
          "documentChanges[1].newUri",
          uri(NodePath.join(outside, "main.ts"))
        ],
        [
          {
            documentChanges: [inside, { kind: "rename", oldUri: secret, newUri: uri(NodePath.join(root, "stolen.ts")) }]
          },
          "documentChanges[1].oldUri",
          secret
        ],
        [
          {
            documentChanges: [
              inside,
              { kind: "delete", uri: uri(NodePath.join(root, "outdir")), options: { recursive: true } }
            ]
          },
          "documentChanges[1].uri",
          uri(NodePath.join(root, "outdir"))
        ],
        [
          { documentChanges: [inside, { kind: "delete", uri: uri(NodePath.join(root, "linked.ts")) }] },
          "documentChanges[1].uri",
          uri(NodePath.join(root, "linked.ts"))
        ]
      ]
      const before = snapshot(base)
      for (const [edit, argument, path] of cases) {
        const error = yield* Effect.flip(Edits.applyWorkspaceEdit(workspace, edit))
        assert.strictEqual(error._tag, "OutsideWorkspace", argument)
        assert.deepInclude(error, { argument, path, root }, argument)
        assert.isTrue(
          error.message.startsWith(`the server's edit was refused whole, nothing was written: ${argument}: `)
        )
        assert.deepStrictEqual(snapshot(base), before, argument)
      }
      assert.isTrue(NodeFs.lstatSync(NodePath.join(root, "linked.ts")).isSymbolicLink())
      assert.isTrue(NodeFs.lstatSync(NodePath.join(root, "outdir")).isSymbolicLink())

      const foreign = yield* Effect.flip(
        Edits.applyWorkspaceEdit(workspace, {
          changes: { [main]: [insert("x")], "untitled:Untitled-1": [insert("x")] }
        })
      )
      assert.deepInclude(foreign, { _tag: "InvalidPath", argument: "changes" })
      assert.include(foreign.message, '"untitled:Untitled-1" is not a file: URI')
      assert.deepStrictEqual(snapshot(base), before)

      // A server's edit that is not one is refused whole too, whatever it names.
      for (const malformed of [
        { documentChanges: 5 },
        { changes: { [main]: "rewrite everything" } },
        { documentChanges: [inside, { kind: "chmod", uri: main }] },
        { documentChanges: [inside, { kind: "create" }] },
        {
          changes: {
            [main]: [{ range: { start: { line: -1, character: 0 }, end: { line: 0, character: 0 } }, newText: "" }]
          }
        },
        // A range that ends before it starts wrote the file's text twice; overlapping ones garbled it.
        { changes: { [main]: [replace([0, 6], [0, 0], "")] } },
        {
          documentChanges: [
            {
              textDocument: { uri: main, version: null },
              edits: [replace([0, 0], [1, 2], "X"), replace([0, 1], [0, 2], "Y")]
            }
          ]
        },
        {
          documentChanges: [
            inside,
            {
              textDocument: { uri: main, version: null },
              edits: [replace([0, 1], [0, 3], "Y"), insert("x"), replace([0, 0], [0, 2], "X")]
            }
          ]
        }
      ]) {
        const error = yield* Effect.flip(Edits.applyWorkspaceEdit(workspace, malformed))
        assert.strictEqual(error._tag, "MalformedEdit", JSON.stringify(malformed))
        assert.include(error.message, "the server's edit is malformed: ")
      }
      assert.deepStrictEqual(snapshot(base), before)
      for (const edits of [[{ newText: "x" }], [replace([0, 0], [0, 4], "a"), replace([0, 3], [0, 5], "b")]]) {
        const unformattable = yield* Effect.flip(
          Edits.applyToFile(workspace, "file", NodePath.join(root, "src/main.ts"), edits)
        )
        assert.strictEqual(unformattable._tag, "MalformedEdit")
      }
      assert.deepStrictEqual(snapshot(base), before)

      const format = yield* Effect.flip(
        Edits.applyToFile(workspace, "file", NodePath.join(root, "outdir/ugly.ts"), [insert("x")])
      )
      assert.deepInclude(format, {
        _tag: "OutsideWorkspace",
        argument: "file",
        resolved: NodePath.join(outside, "ugly.ts")
      })
      assert.deepStrictEqual(snapshot(base), before)
    })
  )

  it.effect("an edit inside the workspace creates, edits, renames and deletes in order", () =>
    Effect.gen(function* () {
      const { root } = escapes()
      const workspace = Workspace.make(root)
      const created = NodePath.join(root, "src/generated/made.ts")
      const moved = NodePath.join(root, "src/generated/moved.ts")
      const changes = yield* Edits.applyWorkspaceEdit(workspace, {
        documentChanges: [
          { kind: "create", uri: uri(created) },
          { textDocument: { uri: uri(created), version: null }, edits: [insert("export const made = 1\n")] },
          { kind: "rename", oldUri: uri(created), newUri: uri(moved) },
          { kind: "delete", uri: uri(NodePath.join(root, "src/shapes.ts")) }
        ]
      })
      assert.deepStrictEqual(
        changes.map((change) => change.kind),
        ["create", "edit", "rename", "delete"]
      )
      assert.strictEqual(NodeFs.readFileSync(moved, "utf8"), "export const made = 1\n")
      assert.isFalse(NodeFs.existsSync(created))
      assert.isFalse(NodeFs.existsSync(NodePath.join(root, "src/shapes.ts")))
      // With the outside folder allowed, the same kind of edit goes through.
      const allowed = Workspace.make(root, ["../outside"])
      const into = NodePath.join(root, "outdir/new.ts")
      yield* Edits.applyWorkspaceEdit(allowed, { documentChanges: [{ kind: "create", uri: uri(into) }] })
      assert.isTrue(NodeFs.existsSync(into))
    })
  )

  it.effect("a rename onto a file that exists replaces it only when the server asks to overwrite it", () =>
    Effect.gen(function* () {
      const { root } = escapes()
      const workspace = Workspace.make(root)
      const [from, onto] = [NodePath.join(root, "src/from.ts"), NodePath.join(root, "src/onto.ts")]
      const rename = (options?: { readonly overwrite?: boolean; readonly ignoreIfExists?: boolean }) => {
        NodeFs.writeFileSync(from, "from\n")
        NodeFs.writeFileSync(onto, "keep me\n")
        return Edits.applyWorkspaceEdit(workspace, {
          documentChanges: [{ kind: "rename", oldUri: uri(from), newUri: uri(onto), ...(options && { options }) }]
        })
      }
      for (const options of [undefined, { overwrite: false }]) {
        const refused = yield* Effect.flip(rename(options))
        assert.strictEqual(refused._tag, "EditFailed")
        assert.include(refused.message, "did not ask to overwrite it")
        assert.strictEqual(NodeFs.readFileSync(onto, "utf8"), "keep me\n")
        assert.isTrue(NodeFs.existsSync(from))
      }
      yield* rename({ ignoreIfExists: true })
      assert.strictEqual(NodeFs.readFileSync(onto, "utf8"), "keep me\n")
      assert.isTrue(NodeFs.existsSync(from))
      // Overwrite wins over ignoreIfExists, as the protocol says.
      yield* rename({ overwrite: true, ignoreIfExists: true })
      assert.strictEqual(NodeFs.readFileSync(onto, "utf8"), "from\n")
      assert.isFalse(NodeFs.existsSync(from))
    })
  )
})
