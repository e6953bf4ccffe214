/**
 * The LSP fixture projects (TypeScript, Python, C++), copied to a temporary directory per test so
 * tests that edit files leave the originals alone: the LSP tests and the registry's routing tests
 * both start real language servers on them.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"

/** Where the projects live; the lsp package type-checks them with the repository's sources. */
export const fixtures = NodePath.resolve(import.meta.dirname, "../../packages/lsp/test/fixtures")

/**
 * A file with a type error (line 3: number assigned to string). It is written into the copy
 * only, because the fixtures are type-checked with the repository's own sources.
 */
export const brokenSource = 'import { add } from "./math.ts"\n\nexport const wrong: string = add(1, 2)\n'

/** A fresh copy of a fixture project, so tests that edit files do not touch the originals. */
export const project = (name: "ts-project" | "py-project" | "cpp-project"): string => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), `toolvisor-lsp-${name}-`))
  NodeFs.cpSync(NodePath.join(fixtures, name), dir, { recursive: true })
  if (name === "ts-project") NodeFs.writeFileSync(NodePath.join(dir, "src/broken.ts"), brokenSource)
  return dir
}
