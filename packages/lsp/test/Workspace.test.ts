/**
 * The workspace check on a real file tree: what a path argument may look like, and where each
 * kind of path really leads — files not there yet, symlinked folders, dangling symlinks, loops,
 * a root that is itself a symlink, and extra roots.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import { assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Workspace from "../src/Workspace.ts"

/** `<base>/ws` with `src/a.ts`, `<base>/outside` with `x.ts`, and `<base>/link` → `ws`. */
const tree = () => {
  const base = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-workspace-")))
  const root = NodePath.join(base, "ws")
  const outside = NodePath.join(base, "outside")
  NodeFs.mkdirSync(NodePath.join(root, "src"), { recursive: true })
  NodeFs.mkdirSync(outside)
  NodeFs.writeFileSync(NodePath.join(root, "src/a.ts"), "")
  NodeFs.writeFileSync(NodePath.join(outside, "x.ts"), "")
  NodeFs.symlinkSync(root, NodePath.join(base, "link"))
  return { base, root, outside }
}

/** The error of a refused path; throws if it was accepted. */
const errorOf = <E>(result: Result.Result<unknown, E>): E => Result.getOrThrow(Result.flip(result))

const accepts = (workspace: Workspace.Workspace, file: string) => {
  const result = Workspace.resolve(workspace, "file", file)
  assert.isTrue(Result.isSuccess(result), `${file}: ${Result.isFailure(result) ? result.failure.message : ""}`)
}

