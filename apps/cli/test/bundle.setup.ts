/**
 * The tests run the bundled CLI, as a user would; this rebuilds the bundle first when a source
 * file of the CLI or of a workspace package is newer than it (`npm ci` builds it once).
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { build } from "rolldown"
import { options } from "../rolldown.config.ts"

const root = NodePath.resolve(import.meta.dirname, "../../..")
const bundle = NodePath.join(root, "apps/cli/bundle/main.js")

const newest = (dir: string): number =>
  NodeFs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .reduce(
      (latest, entry) => Math.max(latest, NodeFs.statSync(NodePath.join(entry.parentPath, entry.name)).mtimeMs),
      0
    )

const sources = () =>
  Math.max(
    newest(NodePath.join(root, "apps/cli/src")),
    ...NodeFs.readdirSync(NodePath.join(root, "packages")).map((p) => newest(NodePath.join(root, "packages", p, "src")))
  )

export default async function setup() {
  const built = NodeFs.existsSync(bundle) ? NodeFs.statSync(bundle).mtimeMs : 0
  // Chunks are named by content hash, so stale ones can stay: a CLI another test runs keeps its files.
  if (built < sources()) await build({ ...options, output: { ...options.output, cleanDir: false }, logLevel: "warn" })
}
