import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as AgentConfig from "../src/AgentConfig.ts"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as HostConfig from "../src/internal/hostConfig.ts"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

const fixture = (name: string) => NodePath.join(import.meta.dirname, "fixtures", name)

const tempFile = (name: string, text: string): string => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-config-"))
  const path = NodePath.join(dir, name)
  NodeFs.writeFileSync(path, text)
  return path
}

describe("ConfigLoader: the docker-agent example (anchor §6)", () => {
  it.effect("loads; filesystem, shell and the docker: ref are skipped; oauth reaches the transport", () =>
    Effect.gen(function* () {
      const config = yield* ConfigLoader.load(fixture("docker-agent.yaml"), { env: { GITHUB_TOKEN: "ghp_secret123" } })
      assert.deepStrictEqual(config.agents, [
        {
          name: "root",
          toolsets: ["mcp/fs", "mcp/notion", "mcp/ref/github", "lsp/cmd/gopls", "lsp/cmd/typescript-language-server"]
        }
      ])
      assert.deepStrictEqual(
        config.skipped.map((skip) => [skip.path, skip.type]),
        [
          ["agents.root.toolsets[0]", "filesystem"],
          ["agents.root.toolsets[1]", "shell"],
          ["agents.root.toolsets[4]", "mcp"]
        ]
      )
      assert.include(config.skipped[2]?.reason, "docker:duckduckgo")

      const fs = toolset(config, "mcp/fs")
      assert.strictEqual(fs.name, "fs")
      assert.strictEqual(fs.prefix, "fs")
      assert.deepStrictEqual(fs.transport, {
        _tag: "stdio",
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
        env: { NODE_OPTIONS: "--max-old-space-size=512" },
        // No working_dir: the server runs in the config's folder, wherever Toolvisor was started.
        cwd: NodePath.dirname(fixture("docker-agent.yaml"))
      })
      assert.deepStrictEqual(fs.tools, ["fs_read_file", "fs_list_directory"])
      assert.strictEqual(fs.policy.maxRestarts, 10)
      assert.strictEqual(Duration.toMillis(fs.policy.backoff.initial), 500)
      assert.strictEqual(Duration.toMillis(fs.policy.backoff.max), 60_000)
      assert.strictEqual(fs.policy.backoff.jitter, 0.2)

      const notion = toolset(config, "mcp/notion")
      assert.deepStrictEqual(notion.transport, {
        _tag: "http",
        url: "https://mcp.notion.com/mcp",
        headers: {},
        oauth: { clientId: "my-client", callbackPort: 8765, scopes: ["read"] }
      })
      assert.strictEqual(notion.policy.restart, "always")

      const github = toolset(config, "mcp/ref/github")
      assert.strictEqual(github.name, "github")
      assert.isUndefined(github.prefix)
      assert.deepStrictEqual(github.transport, {
        _tag: "http",
        url: "https://api.githubcopilot.com/mcp",
        headers: { Authorization: "Bearer ghp_secret123" }
      })
      assert.sameMembers([...github.secrets], ["ghp_secret123", "Bearer ghp_secret123"])

      const gopls = toolset(config, "lsp/cmd/gopls")
      assert.strictEqual(gopls.type, "lsp")
      assert.deepStrictEqual(gopls.fileTypes, [".go"])
      assert.strictEqual(
        gopls.transport._tag === "stdio" ? gopls.transport.cwd : undefined,
        NodePath.join(import.meta.dirname, "fixtures", "backend")
      )
      assert.strictEqual(gopls.policy.restart, "never")
      assert.isTrue(gopls.policy.required)
      assert.strictEqual(gopls.name, "gopls")
      assert.strictEqual(toolset(config, "lsp/cmd/typescript-language-server").name, "typescript-language-server")
    })
  )
})

