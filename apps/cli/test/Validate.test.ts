// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { everything, everythingEntry, freePort, runCli, writeConfig, yaml } from "./helpers.ts"

const everythingServer = (extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: [everything, "stdio"],
  ...extra
})

describe("toolvisor validate", () => {
  it("prints the format, each toolset with how it starts and its policy, secrets masked, skips and warnings", async () => {
    const config = writeConfig(
      JSON.stringify({
        mcpServers: {
          api: {
            type: "http",
            url: "https://api.example.com/mcp?key=${API_KEY}",
            headers: { Authorization: "Bearer ${API_KEY}" },
            timeout: 45
          },
          local: { command: "node", args: ["server.js", "--token", "${API_KEY}"], autoApprove: [] },
          off: { command: "x", disabled: true }
        }
      }),
      "cline_mcp_settings.json"
    )
    const result = await runCli(["validate", config], { env: { API_KEY: "sk-live-0123456789" } })
    assert.strictEqual(result.code, 0, result.stderr)
    const out = result.stdout
    assert.include(out, "read as Cline MCP settings")
    assert.include(out, "api (mcp) streamable HTTP: https://api.example.com/mcp?key=*** headers: Authorization")
    assert.include(out, "local (mcp) stdio: node server.js --token ***")
    assert.include(out, "call 45s")
    assert.include(out, "skipped mcpServers.off (mcp): disabled: true")
    assert.include(out, "warning mcpServers.local.autoApprove:")
    assert.include(out, "valid: 1 agent(s), 2 toolset(s), 1 skipped, 1 warning(s)")
    assert.notInclude(out + result.stderr, "sk-live-0123456789")
  })

  it("--input gives a VS Code input its value; without it a warning names the toolset, the input and its description", async () => {
    const config = writeConfig(
      JSON.stringify({
        inputs: [{ type: "promptString", id: "token", description: "Your API token", password: true }],
        servers: { a: { command: "node", env: { T: "${input:token}" } } }
      }),
      "mcp.json"
    )
    // A value missing from this environment is not a problem of the file: a warning, exit 0.
    const missing = await runCli(["validate", config])
    assert.strictEqual(missing.code, 0, missing.stderr)
    assert.include(missing.stdout, "read as VS Code mcp.json")
    assert.include(
      missing.stdout,
      'toolset a will not start: Input token ("Your API token") has no value: pass `--input token=VALUE`'
    )
    const given = await runCli(["validate", config, "--input", "token=abc-secret-1"])
    assert.strictEqual(given.code, 0, given.stderr)
    const bad = await runCli(["validate", config, "--input", "no-equals"])
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "--input: expected id=value")
  })

  it("--check starts each toolset, lists its tools, flags an allow-list entry that matches nothing, and fails on a missing binary", async () => {
    const config = writeConfig(
      JSON.stringify({
        mcpServers: {
          everything: everythingServer({ tools: ["echo", "get-sum", "no-such-tool"] }),
          missing: { command: "/nonexistent/mcp-server" }
        }
      }),
      ".mcp.json"
    )
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 1, result.stderr)
    // What it offers through its allow-list, as every status output counts it.
    assert.include(result.stdout, "✓ everything: Ready, 2 tool(s): everything_echo, everything_get-sum\n")
    assert.include(
      result.stdout,
      'warning everything: tools allow-list entry "everything_no-such-tool" matches no tool it offers'
    )
    assert.match(result.stdout, /✗ missing: ServerUnavailable: .*\/nonexistent\/mcp-server/)
    assert.include(result.stderr, "toolset(s) that did not start: missing")
  })

  it("warns of a command this machine does not have, without starting anything; one it has passes", async () => {
    const dir = NodePath.dirname(writeConfig("{}", "scratch.json"))
    const script = NodePath.join(dir, "server.sh")
    NodeFs.writeFileSync(script, "#!/bin/sh\n", { mode: 0o755 })
    const config = writeConfig(
      JSON.stringify({
        mcpServers: {
          typo: { command: "nxp", args: ["-y", "some-server"] },
          relative: { command: "./not-there.sh", cwd: dir },
          script: { command: "./server.sh", cwd: dir },
          own: { command: "my-server", env: { PATH: dir } },
          found: { command: "server.sh", env: { PATH: `/nonexistent:${dir}` } }
        }
      }),
      ".mcp.json"
    )
    const result = await runCli(["validate", config])
    assert.strictEqual(result.code, 0, result.stdout + result.stderr)
    assert.include(
      result.stdout,
      'warning mcpServers.typo.command: typo: "nxp" is not found on PATH, so the toolset cannot start here'
    )
    assert.include(
      result.stdout,
      `warning mcpServers.relative.command: relative: "${dir}/not-there.sh" is not an executable file\n`
    )
    assert.include(result.stdout, 'warning mcpServers.own.command: own: "my-server" is not found on PATH')
    assert.notInclude(result.stdout, "warning mcpServers.script")
    assert.notInclude(result.stdout, "warning mcpServers.found")
    assert.include(result.stdout, "valid: 1 agent(s), 5 toolset(s), 3 warning(s)")
  })

  it("a command that is a secret is masked in its warning, and a nameless entry is not named after it", async () => {
    const secret = "sk-live-abcdef123456"
    const env = { ...process.env, API_TOKEN: secret }
    const mcp = writeConfig(JSON.stringify({ mcpServers: { b: { command: "${API_TOKEN}" } } }), ".mcp.json")
    const nameless = writeConfig(
      ["version: 2", "agents:", "  root:", "    toolsets:", "      - type: mcp", "        command: ${API_TOKEN}"].join(
        "\n"
      )
    )
    for (const config of [mcp, nameless]) {
      for (const json of [[], ["--json"]]) {
        const result = await runCli(["validate", config, ...json], { env })
        assert.strictEqual(result.code, 0, result.stdout + result.stderr)
        assert.include(result.stdout, "is not found on PATH")
        assert.notInclude(result.stdout + result.stderr, secret)
      }
    }
    assert.include((await runCli(["validate", nameless], { env })).stdout, "  mcp (mcp) stdio: ***")
  })

  it("--check flags a defer entry that matches no tool, with the name it probably meant", async () => {
    const config = writeConfig(
      yaml([
        [...everythingEntry("everything"), "        defer: [get-sum, everything_echo, get-tiny-imag, nothing-like-it]"]
      ])
    )
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(
      result.stdout,
      'warning everything: defer entries of agent root "get-tiny-imag" (did you mean "get-tiny-image"?), "nothing-like-it" match no tool it offers'
    )
  })

  it("prints the tool groups; --check flags a group pattern that matches no tool, with what it probably meant", async () => {
    const config = writeConfig(
      JSON.stringify({
        groups: { maths: ["everything_get-sum", "evrything_*"], typo: ["everything_get-tiny-imag"] },
        agents: { root: { toolsets: [{ type: "mcp", name: "everything", ...everythingServer() }] } }
      }),
      "agent.yaml"
    )
    const plain = await runCli(["validate", config])
    assert.strictEqual(plain.code, 0, plain.stderr)
    assert.include(plain.stdout, "group maths: everything_get-sum, evrything_*")
    assert.notInclude(plain.stdout, "warning", "groups is a field Toolvisor knows")
    const json = JSON.parse((await runCli(["validate", config, "--json"])).stdout)
    assert.deepStrictEqual(json.groups.typo, ["everything_get-tiny-imag"])
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, 'warning group maths: "evrything_*" matches no tool (did you mean "everything_*"?)')
    assert.include(
      result.stdout,
      'warning group typo: "everything_get-tiny-imag" matches no tool (did you mean "everything_get-tiny-image"?)'
    )
    assert.notInclude(result.stdout, '"everything_get-sum" matches')
  })

  it("runs no headersHelper and reads no envFile, but says it would (text and --json); --check runs and reads them", async () => {
    const config = writeConfig(
      JSON.stringify({
        mcpServers: {
          api: { type: "http", url: `http://127.0.0.1:${await freePort()}/mcp`, headersHelper: "touch helper-ran" },
          local: everythingServer({ envFile: "secrets.env" })
        }
      }),
      ".mcp.json"
    )
    const dir = NodePath.dirname(config)
    const marker = NodePath.join(dir, "helper-ran")
    // A FIFO nobody writes to: reading it would block, so a finished `validate` did not read it.
    NodeChildProcess.execFileSync("mkfifo", [NodePath.join(dir, "secrets.env")])

    const result = await runCli(["validate", config])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.isFalse(NodeFs.existsSync(marker), "validate ran the headersHelper")
    assert.include(result.stdout, `    headersHelper would run: touch helper-ran (in ${dir})`)
    assert.include(result.stdout, `    envFile would be read: ${NodePath.join(dir, "secrets.env")}`)

    const json = await runCli(["validate", config, "--json"])
    assert.strictEqual(json.code, 0, json.stderr)
    assert.isFalse(NodeFs.existsSync(marker), "validate --json ran the headersHelper")
    const onConnect = Object.fromEntries(
      JSON.parse(json.stdout).toolsets.map((t: { name: string; onConnect: unknown }) => [t.name, t.onConnect])
    )
    assert.deepStrictEqual(onConnect, {
      api: { headersHelper: { command: "touch helper-ran", cwd: dir } },
      local: { envFile: NodePath.join(dir, "secrets.env") }
    })

    const checked = await runCli(["validate", config, "--check"])
    assert.isTrue(NodeFs.existsSync(marker), "--check connects, and the helper is part of connecting")
    assert.include(
      checked.stdout,
      `✗ local: ServerUnavailable: local: cannot read the env file ${NodePath.join(dir, "secrets.env")}: not a regular file`
    )
  })

  it("masks the secrets written in a headersHelper command, as it masks a server's arguments (text and --json)", async () => {
    const helper = "./nohelper.sh --client-secret s3cr3tValue99 --token ghp_Abcdefghijklmnop1234"
    const config = writeConfig(
      JSON.stringify({ mcpServers: { h: { type: "http", url: "http://127.0.0.1:1/mcp", headersHelper: helper } } }),
      ".mcp.json"
    )
    const result = await runCli(["validate", config])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, "headersHelper would run: ./nohelper.sh --client-secret *** --token ***")
    const json = await runCli(["validate", config, "--json"])
    assert.strictEqual(
      JSON.parse(json.stdout).toolsets[0].onConnect.headersHelper.command,
      "./nohelper.sh --client-secret *** --token ***"
    )
    const checked = await runCli(["validate", config, "--check"])
    assert.include(checked.stdout, "headersHelper `./nohelper.sh --client-secret *** --token ***`")
    for (const output of [result, json, checked]) {
      for (const secret of ["s3cr3tValue99", "ghp_Abcdefghijklmnop1234"]) {
        assert.notInclude(output.stdout + output.stderr, secret)
      }
    }
  })

  it("an alias bomb and a 200 KB line of nesting are refused (exit 2), naming the file, in a few short lines", async () => {
    const rows = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for (const [name, previous] of ["ba", "cb", "dc", "ed", "fe", "gf"]) {
      rows.push(`${name}: &${name} [${Array.from({ length: 9 }, () => `*${previous}`).join(", ")}]`)
    }
    const bomb = writeConfig(`${rows.join("\n")}\nagents: *g\n`)
    const deep = writeConfig(`agents: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`)
    for (const [config, refused] of [
      [bomb, "Refused: its YAML aliases expand past 100 nodes, as an alias bomb does"],
      [deep, "Refused: nested deeper than 64 levels at line 1, column 72"]
    ] as const) {
      const result = await runCli(["validate", config])
      assert.strictEqual(result.code, 2, result.stderr)
      assert.include(result.stdout, `Invalid config ${config}`)
      assert.include(result.stdout, refused)
      assert.isBelow(result.stdout.length + result.stderr.length, 1_000)
    }
  })

  it("--check reports prompts and resources an earlier toolset shadows, as the registry logs them", async () => {
    const config = writeConfig(
      JSON.stringify({ mcpServers: { one: everythingServer(), two: everythingServer({ env: { SECOND: "1" } }) } }),
      "mcp.json"
    )
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(
      result.stdout,
      'warning resource "demo://resource/static/document/architecture.md" of two is shadowed by one (the first in config order wins)'
    )
    assert.include(
      result.stdout,
      'warning resource "demo://resource/dynamic/text/{resourceId}" of two is shadowed by one'
    )
  })

  it("--check passes when every toolset starts", async () => {
    const config = writeConfig(JSON.stringify({ everything: everythingServer() }), ".mcp.json")
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, "read as Claude Code plugin .mcp.json")
    assert.include(result.stdout, "✓ everything: Ready")
  })
})

describe("toolvisor schema", () => {
  it("--format prints the JSON Schema of a host's format", async () => {
    const result = await runCli(["schema", "--format", "mcp-servers"])
    assert.strictEqual(result.code, 0, result.stderr)
    const schema = JSON.parse(result.stdout)
    assert.strictEqual(schema.$schema, "https://json-schema.org/draft/2020-12/schema")
    assert.include(result.stdout, '"mcpServers"')
    const unknown = await runCli(["schema", "--format", "nope"])
    assert.strictEqual(unknown.code, 2)
  })
})
