// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import { toolset } from "./helpers.ts"

/** Parses JSON(C) as if read from `source` in /work/project/<dir>. */
const host = (text: string, source = "/work/project/.mcp.json", env: Record<string, string> = {}, inputs = {}) =>
  ConfigLoader.parse(text, { source, baseDir: source.slice(0, source.lastIndexOf("/")), env, inputs })

const issues = (text: string, source?: string, env?: Record<string, string>) =>
  Effect.flip(host(text, source, env)).pipe(Effect.map((error) => error))

describe("HostConfig: detecting the format", () => {
  it.effect("names the host from the file name; the content decides the format", () =>
    Effect.gen(function* () {
      const servers = '{ "mcpServers": { "a": { "command": "x" } } }'
      const named = (source: string) => host(servers, source).pipe(Effect.map((c) => c.format))
      assert.strictEqual(yield* named("/h/Library/Claude/claude_desktop_config.json"), "Claude Desktop config")
      assert.strictEqual(yield* named("/p/.cursor/mcp.json"), "Cursor mcp.json")
      assert.strictEqual(yield* named("/p/.mcp.json"), "Claude Code .mcp.json")
      assert.strictEqual(yield* named("/h/.codeium/windsurf/mcp_config.json"), "Windsurf mcp_config.json")
      assert.strictEqual(yield* named("/p/.gemini/settings.json"), "Gemini CLI settings.json")
      assert.strictEqual(yield* named("/h/cline_mcp_settings.json"), "Cline MCP settings")
      assert.strictEqual(yield* named("/p/servers.json"), "mcpServers JSON")
      const vscode = yield* host('{ "servers": { "a": { "command": "x" } } }', "/p/whatever.json")
      assert.strictEqual(vscode.format, "VS Code mcp.json")
      const settings = yield* host('{ "editor.fontSize": 14, "mcp": { "servers": { "a": { "command": "x" } } } }')
      assert.strictEqual(settings.format, "VS Code settings.json")
      const zed = yield* host('{ "theme": "One", "context_servers": { "a": { "command": "x" } } }')
      assert.strictEqual(zed.format, "Zed settings.json")
      const plugin = yield* host('{ "ctx": { "command": "npx", "args": ["-y", "ctx"] } }')
      assert.strictEqual(plugin.format, "Claude Code plugin .mcp.json")
    })
  )

  it.effect("a JSON file in no known format gets one error listing the formats Toolvisor reads", () =>
    Effect.gen(function* () {
      const error = yield* issues('{ "name": "my-app", "version": "1.0.0", "scripts": {} }', "/p/package.json")
      assert.strictEqual(error.issues.length, 1)
      const message = error.issues[0]?.message ?? ""
      assert.include(message, "Not a config format Toolvisor reads (found top-level keys name, version, scripts)")
      for (const format of ["docker-agent YAML", "mcpServers JSON", "VS Code mcp.json", "Zed settings.json"]) {
        assert.include(message, format)
      }
      assert.notInclude(message, "Missing required field")
    })
  )

  it.effect("an object whose entries are not all servers is not taken for a plugin's server map", () =>
    Effect.gen(function* () {
      const error = yield* issues('{ "a": { "command": "x" }, "b": { "enabled": true } }')
      assert.include(error.issues[0]?.message, "Not a config format")
    })
  )

  it.effect("every error names the format the file was read as", () =>
    Effect.gen(function* () {
      const error = yield* issues('{ "servers": { "a": { "type": "stdio" } } }', "/p/.vscode/mcp.json")
      assert.include(error.message, "(read as VS Code mcp.json; 1 problem)")
    })
  )
})

describe("HostConfig: JSONC", () => {
  it.effect("comments and trailing commas are read, as VS Code and Zed write them", () =>
    Effect.gen(function* () {
      const config = yield* host(
        `// my servers
{
  "servers": {
    /* the local one */
    "local": { "command": "node", "args": ["server.js",], }, // trailing commas
  },
}`,
        "/work/project/.vscode/mcp.json"
      )
      assert.deepStrictEqual(toolset(config, "mcp/local").transport, {
        _tag: "stdio",
        command: "node",
        args: ["server.js"],
        env: {},
        // A host's `.vscode/` file: its servers run in the project above it, as in the host.
        cwd: "/work/project"
      })
    })
  )

  it.effect("a JSON syntax error names its line and shows it", () =>
    Effect.gen(function* () {
      const error = yield* issues('{\n  "mcpServers": {\n    "a": { "command" "x" }\n  }\n}')
      assert.match(
        error.issues[0]?.message ?? "",
        /^Not valid JSON \(ColonExpected\) at line 3, column \d+:\n.*"command" "x"/
      )
    })
  )
})