describe("ConfigLoader: mcpServers JSON", () => {
  it.effect("a .mcp.json becomes the agent `default`, each server named and prefixed by its key", () =>
    Effect.gen(function* () {
      const config = yield* ConfigLoader.load(fixture("mcp.json"), { env: { SEARCH_TOKEN: "tok-123456" } })
      assert.deepStrictEqual(config.agents, [{ name: "default", toolsets: ["mcp/files", "mcp/search", "mcp/events"] }])
      assert.deepStrictEqual(config.skipped, [{ path: "mcpServers.old", type: "mcp", reason: "disabled: true" }])
      const files = toolset(config, "mcp/files")
      assert.strictEqual(files.prefix, "files")
      assert.deepStrictEqual(files.transport, {
        _tag: "stdio",
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
        env: { LOG_LEVEL: "debug" },
        cwd: NodePath.join(import.meta.dirname, "fixtures", "work")
      })
      const search = toolset(config, "mcp/search")
      assert.deepStrictEqual(search.transport, {
        _tag: "http",
        url: "https://search.example.com/mcp",
        headers: { Authorization: "Bearer tok-123456" }
      })
      assert.strictEqual(search.policy.restart, "never")
      assert.strictEqual(Duration.toMillis(search.policy.startupTimeout ?? Duration.zero), 10_000)
      assert.strictEqual(toolset(config, "mcp/events").transport._tag, "sse")
    })
  )

  it.effect("a server must have exactly one of command and url", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        ConfigLoader.parse(JSON.stringify({ mcpServers: { a: {}, b: { command: "x", url: "https://x", cwd: "." } } }), {
          source: ".mcp.json",
          baseDir: "/"
        })
      )
      assert.deepStrictEqual(
        error.issues.map((issue) => issue.path),
        ["mcpServers.a", "mcpServers.b", "mcpServers.b.cwd"]
      )
    })
  )
})

describe("ConfigLoader: relative paths mean the config's folder", () => {
  const stdio = (config: AgentConfig.Config, identity: string) => {
    const transport = toolset(config, identity).transport
    return transport._tag === "stdio" ? { command: transport.command, args: transport.args, cwd: transport.cwd } : {}
  }

  it.effect(
    "a server runs in the config's folder or its working_dir there; a command that is a path is found there",
    () =>
      Effect.gen(function* () {
        const config = yield* parse(
          agentYaml(`      - { type: mcp, name: a, command: ./bin/a, args: [./data, x] }
      - { type: mcp, name: b, command: npx, args: [-y, pkg] }
      - { type: mcp, name: c, command: bin/c, working_dir: sub }
      - { type: lsp, name: d, command: pyright-langserver, working_dir: /abs }
      - { type: mcp, name: e, command: /opt/e, working_dir: ../shared }
`)
        )
        // args are the server's to read, against the folder it runs in: passed as written.
        assert.deepStrictEqual(stdio(config, "mcp/a"), {
          command: "/project/bin/a",
          args: ["./data", "x"],
          cwd: "/project"
        })
        // A bare name is looked up on PATH, as before.
        assert.deepStrictEqual(stdio(config, "mcp/b"), { command: "npx", args: ["-y", "pkg"], cwd: "/project" })
        assert.deepStrictEqual(stdio(config, "mcp/c"), { command: "/project/sub/bin/c", args: [], cwd: "/project/sub" })
        assert.deepStrictEqual(stdio(config, "lsp/d"), { command: "pyright-langserver", args: [], cwd: "/abs" })
        assert.deepStrictEqual(stdio(config, "mcp/e"), { command: "/opt/e", args: [], cwd: "/shared" })
      })
  )

  it.effect(
    "a host's file in .vscode/ or .cursor/ runs its servers in the project above; other files in their own folder",
    () =>
      Effect.gen(function* () {
        const servers = JSON.stringify({
          mcpServers: { a: { command: "./server", cwd: "srv" }, b: { command: "node", args: ["main.js"] } }
        })
        const at = (source: string) =>
          ConfigLoader.parse(servers, { source, baseDir: NodePath.dirname(source), env: {} })
        const cursor = yield* at("/work/p/.cursor/mcp.json")
        assert.deepStrictEqual(stdio(cursor, "mcp/a"), { command: "/work/p/srv/server", args: [], cwd: "/work/p/srv" })
        assert.deepStrictEqual(stdio(cursor, "mcp/b"), { command: "node", args: ["main.js"], cwd: "/work/p" })
        const desktop = yield* at("/home/u/.config/Claude/claude_desktop_config.json")
        assert.deepStrictEqual(stdio(desktop, "mcp/b"), {
          command: "node",
          args: ["main.js"],
          cwd: "/home/u/.config/Claude"
        })
      })
  )
})

