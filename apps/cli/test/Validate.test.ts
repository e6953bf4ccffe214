// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import { assert, describe, it } from "@effect/vitest"
import { everything, runCli, writeConfig } from "./helpers.ts"

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

  it("--input gives a VS Code input its value; without it the error names the input and its description", async () => {
    const config = writeConfig(
      JSON.stringify({
        inputs: [{ type: "promptString", id: "token", description: "Your API token", password: true }],
        servers: { a: { command: "node", env: { T: "${input:token}" } } }
      }),
      "mcp.json"
    )
    const missing = await runCli(["validate", config])
    assert.strictEqual(missing.code, 2)
    assert.include(missing.stderr, "read as VS Code mcp.json")
    assert.include(missing.stderr, 'Input token ("Your API token") has no value: pass `--input token=VALUE`')
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
    assert.match(result.stdout, /✓ everything: Ready, 13 tool\(s\): everything_echo, /)
    assert.include(
      result.stdout,
      'warning everything: tools allow-list entry "everything_no-such-tool" matches no tool it offers'
    )
    assert.match(result.stdout, /✗ missing: ServerUnavailable: .*\/nonexistent\/mcp-server/)
    assert.include(result.stderr, "toolset(s) that did not start: missing")
  })

  it("--check flags a defer entry that matches no tool, with the name it probably meant", async () => {
    const config = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: mcp",
        "        name: everything",
        `        command: ${JSON.stringify(process.execPath)}`,
        `        args: [${JSON.stringify(everything)}, stdio]`,
        "        defer: [get-sum, everything_echo, get-tiny-imag, nothing-like-it]",
        ""
      ].join("\n"),
      "agent.yaml"
    )
    const result = await runCli(["validate", config, "--check"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(
      result.stdout,
      'warning everything: defer entries of agent root "get-tiny-imag" (did you mean "get-tiny-image"?), "nothing-like-it" match no tool it offers'
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