describe("HostConfig: each host's fields", () => {
  it.effect("type stdio|http|sse, Cline's streamableHttp, Windsurf's serverUrl, Gemini's httpUrl and url", () =>
    Effect.gen(function* () {
      const config = yield* host(`{ "mcpServers": {
        "a": { "type": "http", "url": "https://a.example/mcp" },
        "b": { "type": "sse", "url": "https://b.example/sse" },
        "c": { "type": "streamableHttp", "url": "https://c.example/mcp" },
        "d": { "serverUrl": "https://d.example/mcp" },
        "e": { "url": "https://e.example/mcp" }
      } }`)
      const tags = config.toolsets.map((t) => t.transport._tag)
      assert.deepStrictEqual(tags, ["http", "sse", "http", "http", "http"])
      const gemini = yield* host(
        '{ "mcpServers": { "s": { "url": "https://s.example/sse" }, "h": { "httpUrl": "https://h.example/mcp" } } }',
        "/p/.gemini/settings.json"
      )
      assert.deepStrictEqual(
        gemini.toolsets.map((t) => t.transport._tag),
        ["sse", "http"]
      )
    })
  )

  it.effect("disabled servers are skipped, not errors; Gemini's mcp.allowed and Zed's enabled: false too", () =>
    Effect.gen(function* () {
      const config = yield* host(
        '{ "mcpServers": { "off": { "command": "x", "disabled": true }, "on": { "command": "y" } } }'
      )
      assert.deepStrictEqual(
        config.toolsets.map((t) => t.name),
        ["on"]
      )
      assert.deepStrictEqual(config.skipped, [{ path: "mcpServers.off", type: "mcp", reason: "disabled: true" }])
      const gemini = yield* host(
        '{ "mcpServers": { "a": { "command": "x" }, "b": { "command": "y" } }, "mcp": { "allowed": ["a"] } }',
        "/p/.gemini/settings.json"
      )
      assert.deepStrictEqual(
        gemini.skipped.map((s) => s.reason),
        ["not listed in mcp.allowed"]
      )
      const zed = yield* host('{ "context_servers": { "z": { "command": "x", "enabled": false } } }')
      assert.deepStrictEqual(
        zed.skipped.map((s) => s.reason),
        ["enabled: false"]
      )
    })
  )

  it.effect("a near miss of a field Toolvisor reads is an error that names it; another host's field a warning", () =>
    Effect.gen(function* () {
      // Ignored with a warning, `arg` ran bare `node` (which waits on stdin) and `envs` dropped the variables.
      const found = yield* issues(
        '{ "mcpServers": { "a": { "command": "node", "arg": ["s.js"], "envs": { "K": "v" } }, "b": { "comand": "x" } } }'
      )
      assert.includeDeepMembers(
        [...found.issues],
        [
          { path: "mcpServers.a.arg", message: "Unknown field `arg`; did you mean `args`?" },
          { path: "mcpServers.a.envs", message: "Unknown field `envs`; did you mean `env`?" },
          { path: "mcpServers.b.comand", message: "Unknown field `comand`; did you mean `command`?" }
        ]
      )
      const vscode = yield* host(
        '{ "servers": { "v": { "command": "x", "dev": { "watch": "src/**" } } } }',
        "/p/.vscode/mcp.json"
      )
      assert.deepStrictEqual(
        vscode.warnings?.map((w) => w.path),
        ["servers.v.dev"]
      )
    })
  )

  it.effect("a timeout becomes call_timeout (Cline: seconds, Gemini: milliseconds); disabled tools a deny list", () =>
    Effect.gen(function* () {
      const cline = yield* host(
        '{ "mcpServers": { "a": { "command": "x", "timeout": 60, "disabledTools": ["rm"], "autoApprove": [] } } }',
        "/h/cline_mcp_settings.json"
      )
      const a = toolset(cline, "mcp/a")
      assert.deepStrictEqual(a.policy.callTimeout && Duration.toMillis(a.policy.callTimeout), 60_000)
      assert.deepStrictEqual(a.deny, ["a_rm"])
      assert.deepStrictEqual(cline.warnings, [
        {
          path: "mcpServers.a.autoApprove",
          message: "`autoApprove` has no meaning in Toolvisor; ignored (a Cline MCP settings field)"
        }
      ])
      const gemini = yield* host(
        '{ "mcpServers": { "g": { "command": "x", "timeout": 30000, "excludeTools": ["drop"], "includeTools": ["keep"] } } }',
        "/p/.gemini/settings.json"
      )
      const g = toolset(gemini, "mcp/g")
      assert.deepStrictEqual(g.policy.callTimeout && Duration.toMillis(g.policy.callTimeout), 30_000)
      assert.deepStrictEqual([g.tools, g.deny], [["g_keep"], ["g_drop"]])
    })
  )

  it.effect("an unknown field is one warning per field name, however many servers carry it", () =>
    Effect.gen(function* () {
      const config = yield* host(
        '{ "mcpServers": { "a": { "command": "x", "trust": true }, "b": { "command": "y", "trust": false } } }'
      )
      assert.strictEqual(config.warnings?.length, 1)
    })
  )

  it.effect('tools: ["*"] means every tool: no filter for the runtime', () =>
    Effect.gen(function* () {
      const config = yield* host('{ "servers": { "a": { "command": "x", "tools": ["*"] } } }', "/p/.vscode/mcp.json")
      assert.isUndefined(toolset(config, "mcp/a").tools)
    })
  )

  it.effect("Zed's command object and an extension-provided server", () =>
    Effect.gen(function* () {
      const config = yield* host(`{ "context_servers": {
        "pg": { "command": { "path": "pg-server", "args": ["--db", "x"], "env": { "A": "1" } }, "settings": {} },
        "gh": { "source": "extension", "settings": { "token": "t" } }
      } }`)
      assert.deepStrictEqual(toolset(config, "mcp/pg").transport, {
        _tag: "stdio",
        command: "pg-server",
        args: ["--db", "x"],
        env: { A: "1" },
        cwd: "/work/project"
      })
      assert.deepStrictEqual(
        config.skipped.map((s) => s.reason),
        ["provided by a Zed extension, which only Zed can run"]
      )
    })
  )

  it.effect("a command written with its arguments is split when no args are given; a key becomes a safe prefix", () =>
    Effect.gen(function* () {
      const config = yield* host(
        '{ "mcpServers": { "github.com/a/weather": { "command": "uv run python server.py" } } }'
      )
      const [weather] = config.toolsets
      assert.deepStrictEqual(weather?.transport, {
        _tag: "stdio",
        command: "uv",
        args: ["run", "python", "server.py"],
        env: {},
        cwd: "/work/project"
      })
      assert.strictEqual(weather?.prefix, "github_com_a_weather")
      const path = yield* host('{ "mcpServers": { "app": { "command": "/Applications/My App/bin/server" } } }')
      assert.strictEqual(
        path.toolsets[0]?.transport._tag === "stdio" && path.toolsets[0].transport.command,
        "/Applications/My App/bin/server"
      )
    })
  )

  it.effect("a misspelt type says what was given and suggests the right one", () =>
    Effect.gen(function* () {
      const error = yield* issues('{ "mcpServers": { "a": { "type": "htp", "url": "https://x.example" } } }')
      assert.deepStrictEqual(error.issues, [
        { path: "mcpServers.a.type", message: 'Unknown type "htp"; did you mean "http"?' }
      ])
    })
  )
})