describe("ConfigLoader: validation", () => {
  it.effect("a bad URL and an unknown ref are reported together with the Schema's problems", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        parse(`
agents:
  root:
    toolsets:
      - type: mcp
        comand: npx
      - type: mcp
        remote: { url: "ftp://files.example.com/mcp" }
      - type: mcp
        ref: nowhere
`)
      )
      assert.deepStrictEqual(
        error.issues.map((issue) => issue.path),
        ["agents.root.toolsets[0].comand", "agents.root.toolsets[1].remote.url", "agents.root.toolsets[2].ref"]
      )
    })
  )

  it.effect("a config with five mistakes reports all five, each with its path", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        parse(`
agents:
  root:
    toolsets:
      - type: mcp
        comand: npx
      - type: lsp
        file_types: [".go"]
      - type: mcp
        command: server
        lifecycle:
          profile: fragile
          backoff: { jitter: 2 }
      - type: mcp
        command: other
        remote: { url: "https://x.example.com/mcp" }
`)
      )
      assert.deepStrictEqual(
        error.issues.map((issue) => `${issue.path}: ${issue.message}`),
        [
          "agents.root.toolsets[0].comand: Unknown field `comand`; did you mean `command`?",
          "agents.root.toolsets[1].command: Missing required field `command`",
          'agents.root.toolsets[2].lifecycle.profile: Expected "resilient" | "strict" | "best-effort"',
          "agents.root.toolsets[2].lifecycle.backoff.jitter: Expected a jitter between 0 and 1",
          "agents.root.toolsets[3]: either command, remote or ref must be set, but only one of those"
        ]
      )
      assert.include(error.message, "Invalid config <inline> (read as docker-agent YAML; 5 problems):")
      assert.include(
        error.message,
        "\nagents.root.toolsets[2].lifecycle.backoff.jitter: Expected a jitter between 0 and 1"
      )
    })
  )

  it.effect("unknown fields get a did-you-mean when close, at every level", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`
agents:
  root:
    toolsets:
      - type: mcp
        command: x
        lifecycle: { max_restart: 3, colour: red }
`)
      assert.deepStrictEqual(issues, [
        {
          path: "agents.root.toolsets[0].lifecycle.max_restart",
          message: "Unknown field `max_restart`; did you mean `max_restarts`?"
        },
        { path: "agents.root.toolsets[0].lifecycle.colour", message: "Unknown field `colour`" }
      ])
    })
  )

  it.effect("fields of another toolset type say where they belong", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        agentYaml(`      - { type: mcp, command: x, file_types: [".go"] }
      - { type: lsp, command: gopls, remote: { url: "https://x" } }
      - { type: shell, lifecycle: { profile: strict } }
      - { type: mcp, remote: { url: "https://x" }, working_dir: ./sub }
      - { type: wasm }
`)
      )
      assert.deepStrictEqual(
        issues.map((issue) => `${issue.path}: ${issue.message}`),
        [
          "agents.root.toolsets[0].file_types: file_types can only be used with type 'lsp'",
          "agents.root.toolsets[1].remote: remote can only be used with type 'mcp'",
          "agents.root.toolsets[2].lifecycle: lifecycle can only be used with type 'mcp' or 'lsp'",
          "agents.root.toolsets[3].working_dir: working_dir cannot be used with a remote MCP server",
          `agents.root.toolsets[4].type: Unknown type "wasm"; expected one of: mcp, lsp, todo, tasks, memory, think, shell, script, filesystem, fetch, api, a2a, user_prompt, openapi, model_picker, background_agents, rag`
        ]
      )
    })
  )

  it.effect("a ref must name an mcps entry; docker: refs are skipped", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        `mcps:\n  github: { remote: { url: "https://x.example.com" } }\n` +
          agentYaml(`      - { type: mcp, ref: gitlab }\n`)
      )
      assert.deepStrictEqual(issues, [
        {
          path: "agents.root.toolsets[0].ref",
          message: 'No MCP definition named "gitlab" under mcps (defined: github)'
        }
      ])
      const config = yield* parse(agentYaml(`      - { type: mcp, ref: "docker:context7" }\n`))
      assert.deepStrictEqual(config.toolsets, [])
      assert.strictEqual(config.skipped[0]?.path, "agents.root.toolsets[0]")
    })
  )

  it.effect("a .mcp.json url entry takes an oauth block; scopes may be one space-separated string", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        JSON.stringify({
          mcpServers: {
            tracker: {
              type: "http",
              url: "https://tracker.example/mcp",
              oauth: { clientId: "cli", callbackPort: 8765, scopes: "read write", authServerMetadataUrl: "https://a" }
            }
          }
        })
      )
      assert.deepStrictEqual(toolset(config, "mcp/tracker").transport, {
        _tag: "http",
        url: "https://tracker.example/mcp",
        headers: {},
        oauth: { clientId: "cli", callbackPort: 8765, scopes: ["read", "write"] }
      })
    })
  )

  it.effect("an oauth callbackPort must be a port number", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        agentYaml(`      - { type: mcp, remote: { url: "https://x.example/mcp", oauth: { callbackPort: 70000 } } }\n`)
      )
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        ["agents.root.toolsets[0].remote.oauth.callbackPort"]
      )
    })
  )

  it.effect("a remote URL must be absolute http(s), without a user name or password", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(agentYaml(`      - { type: mcp, remote: { url: "ftp://x" } }\n`))
      assert.deepStrictEqual(issues, [
        { path: "agents.root.toolsets[0].remote.url", message: "Expected an absolute http:// or https:// URL" }
      ])
      // Accepted, it failed every connect ("a URL that includes credentials") and was retried for ever.
      for (const file of [
        agentYaml(`      - { type: mcp, remote: { url: "https://me:secret@x.example/mcp" } }\n`),
        JSON.stringify({ mcpServers: { x: { url: "https://me@x.example/mcp" } } })
      ]) {
        const [issue] = yield* issuesOf(file)
        assert.include(issue?.message, "A URL cannot carry a user name or password")
        assert.notInclude(issue?.message, "secret")
      }
    })
  )
})

