#!/usr/bin/env node
/**
 * `npm run pack`: the tarballs of the CLI and every library in one folder (default `dist-pack/`),
 * ready for `npm i -g ./dist-pack/toolvisor-0.1.0.tgz` or `npm i ./dist-pack/toolvisor-runtime-0.1.0.tgz`
 * until the packages are on the registry. npm writes every entry with the same fixed time and
 * order, so the same sources give byte-identical tarballs; the script prints each one's sha256.
 * It packs what is built: `npm run pack` builds first, the pack test has built already.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

const root = NodePath.resolve(import.meta.dirname, "..")
const destination = NodePath.resolve(process.argv[2] ?? NodePath.join(root, "dist-pack"))

NodeFs.rmSync(destination, { recursive: true, force: true })
NodeFs.mkdirSync(destination, { recursive: true })
// --ignore-scripts: the CLI's prepack would build its bundle again; it is built already.
const packed = NodeChildProcess.spawnSync(
  "npm",
  ["pack", "--workspaces", "--ignore-scripts", "--silent", "--pack-destination", destination],
  { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }
)
if (packed.status !== 0) process.exit(packed.status ?? 1)
for (const file of NodeFs.readdirSync(destination).sort()) {
  const sha = NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(NodePath.join(destination, file)))
  console.log(`${sha.digest("hex")}  ${NodePath.relative(process.cwd(), NodePath.join(destination, file))}`)
}