describe("HostConfig: variables", () => {
  it.effect("${VAR}, ${VAR:-default}, ${env:VAR}, ${workspaceFolder}, ${userHome}, ${CLAUDE_PLUGIN_ROOT}", () =>
    Effect.gen(function* () {
      const config = yield* host(
        `{ "mcpServers": { "a": {
          "command": "\${CLAUDE_PLUGIN_ROOT}/bin/server",
          "args": ["\${workspaceFolder}", "\${userHome}", "\${MODE:-fast}"],
          "env": { "TOKEN": "\${env:TOKEN}", "KEY": "\${KEY}" }
        } } }`,
        "/work/project/plugin/.mcp.json",
        { TOKEN: "t-1234", KEY: "k-5678" }
      )
      const a = toolset(config, "mcp/a")
      assert.deepStrictEqual(a.transport, {
        _tag: "stdio",
        command: "/work/project/plugin/bin/server",
        args: ["/work/project/plugin", NodeOs.homedir(), "fast"],
        env: { TOKEN: "t-1234", KEY: "k-5678" },
        cwd: "/work/project/plugin"
      })
      assert.deepStrictEqual(a.secrets, ["t-1234", "k-5678"])
      const vscode = yield* host(
        '{ "servers": { "a": { "command": "x", "args": ["${workspaceFolder}"] } } }',
        "/w/proj/.vscode/mcp.json"
      )
      assert.deepStrictEqual(
        toolset(vscode, "mcp/a").transport._tag === "stdio" && toolset(vscode, "mcp/a").transport,
        {
          _tag: "stdio",
          command: "x",
          args: ["/w/proj"],
          env: {},
          cwd: "/w/proj"
        }
      )
    })
  )

  it.effect("${input:id} comes from --input or TOOLVISOR_INPUT_<ID>; a missing one is named with its description", () =>
    Effect.gen(function* () {
      const text = `{
        "inputs": [{ "type": "promptString", "id": "api-key", "description": "The API key", "password": true }],
        "servers": { "a": { "type": "http", "url": "https://x.example/mcp", "headers": { "Authorization": "Bearer \${input:api-key}" } } }
      }`
      const source = "/p/.vscode/mcp.json"
      const given = yield* host(text, source, {}, { "api-key": "sk-given-123" })
      const a = toolset(given, "mcp/a")
      assert.deepStrictEqual(a.transport._tag !== "stdio" && a.transport.headers, {
        Authorization: "Bearer sk-given-123"
      })
      assert.sameMembers([...a.secrets], ["sk-given-123", "Bearer sk-given-123"])
      const fromEnv = yield* host(text, source, { TOOLVISOR_INPUT_API_KEY: "sk-env-456" })
      assert.include(JSON.stringify(toolset(fromEnv, "mcp/a").transport), "sk-env-456")
      // Without a value the file is still valid: the toolset that needs it is unresolved, and named.
      const without = yield* host(text, source)
      assert.deepStrictEqual(without.warnings, [
        {
          path: "servers.a.headers.Authorization",
          message:
            'toolset a will not start: Input api-key ("The API key") has no value: pass `--input api-key=VALUE` or set TOOLVISOR_INPUT_API_KEY'
        }
      ])
      assert.deepStrictEqual(
        toolset(without, "mcp/a").unresolved?.map((lack) => lack.variable),
        ["input:api-key"]
      )
    })
  )

  it.effect("an unset ${VAR} in a VS Code file is not given a ${VAR:-default} hint, which VS Code cannot read", () =>
    Effect.gen(function* () {
      for (const text of [
        '{ "servers": { "a": { "command": "x", "args": ["${fileDirname}"] } } }',
        '{ "mcp": { "servers": { "a": { "command": "x", "args": ["${fileDirname}"] } } } }'
      ]) {
        const config = yield* host(text, "/w/proj/.vscode/mcp.json")
        assert.strictEqual(
          config.warnings?.[0]?.message,
          "toolset a will not start: Environment variable fileDirname is not set"
        )
      }
    })
  )

  it.effect("the hint for a secret-looking name is shown as written, never masked", () =>
    Effect.gen(function* () {
      const config = yield* host('{ "mcpServers": { "gh": { "command": "x", "env": { "T": "${GITHUB_TOKEN}" } } } }')
      assert.include(
        config.warnings?.[0]?.message,
        "Environment variable GITHUB_TOKEN is not set (write ${GITHUB_TOKEN:-default} for a default)"
      )
      // The reference left in the transport is the file's text, not a secret to mask.
      assert.deepStrictEqual(toolset(config, "mcp/gh").secrets, [])
    })
  )
})