describe("ConfigLoader: agents and sharing", () => {
  const twoAgents = `
agents:
  root:
    toolsets:
      - { type: mcp, name: fs, command: fs-server }
      - { type: lsp, command: gopls }
  helper:
    toolsets:
      - { type: mcp, name: fs, command: fs-server }
      - { type: mcp, command: /usr/bin/gopls }
`

  it.effect("two agents declaring the same toolset share one; display names are de-duplicated", () =>
    Effect.gen(function* () {
      const config = yield* parse(twoAgents)
      assert.deepStrictEqual(
        config.toolsets.map((entry) => [entry.identity, entry.name]),
        [
          ["mcp/fs", "fs"],
          ["lsp/cmd/gopls", "gopls"],
          ["mcp/cmd//usr/bin/gopls", "gopls-2"]
        ]
      )
      assert.deepStrictEqual(config.agents[1], { name: "helper", toolsets: ["mcp/fs", "mcp/cmd//usr/bin/gopls"] })
    })
  )

  it.effect("the same identity with a different definition is an error at both paths", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`
agents:
  root:
    toolsets: [{ type: mcp, name: fs, command: fs-server }]
  helper:
    toolsets: [{ type: mcp, name: fs, command: fs-server, args: ["--readonly"] }]
`)
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        ["agents.root.toolsets[0]", "agents.helper.toolsets[0]"]
      )
      assert.include(issues[0]?.message, "mcp/fs is also declared at agents.helper.toolsets[0]")
    })
  )

  it.effect("`agent` selects one agent and only its toolsets; an unknown agent lists the agents", () =>
    Effect.gen(function* () {
      const config = yield* parse(twoAgents, {}, "helper")
      assert.deepStrictEqual(
        config.agents.map((agent) => agent.name),
        ["helper"]
      )
      assert.deepStrictEqual(
        config.toolsets.map((entry) => entry.identity),
        ["mcp/fs", "mcp/cmd//usr/bin/gopls"]
      )
      const error = yield* Effect.flip(parse(twoAgents, {}, "reviewer"))
      assert.deepStrictEqual(error.issues, [
        { path: "agents", message: 'No agent named "reviewer" (agents: root, helper)' }
      ])
    })
  )
})

describe("ConfigLoader: files that cannot be read", () => {
  it.effect("a missing file is one clear issue", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ConfigLoader.load("/nonexistent/agent.yaml"))
      assert.deepStrictEqual(error.issues, [{ path: "", message: "File not found: /nonexistent/agent.yaml" }])
      assert.strictEqual(
        error.message,
        "Invalid config /nonexistent/agent.yaml (1 problem):\nFile not found: /nonexistent/agent.yaml"
      )
      assert.notInclude(error.message, "    at ")
    })
  )

  it.effect("a file that is not YAML is one clear issue with its position", () =>
    Effect.gen(function* () {
      const path = tempFile("agent.yaml", "agents:\n  root: [unclosed\n")
      const error = yield* Effect.flip(ConfigLoader.load(path))
      assert.strictEqual(error.issues.length, 1)
      const message = error.issues[0]?.message ?? ""
      assert.match(message, /^Not valid YAML \(.+\) at line 2, column 18:\n {6}root: \[unclosed\n {21}\^$/)
      assert.strictEqual(message.match(/line \d+/g)?.length, 1, "the location is named once")
    })
  )

  it.effect("prose parses as YAML but is not a config: one issue saying so", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ConfigLoader.load(tempFile("notes.md", "Just some notes about agents.\n")))
      assert.deepStrictEqual(error.issues, [
        { path: "", message: `Expected a mapping (${HostConfig.formatList.join("; ")}), got a string` }
      ])
    })
  )

  it.effect("broken JSON is one issue", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ConfigLoader.load(tempFile(".mcp.json", '{ "mcpServers": { ')))
      assert.strictEqual(error.issues.length, 1)
      assert.match(error.issues[0]?.message ?? "", /^Not valid JSON \(\w+\) at line 1, column \d+:/)
    })
  )
})
