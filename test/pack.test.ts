/**
 * The packages as a user installs them before they are on the registry: `scripts/pack.mjs` (what
 * `npm run pack` runs) packs every workspace, reproducibly; the tarballs go into an empty folder
 * (with `effect` and `@effect/platform-node`, the libraries' peers), where `npx toolvisor status`
 * and the README's Effect program run, and the CLI's tarball is installed globally and started the
 * way the README's host snippets start it — no workspace links, no source condition, only what the
 * tarballs hold.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as Everything from "./support/Everything.ts"

const root = NodePath.resolve(import.meta.dirname, "..")
/** npm and the bins it installs run on the Node that runs the tests (22, like the repo's scripts). */
const env = { ...process.env, PATH: `${NodePath.dirname(process.execPath)}:${process.env.PATH}` }

const sh = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  NodeChildProcess.spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 180_000 })

const libraries = ["core", "config", "mcp", "lsp", "runtime", "cluster", "ai"]

/** What a host does with the snippet: start the bin with `serve CONFIG` over stdio, call a tool. */
const viaHost = async (bin: string, config: string, cwd: string): Promise<string> => {
  const client = new Client({ name: "host", version: "1.0.0" })
  await client.connect(new StdioClientTransport({ command: bin, args: ["serve", config], cwd, env, stderr: "ignore" }))
  try {
    const result = await client.callTool({ name: "everything_echo", arguments: { message: "from a host" } })
    return JSON.stringify(result.content)
  } finally {
    await client.close()
  }
}

describe("the published packages", () => {
  it("install from their tarballs into an empty folder; toolvisor, a host snippet and an Effect program run on them", async () => {
    const work = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-pack-"))
    const tarballs = NodePath.join(work, "tarballs")
    const app = NodePath.join(work, "app")
    NodeFs.mkdirSync(tarballs)
    NodeFs.mkdirSync(app)
    try {
      // The libraries publish dist/: build it (incremental, so quick when the type-check already did).
      const built = sh(
        process.execPath,
        [NodePath.join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.build.json"],
        root
      )
      assert.strictEqual(built.status, 0, built.stdout)
      const packed = sh(process.execPath, [NodePath.join(root, "scripts/pack.mjs"), tarballs], root)
      assert.strictEqual(packed.status, 0, packed.stderr)
      // The same sources give the same bytes.
      const again = sh(process.execPath, [NodePath.join(root, "scripts/pack.mjs"), `${tarballs}-again`], root)
      assert.strictEqual(again.stdout.replaceAll("-again", ""), packed.stdout)
      const files = NodeFs.readdirSync(tarballs).sort()
      assert.deepStrictEqual(files, ["toolvisor-0.1.0.tgz", ...libraries.map((l) => `toolvisor-${l}-0.1.0.tgz`).sort()])
      for (const file of files) {
        const listing = sh("tar", ["-tzf", NodePath.join(tarballs, file)], work).stdout
        assert.include(listing, "package/README.md", file)
        assert.notInclude(listing, "tsbuildinfo", file)
      }
      for (const library of libraries) {
        const manifest = JSON.parse(
          NodeFs.readFileSync(NodePath.join(root, "packages", library, "package.json"), "utf8")
        )
        assert.property(manifest.peerDependencies, "effect", library)
        assert.notProperty(manifest.dependencies, "effect", library)
      }

      NodeFs.writeFileSync(
        NodePath.join(app, "package.json"),
        JSON.stringify({ name: "app", private: true, type: "module" })
      )
      const installed = sh(
        "npm",
        [
          "install",
          "--no-audit",
          "--no-fund",
          "--prefer-offline",
          ...files.map((f) => NodePath.join(tarballs, f)),
          "effect@4.1.0",
          "@effect/platform-node@4.1.0"
        ],
        app
      )
      assert.strictEqual(installed.status, 0, installed.stderr)

      Everything.writeConfig(app)
      const status = sh("npx", ["--no-install", "toolvisor", "status", "agent.yaml"], app)
      assert.strictEqual(status.status, 0, status.stderr)
      assert.match(status.stdout, /everything\s+mcp-stdio\s+Ready/)

      // Installed, there is no bundled example to fall back to: the CLI says what to pass.
      const empty = NodeFs.mkdtempSync(NodePath.join(work, "empty-"))
      const bare = sh(NodePath.join(app, "node_modules/.bin/toolvisor"), ["status"], empty)
      assert.strictEqual(bare.status, 2)
      assert.include(bare.stderr, "no agent.yaml in")

      // `npm i -g ./dist-pack/toolvisor-0.1.0.tgz` (into a prefix of the test's own), then a host
      // snippet: `"command": "toolvisor", "args": ["serve", "/absolute/path/to/agent.yaml"]`, started
      // from another folder as hosts do.
      const global = NodePath.join(work, "global")
      const installedGlobally = sh(
        "npm",
        [
          "install",
          "-g",
          "--prefix",
          global,
          "--no-audit",
          "--no-fund",
          NodePath.join(tarballs, "toolvisor-0.1.0.tgz")
        ],
        work
      )
      assert.strictEqual(installedGlobally.status, 0, installedGlobally.stderr)
      const answer = await viaHost(NodePath.join(global, "bin/toolvisor"), NodePath.join(app, "agent.yaml"), empty)
      assert.include(answer, "Echo: from a host")

      NodeFs.copyFileSync(NodePath.join(root, "examples/effect-api.ts"), NodePath.join(app, "effect-api.ts"))
      const program = sh(process.execPath, ["effect-api.ts", "agent.yaml"], app)
      assert.strictEqual(program.status, 0, program.stderr)
      assert.include(program.stdout, "Echo: hi")
    } finally {
      NodeFs.rmSync(work, { recursive: true, force: true })
    }
  })
})