describe("HostConfig: loading runs nothing", () => {
  const project = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-untrusted-"))

  it.effect("a headersHelper does not run and an envFile is not read; both wait in the transport for a connect", () =>
    Effect.gen(function* () {
      const dir = project()
      const marker = NodePath.join(dir, "helper-ran")
      NodeFs.mkdirSync(NodePath.join(dir, ".vscode"))
      // A FIFO nobody writes to: reading it would block the load, so finishing proves it was not read.
      NodeChildProcess.execFileSync("mkfifo", [NodePath.join(dir, "secrets.env")])
      const helper = `touch ${marker}; echo '{"Authorization": "Bearer x"}'`
      const claude = NodePath.join(dir, ".mcp.json")
      NodeFs.writeFileSync(
        claude,
        JSON.stringify({ mcpServers: { api: { type: "http", url: "https://api.example/mcp", headersHelper: helper } } })
      )
      const vscode = NodePath.join(dir, ".vscode", "mcp.json")
      NodeFs.writeFileSync(vscode, JSON.stringify({ servers: { a: { command: "x", envFile: "secrets.env" } } }))

      const api = toolset(yield* ConfigLoader.load(claude, { env: {} }), "mcp/api")
      const a = toolset(yield* ConfigLoader.load(vscode, { env: {} }), "mcp/a")
      assert.isFalse(NodeFs.existsSync(marker))
      assert.deepStrictEqual(api.transport._tag !== "stdio" && api.transport.headersHelper, {
        command: helper,
        cwd: dir
      })
      assert.deepStrictEqual(api.transport._tag !== "stdio" && api.transport.headers, {})
      // Relative to the config's folder (for `.vscode/mcp.json`, the project), not to the process's.
      assert.strictEqual(a.transport._tag === "stdio" && a.transport.envFile, NodePath.join(dir, "secrets.env"))
      assert.deepStrictEqual(a.transport._tag === "stdio" && a.transport.env, {})
    })
  )

  it.effect("a different helper or env file is a different definition (hot reload restarts the toolset)", () =>
    Effect.gen(function* () {
      const signatureOf = (server: object) =>
        host(JSON.stringify({ servers: { a: server } }), "/work/project/.vscode/mcp.json").pipe(
          Effect.map((config) => toolset(config, "mcp/a").signature)
        )
      const remote = { type: "http", url: "https://a.example/mcp" }
      assert.notStrictEqual(
        yield* signatureOf({ ...remote, headersHelper: "get-token a" }),
        yield* signatureOf({ ...remote, headersHelper: "get-token b" })
      )
      assert.notStrictEqual(
        yield* signatureOf({ command: "x", envFile: "a.env" }),
        yield* signatureOf({ command: "x", envFile: "b.env" })
      )
    })
  )
})

