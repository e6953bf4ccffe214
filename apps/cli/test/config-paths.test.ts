/**
 * Paths in a config mean what they say wherever Toolvisor is started from: a host runs
 * `toolvisor serve /abs/agent.yaml` from a folder of its own, and the servers found must be the
 * ones beside the config — not nothing, and not a decoy of the same name in the host's folder.
 * A server that cannot be found is reported with the path, or the PATH, where it was looked for.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { cliArgs, fixtureServer, runCli, until } from "./helpers.ts"

const tempDir = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-paths-"))

const write = (path: string, text: string, mode = 0o644) => {
  NodeFs.mkdirSync(NodePath.dirname(path), { recursive: true })
  NodeFs.writeFileSync(path, text, { mode })
}

/** A script that starts the real fixture server, under `dir`. */
const serverScript = (path: string) => write(path, `import ${JSON.stringify(fixtureServer)}\n`)

/** An executable that starts the fixture server through `script`, as `bin/server` would. */
const launcher = (path: string, script: string) =>
  write(path, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)}\n`, 0o755)

/** An executable that is not the server: finding it means the wrong folder was searched. */
const decoy = (path: string) => write(path, "#!/bin/sh\necho 'decoy: the wrong folder' >&2\nexit 7\n", 0o755)

/**
 * A project whose config names its servers by relative paths only, and a folder elsewhere (the
 * host's) holding decoys under the same relative names.
 */
const project = () => {
  const root = tempDir()
  const config = NodePath.join(root, "project", "agent.yaml")
  const folder = NodePath.dirname(config)
  serverScript(NodePath.join(folder, "server.mjs"))
  launcher(NodePath.join(folder, "bin", "server"), NodePath.join(folder, "server.mjs"))
  launcher(NodePath.join(folder, "backend", "run.sh"), NodePath.join(folder, "server.mjs"))
  const elsewhere = NodePath.join(root, "host")
  write(NodePath.join(elsewhere, "server.mjs"), "process.exit(7)\n")
  decoy(NodePath.join(elsewhere, "bin", "server"))
  decoy(NodePath.join(elsewhere, "backend", "run.sh"))
  write(
    config,
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - { type: mcp, name: script, command: node, args: [server.mjs] }",
      "      - { type: mcp, name: relative, command: ./bin/server }",
      "      - { type: mcp, name: nested, command: ./run.sh, working_dir: backend }",
      ""
    ].join("\n")
  )
  return { config, folder, elsewhere }
}

const envOf = (extra: Readonly<Record<string, string>> = {}) =>
  Object.fromEntries(
    Object.entries({ ...process.env, ...extra }).flatMap(([key, value]) => (value === undefined ? [] : [[key, value]]))
  )

describe("relative paths resolve against the config's folder", () => {
  it("serve /abs/agent.yaml started from another folder runs the servers beside the config, not the decoys there", async () => {
    const { config, elsewhere } = project()
    const client = new Client({ name: "host", version: "1" })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", config]),
      cwd: elsewhere,
      env: envOf(),
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    await client.connect(transport)
    try {
      const wanted = ["script_echo", "relative_echo", "nested_echo"]
      let names: ReadonlyArray<string> = []
      await until(async () => {
        names = (await client.listTools()).tools.map((tool) => tool.name)
        return wanted.every((name) => names.includes(name))
      }, 60_000).catch(() => assert.fail(`tools: ${names.join(", ")}\nstderr:\n${stderr}`))
      for (const name of wanted) {
        const result = await client.callTool({ name, arguments: { message: `via ${name}` } })
        assert.include(JSON.stringify(result.content), `via ${name}`)
      }
      assert.notInclude(stderr, "decoy")
    } finally {
      await client.close()
    }
  })

  it("validate shows each server's absolute command and the folder it runs in", async () => {
    const { config, folder, elsewhere } = project()
    const result = await runCli(["validate", config], { cwd: elsewhere })
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, `script (mcp) stdio: node server.mjs (in ${folder})`)
    assert.include(result.stdout, `relative (mcp) stdio: ${NodePath.join(folder, "bin", "server")} (in ${folder})`)
    const backend = NodePath.join(folder, "backend")
    assert.include(result.stdout, `nested (mcp) stdio: ${NodePath.join(backend, "run.sh")} (in ${backend})`)
  })
})

describe("a server that cannot be found says where it was looked for", () => {
  it("a missing file names its absolute path; a bare name names PATH; a missing or non-folder working_dir names that folder", async () => {
    const root = tempDir()
    const config = NodePath.join(root, "project", "agent.yaml")
    const folder = NodePath.dirname(config)
    const never = "        lifecycle: { restart: never }"
    write(
      config,
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: mcp",
        "        name: file",
        "        command: ./bin/missing-server",
        never,
        "      - type: mcp",
        "        name: bare",
        "        command: toolvisor-no-such-program",
        never,
        "      - type: mcp",
        "        name: dir",
        "        command: node",
        "        working_dir: not-there",
        never,
        "      - type: mcp",
        "        name: file-as-dir",
        "        command: node",
        "        working_dir: agent.yaml",
        never,
        ""
      ].join("\n")
    )
    const result = await runCli(["status", config, "--json"], { cwd: root, env: { PATH: "/usr/bin:/bin" } })
    const errors = new Map<string, string>(
      JSON.parse(result.stdout).map((s: { toolset: string; error: { message: string } | null }) => [
        s.toolset,
        s.error?.message ?? ""
      ])
    )
    assert.include(errors.get("file"), `there is no ${NodePath.join(folder, "bin", "missing-server")}`)
    assert.include(errors.get("bare"), '"toolvisor-no-such-program": not found in any folder on PATH (/usr/bin:/bin)')
    assert.include(errors.get("dir"), `its working directory ${NodePath.join(folder, "not-there")} does not exist`)
    // Was "unclassified failure: spawn ENOTDIR".
    assert.include(errors.get("file-as-dir"), `its working directory ${config} is not a directory`)
    for (const message of errors.values()) assert.notMatch(message, /ENOENT|ENOTDIR/)
  })
})
