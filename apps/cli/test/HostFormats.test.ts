// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
/**
 * A config of each host format runs: `status` reaches Ready and `call` gets an answer, through the
 * real CLI, against server-everything over stdio, streamable HTTP and SSE. Each file is written
 * the way its host writes it (its file name, its field names, its variable syntax).
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { awaitListening, freePort } from "../../../test/support/Net.ts"
import { everything, runCli } from "./helpers.ts"

/** server-everything in a network mode, in its own process group so the test can end it whole. */
const serve = async (mode: "streamableHttp" | "sse") => {
  const port = await freePort()
  const child = NodeChildProcess.spawn(process.execPath, [everything, mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: "ignore",
    detached: true
  })
  await awaitListening(port)
  return { port, child }
}

const servers: Array<NodeChildProcess.ChildProcess> = []
let http = ""
let sse = ""

beforeAll(async () => {
  const [a, b] = await Promise.all([serve("streamableHttp"), serve("sse")])
  servers.push(a.child, b.child)
  http = `http://127.0.0.1:${a.port}/mcp`
  sse = `http://127.0.0.1:${b.port}/sse`
}, 60_000)

afterAll(() => {
  for (const child of servers) if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
})

/** A project folder with the file at its host's path. */
const project = (path: string, text: string) => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-host-"))
  const file = NodePath.join(dir, path)
  NodeFs.mkdirSync(NodePath.dirname(file), { recursive: true })
  NodeFs.writeFileSync(file, text)
  return file
}

const stdio = () => ({ command: process.execPath, args: [everything, "stdio"] })

interface Case {
  readonly format: string
  readonly path: string
  readonly text: () => string
  readonly toolsets: ReadonlyArray<string>
  readonly env?: Record<string, string>
}

const cases: ReadonlyArray<Case> = [
  {
    format: "docker-agent YAML",
    path: "agent.yaml",
    text: () =>
      [
        "version: '2'",
        "agents:",
        "  root:",
        "    model: openai/gpt-4o",
        "    todo: true",
        "    toolsets:",
        `      - { type: mcp, name: local, command: "${process.execPath}", args: ["${everything}", stdio] }`,
        "      - type: mcp",
        "        name: remote",
        "        remote:",
        `          url: "\${env.EVERYTHING_URL || '${http}'}"`,
        "          transport_type: streamable",
        "          headers: { Authorization: 'Bearer ${env.TOKEN}' }",
        "      - { type: shell }"
      ].join("\n"),
    toolsets: ["local", "remote"],
    env: { TOKEN: "tok-docker-agent" }
  },
  {
    format: "Claude Desktop config",
    path: "claude_desktop_config.json",
    text: () => JSON.stringify({ mcpServers: { desk: { ...stdio(), env: { DEBUG: "0" } } }, preferences: {} }),
    toolsets: ["desk"]
  },
  {
    format: "Claude Code .mcp.json",
    path: ".mcp.json",
    text: () =>
      JSON.stringify({
        mcpServers: {
          web: { type: "http", url: http, headers: { "X-Key": "${KEY}" } },
          old: { type: "sse", url: sse }
        }
      }),
    toolsets: ["web", "old"],
    env: { KEY: "k-claude-code" }
  },
  {
    format: "Claude Code plugin .mcp.json",
    path: "plugin/.mcp.json",
    text: () =>
      JSON.stringify({
        plug: { command: "${NODE_BIN}", args: ["${EVERYTHING}", "stdio"], cwd: "${CLAUDE_PLUGIN_ROOT}" }
      }),
    toolsets: ["plug"]
  },
  {
    format: "Cursor mcp.json",
    path: ".cursor/mcp.json",
    text: () =>
      `// Cursor\n${JSON.stringify({ mcpServers: { cur: { ...stdio(), env: { WS: "${workspaceFolder}", T: "${env:TOKEN}" } } } })}`,
    toolsets: ["cur"],
    env: { TOKEN: "tok-cursor" }
  },
  {
    format: "VS Code mcp.json",
    path: ".vscode/mcp.json",
    text: () => `{
      // JSONC, with inputs
      "inputs": [{ "type": "promptString", "id": "api-key", "description": "API key", "password": true }],
      "servers": {
        "code": { "type": "stdio", "command": "${process.execPath}", "args": ["${everything}", "stdio"], "env": { "K": "\${input:api-key}" }, },
        "stream": { "type": "http", "url": "${http}", "tools": ["*"] },
      },
    }`,
    toolsets: ["code", "stream"],
    env: { TOOLVISOR_INPUT_API_KEY: "sk-vscode" }
  },
  {
    format: "VS Code settings.json",
    path: ".vscode/settings.json",
    text: () => JSON.stringify({ "editor.tabSize": 2, mcp: { servers: { settings: stdio() } } }),
    toolsets: ["settings"]
  },
  {
    format: "Windsurf mcp_config.json",
    path: ".codeium/windsurf/mcp_config.json",
    text: () => JSON.stringify({ mcpServers: { wind: { serverUrl: http } } }),
    toolsets: ["wind"]
  },
  {
    format: "Gemini CLI settings.json",
    path: ".gemini/settings.json",
    text: () =>
      JSON.stringify({
        theme: "Default",
        mcpServers: { gem: { httpUrl: http, timeout: 30000, trust: true }, ssegem: { url: sse } }
      }),
    toolsets: ["gem", "ssegem"]
  },
  {
    format: "Cline MCP settings",
    path: "cline_mcp_settings.json",
    text: () =>
      JSON.stringify({
        mcpServers: {
          cline: { type: "streamableHttp", url: http, disabled: false, autoApprove: [], timeout: 60 },
          off: { command: "/nonexistent", disabled: true }
        }
      }),
    toolsets: ["cline"]
  },
  {
    format: "Zed settings.json",
    path: ".zed/settings.json",
    text: () =>
      JSON.stringify({
        context_servers: {
          zed: { command: { path: process.execPath, args: [everything, "stdio"], env: {} }, settings: {} },
          ext: { source: "extension", settings: {} }
        }
      }),
    toolsets: ["zed"]
  }
]

// Each case is three processes of its own; two at a time keep a 2-core machine busy, not swamped.
describe.concurrent("a config of each host format runs against real servers", () => {
  for (const c of cases) {
    it(`${c.format}: status reaches Ready and call answers`, { timeout: 90_000 }, async () => {
      const file = project(c.path, c.text())
      const env = { NODE_BIN: process.execPath, EVERYTHING: everything, ...c.env }
      const status = await runCli(["status", file, "--json", "--timeout", "60s"], { env })
      assert.strictEqual(status.code, 0, status.stderr)
      const board: ReadonlyArray<{ readonly toolset: string; readonly state: string }> = JSON.parse(status.stdout)
      assert.deepStrictEqual(
        board.map((row) => [row.toolset, row.state]),
        c.toolsets.map((name) => [name, "Ready"])
      )

      const [first] = c.toolsets
      const call = await runCli(["call", file, `${first}_echo`, '{"message":"hello from the host file"}'], { env })
      assert.strictEqual(call.code, 0, call.stderr)
      assert.include(call.stdout, "hello from the host file")
    })
  }
})