describe("HostConfig: a NUL byte in what a server process is given", () => {
  it.effect("is refused at load in command, args, env, cwd, Zed's command object and a headersHelper", () =>
    Effect.gen(function* () {
      const error = yield* issues(
        JSON.stringify({
          mcpServers: {
            a: { command: "srv\u0000", args: ["--x", "\u0000"], env: { "K\u0000": "v" }, cwd: "d\u0000" },
            zed: { command: { path: "pg\u0000", args: ["db\u0000"], env: { C: "\u0000" } } },
            api: { type: "http", url: "https://api.example/mcp", headersHelper: "get-token\u0000" }
          }
        })
      )
      const argument = "which no process argument can carry"
      const environment = "which no environment variable can carry"
      assert.deepStrictEqual(error.issues, [
        { path: "mcpServers.a.command", message: `contains a NUL byte (character 4), ${argument}` },
        { path: "mcpServers.a.args[1]", message: `contains a NUL byte (character 1), ${argument}` },
        { path: 'mcpServers.a.env["K\\u0000"]', message: `contains a NUL byte (character 2), ${environment}` },
        { path: "mcpServers.a.cwd", message: "contains a NUL byte (character 2), which no directory path can carry" },
        { path: "mcpServers.zed.command.path", message: `contains a NUL byte (character 3), ${argument}` },
        { path: "mcpServers.zed.command.args[0]", message: `contains a NUL byte (character 3), ${argument}` },
        { path: "mcpServers.zed.command.env.C", message: `contains a NUL byte (character 1), ${environment}` },
        { path: "mcpServers.api.headersHelper", message: `contains a NUL byte (character 10), ${argument}` }
      ])
    })
  )
})