describe("Workspace", () => {
  it("refuses malformed path arguments before the disk is asked, naming the argument", () => {
    const workspace = Workspace.make("/w")
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [42, "file: expected a path, got number"],
      [null, "file: expected a path, got null"],
      ["", "file: expected a path, got an empty string"],
      ["a\u0000b.ts", 'file: "a\\u0000b.ts" contains a NUL byte'],
      ["x".repeat(Workspace.maxPathLength + 1), "file: a path of 4097 characters is longer than any file name (4096)"],
      ["file://example.com/etc/passwd", 'file: "file://example.com/etc/passwd" is not a file URI of this machine'],
      ["file:///w/a%00.ts", 'file: "file:///w/a%00.ts" contains a NUL byte']
    ]
    for (const [value, message] of cases) {
      const error = errorOf(Workspace.resolve(workspace, "file", value))
      assert.strictEqual(error._tag, "InvalidPath")
      assert.strictEqual(error.argument, "file")
      assert.isTrue(error.message.startsWith(message), error.message)
    }
    assert.strictEqual(errorOf(Workspace.fromFileUri("changes", "untitled:Untitled-1")).argument, "changes")
  })

  it("takes relative and absolute paths and file: URIs inside, and files not there yet", () => {
    const { root } = tree()
    const workspace = Workspace.make(root)
    for (const file of [
      "src/a.ts",
      NodePath.join(root, "src/a.ts"),
      NodeUrl.pathToFileURL(NodePath.join(root, "src/a.ts")).href,
      "../ws/src/a.ts",
      "src/new.ts",
      "new/deeper/still.ts"
    ]) {
      accepts(workspace, file)
    }
    assert.strictEqual(
      Result.getOrThrow(Workspace.resolve(workspace, "file", "src/new.ts")),
      NodePath.join(root, "src/new.ts")
    )
  })

  it("refuses every way out: .., absolute, URI, symlinked file, symlinked folder, dangling link, loop", () => {
    const { base, root, outside } = tree()
    NodeFs.symlinkSync(NodePath.join(outside, "x.ts"), NodePath.join(root, "file-link.ts"))
    NodeFs.symlinkSync(outside, NodePath.join(root, "dir-link"))
    NodeFs.symlinkSync(NodePath.join(outside, "not-yet.ts"), NodePath.join(root, "dangling.ts"))
    NodeFs.symlinkSync("../outside/later", NodePath.join(root, "relative-dangling"))
    NodeFs.symlinkSync("loop-b", NodePath.join(root, "loop-a"))
    NodeFs.symlinkSync("loop-a", NodePath.join(root, "loop-b"))
    const workspace = Workspace.make(root)
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["../outside/x.ts", NodePath.join(outside, "x.ts")],
      [NodePath.join(outside, "x.ts"), NodePath.join(outside, "x.ts")],
      [NodeUrl.pathToFileURL(NodePath.join(outside, "x.ts")).href, NodePath.join(outside, "x.ts")],
      ["file-link.ts", NodePath.join(outside, "x.ts")],
      ["dir-link/x.ts", NodePath.join(outside, "x.ts")],
      // Files an edit would create: through a symlinked folder, or a dangling link, they land outside.
      ["dir-link/new/new.ts", NodePath.join(outside, "new/new.ts")],
      ["dangling.ts", NodePath.join(outside, "not-yet.ts")],
      ["relative-dangling/y.ts", NodePath.join(outside, "later/y.ts")],
      ["/", "/"],
      [".", root],
      [base, base]
    ]
    for (const [file, resolved] of cases) {
      const error = errorOf(Workspace.resolve(workspace, "file", file))
      assert.strictEqual(error._tag, "OutsideWorkspace", file)
      assert.deepInclude(error, { argument: "file", path: file, resolved, root }, file)
      assert.strictEqual(
        error.message,
        `file: ${JSON.stringify(file)} is not inside the workspace ${root} (it is ${resolved})`
      )
    }
    const loop = errorOf(Workspace.resolve(workspace, "file", "loop-a/x.ts"))
    assert.strictEqual(loop._tag, "OutsideWorkspace")
    assert.include(loop.message, "its symlinks loop")
    assert.isFalse(Workspace.contains(workspace, NodePath.join(root, "file-link.ts")))
    assert.isTrue(Workspace.contains(workspace, NodePath.join(root, "src/a.ts")))
  })

  it("a root that is a symlink is compared by its realpath", () => {
    const { base, root, outside } = tree()
    const workspace = Workspace.make(NodePath.join(base, "link"))
    accepts(workspace, "src/a.ts")
    accepts(workspace, NodePath.join(root, "src/a.ts"))
    accepts(workspace, "src/new.ts")
    assert.strictEqual(errorOf(Workspace.resolve(workspace, "file", "../outside/x.ts"))._tag, "OutsideWorkspace")
    assert.deepInclude(errorOf(Workspace.resolve(workspace, "file", NodePath.join(outside, "x.ts"))), {
      _tag: "OutsideWorkspace",
      root: NodePath.join(base, "link")
    })
  })

  it("extra roots let their folders in, relative ones against the root; true lets everything in", () => {
    const { base, root, outside } = tree()
    const other = NodePath.join(base, "other")
    NodeFs.mkdirSync(other)
    const workspace = Workspace.make(root, ["../outside", NodePath.join(base, "not-created-yet")])
    accepts(workspace, "../outside/x.ts")
    accepts(workspace, NodePath.join(base, "not-created-yet/a.ts"))
    const error = errorOf(Workspace.resolve(workspace, "file", "../other/y.ts"))
    assert.strictEqual(
      error.message,
      `file: "../other/y.ts" is not inside the workspace ${root} or its extra roots ${outside}, ${NodePath.join(base, "not-created-yet")} (it is ${NodePath.join(other, "y.ts")})`
    )
    // A prefix of a root's name is not inside it.
    assert.strictEqual(errorOf(Workspace.resolve(workspace, "file", "../outside-2/x.ts"))._tag, "OutsideWorkspace")
    const anywhere = Workspace.make(root, true)
    accepts(anywhere, "../other/y.ts")
    accepts(anywhere, "/etc/hostname")
    assert.strictEqual(errorOf(Workspace.resolve(anywhere, "file", "a\u0000"))._tag, "InvalidPath")
  })
})
