/**
 * The store of pushed diagnostics against a server that publishes without end: it keeps them only
 * for files inside the workspace, and only as many as its limits say, however many it is sent.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import { assert, describe, it } from "@effect/vitest"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Diagnostics from "../src/internal/diagnostics.ts"
import * as Paths from "../src/internal/paths.ts"
import * as Workspace from "../src/internal/workspace.ts"

NodeV8.setFlagsFromString("--expose-gc")
const collect: unknown = NodeVm.runInNewContext("gc")

const heapAfterCollection = () => {
  if (typeof collect === "function") collect()
  return process.memoryUsage().heapUsed
}

/** A workspace root and a folder beside it, both real folders. */
const folders = () => {
  const base = NodeFs.realpathSync(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-diagnostics-")))
  const root = NodePath.join(base, "ws")
  const other = NodePath.join(base, "other")
  NodeFs.mkdirSync(root)
  NodeFs.mkdirSync(other)
  return { root, other }
}

const diagnostics = (count: number, message = "wrong"): Array<Protocol.Diagnostic> =>
  Array.from({ length: count }, (_, i) => ({
    range: { start: { line: i, character: 0 }, end: { line: i, character: 1 } },
    message
  }))

const publish = (store: Diagnostics.Diagnostics, path: string, items: Array<Protocol.Diagnostic>) =>
  store.publishUnsafe({ uri: Paths.toUri(path), diagnostics: items })

describe("Diagnostics", () => {
  it("keeps diagnostics only for files inside the workspace or its extra roots, anywhere when allowed", () => {
    const { root, other } = folders()
    const inside = NodePath.join(root, "missing/a.py")
    const beside = NodePath.join(other, "b.py")
    const elsewhere = "/nonexistent-toolvisor/c.py"
    const confined = Diagnostics.make(Workspace.make(root))
    for (const path of [inside, beside, elsewhere]) publish(confined, path, diagnostics(1))
    confined.publishUnsafe({ uri: "untitled:Untitled-1", diagnostics: diagnostics(1) })
    assert.deepStrictEqual(confined.summary(), [{ path: inside, count: 1 }])
    assert.isUndefined(confined.get(elsewhere))
    assert.strictEqual(confined.seqUnsafe(), 1)

    const extra = Diagnostics.make(Workspace.make(root, [other]))
    for (const path of [inside, beside, elsewhere]) publish(extra, path, diagnostics(1))
    assert.deepStrictEqual(
      extra.summary().map((d) => d.path),
      [inside, beside]
    )

    const anywhere = Diagnostics.make(Workspace.make(root, true))
    for (const path of [inside, beside, elsewhere]) publish(anywhere, path, diagnostics(1))
    assert.deepStrictEqual(
      anywhere.summary().map((d) => d.path),
      [inside, beside, elsewhere]
    )
  })

  it("keeps the documents published last, at most limits.documents, and the first limits.perDocument diagnostics of each", () => {
    const { root } = folders()
    const store = Diagnostics.make(Workspace.make(root))
    const file = (i: number) => NodePath.join(root, `f${i}.py`)
    const { documents, perDocument } = Diagnostics.limits
    for (let i = 0; i < documents + 10; i++) publish(store, file(i), diagnostics(1))
    // Published again, the first file is the newest: the next publish drops the second instead.
    publish(store, file(0), diagnostics(perDocument + 7))
    publish(store, file(documents + 10), [])
    const summary = store.summary()
    assert.strictEqual(store.get(file(11)), undefined)
    assert.isDefined(store.get(file(12)))
    assert.strictEqual(summary.length, documents - 1)
    assert.deepStrictEqual(summary.at(-1), { path: file(0), count: perDocument + 7 })
    assert.lengthOf(store.get(file(0))?.items ?? [], perDocument)
    assert.strictEqual(store.get(file(0))?.count, perDocument + 7)
    assert.deepStrictEqual(store.get(file(documents + 10))?.items, [])
  })

  it("keeps at most limits.bytes of diagnostics, dropping the oldest documents", () => {
    const { root } = folders()
    const store = Diagnostics.make(Workspace.make(root))
    // 100 documents of about 4.9 MiB each: far fewer documents fit than limits.documents.
    const heavy = diagnostics(Diagnostics.limits.perDocument, "x".repeat(10_000))
    for (let i = 0; i < 100; i++) publish(store, NodePath.join(root, `f${i}.py`), heavy)
    const kept = store.summary()
    const weight = kept.reduce((sum, d) => sum + JSON.stringify(store.get(d.path)?.items).length, 0)
    assert.isAtMost(weight, Diagnostics.limits.bytes)
    assert.isAbove(weight, Diagnostics.limits.bytes / 2)
    assert.strictEqual(kept.at(-1)?.path, NodePath.join(root, "f99.py"))
  })

  it("300 000 files published for leave the store as small as its limits, even with the workspace open to all", () => {
    const { root } = folders()
    const store = Diagnostics.make(Workspace.make(root, true))
    const before = heapAfterCollection()
    for (let i = 0; i < 300_000; i++) publish(store, NodePath.join(root, `missing/${i}.py`), diagnostics(1))
    const grown = heapAfterCollection() - before
    assert.isBelow(grown, 16 * 1024 * 1024)
    assert.strictEqual(store.summary().length, Diagnostics.limits.documents)
  })
})
