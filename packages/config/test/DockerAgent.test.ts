// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

describe("docker-agent: files that used to be rejected", () => {
  it.effect("an agent with no toolsets key loads (coordinators, RAG and chat agents)", () =>
    Effect.gen(function* () {
      const config = yield* parse(`
agents:
  root:
    model: openai/gpt-4o
    sub_agents: [helper]
  helper:
    model: openai/gpt-4o
    toolsets:
      - { type: mcp, command: srv }
`)
      assert.deepStrictEqual(config.agents, [
        { name: "root", toolsets: [] },
        { name: "helper", toolsets: ["mcp/cmd/srv"] }
      ])
    })
  )

  it.effect("toolsets: with nothing after it (YAML null) is no toolsets, as in docker-agent", () =>
    Effect.gen(function* () {
      const config = yield* parse("agents:\n  root:\n    model: x\n    toolsets:\n")
      assert.deepStrictEqual(config.agents, [{ name: "root", toolsets: [] }])
    })
  )

  it.effect(
    "two unnamed servers with one command and different arguments are two toolsets, named deterministically",
    () =>
      Effect.gen(function* () {
        const text = `
agents:
  a:
    toolsets:
      - { type: mcp, command: npx, args: ["-y", "server-a"] }
  b:
    toolsets:
      - { type: mcp, command: npx, args: ["-y", "server-b"] }
      - { type: mcp, command: npx, args: ["-y", "server-a"] }
`
        const config = yield* parse(text)
        assert.deepStrictEqual(
          config.toolsets.map((t) => t.name),
          ["npx", "npx-2"]
        )
        const [first, second] = config.toolsets
        assert.strictEqual(first?.identity, "mcp/cmd/npx")
        assert.match(second?.identity ?? "", /^mcp\/cmd\/npx#[0-9a-f]{8}$/)
        // The identical declaration in agent b shares agent a's toolset.
        assert.deepStrictEqual(config.agents[1]?.toolsets, [second?.identity, first?.identity])
        const again = yield* parse(text)
        assert.deepStrictEqual(
          again.toolsets.map((t) => t.identity),
          config.toolsets.map((t) => t.identity)
        )
      })
  )

  it.effect("two explicitly named toolsets with different definitions are still an error", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`
agents:
  a: { toolsets: [{ type: mcp, name: fs, command: one }] }
  b: { toolsets: [{ type: mcp, name: fs, command: two }] }
`)
      assert.strictEqual(issues.length, 2)
      assert.include(issues[0]?.message, "toolset mcp/fs is also declared at agents.b.toolsets[0]")
    })
  )

  it.effect(
    "an unset variable in a toolset Toolvisor skips is a warning; in one that runs, that toolset is unresolved",
    () =>
      Effect.gen(function* () {
        const config = yield* parse(
          `mcps:\n  gh: { ref: "docker:github", env: { TOKEN: "\${GH_TOKEN}" } }\n` +
            agentYaml(`      - { type: mcp, ref: "docker:slack", env: { SLACK: "\${SLACK_TOKEN}" } }
      - { type: shell, env: { X: "\${SHELL_X}" } }
      - { type: mcp, ref: gh }
      - { type: mcp, command: srv }
`)
        )
        assert.strictEqual(config.toolsets.length, 1)
        assert.deepStrictEqual(
          config.warnings?.map((w) => w.path),
          ["agents.root.toolsets[0].env.SLACK", "agents.root.toolsets[1].env.X", "mcps.gh.env.TOKEN"]
        )
        assert.include(config.warnings?.[0]?.message, "SLACK_TOKEN is not set")
        const runs = yield* parse(agentYaml('      - { type: mcp, command: srv, env: { A: "${RUN_A}" } }\n'))
        assert.deepStrictEqual(toolset(runs, "mcp/cmd/srv").unresolved, [
          {
            path: "agents.root.toolsets[0].env.A",
            variable: "RUN_A",
            message: "Environment variable RUN_A is not set (write ${RUN_A:-default} for a default)"
          }
        ])
        assert.deepStrictEqual(
          runs.warnings?.map((w) => w.path),
          ["agents.root.toolsets[0].env.A"]
        )
      })
  )

  it.effect('version "0" agent-level think, todo and memory are built-ins, skipped with the version named', () =>
    Effect.gen(function* () {
      const config = yield* parse(`
version: "0"
agents:
  root:
    name: bio
    think: true
    todo: { enabled: true, shared: true }
    memory: { path: dev.db }
    toolsets:
      - { type: mcp, command: srv }
`)
      assert.deepStrictEqual(
        config.skipped.map((s) => [s.path, s.type]),
        [
          ["agents.root.think", "think"],
          ["agents.root.todo", "todo"],
          ["agents.root.memory", "memory"]
        ]
      )
      assert.include(config.skipped[0]?.reason, `a docker-agent version "0" field`)
      assert.strictEqual(config.toolsets.length, 1)
    })
  )

  it.effect("every interpolation form docker-agent has: ${env.X}, ${env.X || 'default'} in remote; $VAR in env", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml(`      - type: mcp
        name: web
        remote:
          url: "https://\${env.HOST || 'mcp.example.com'}/mcp"
          headers: { Authorization: "Bearer \${env.TOKEN}" }
      - type: mcp
        name: local
        command: srv
        env: { HOME_DIR: "$HOME/data", BOTH: "\${HOME}" }
`),
        { TOKEN: "tok-123456", HOME: "/home/me" }
      )
      const web = toolset(config, "mcp/web").transport
      assert.deepStrictEqual(web._tag === "http" && [web.url, web.headers], [
        "https://mcp.example.com/mcp",
        { Authorization: "Bearer tok-123456" }
      ])
      const local = toolset(config, "mcp/local").transport
      assert.deepStrictEqual(local._tag === "stdio" && local.env, { HOME_DIR: "/home/me/data", BOTH: "/home/me" })
    })
  )

  it.effect("agent fields of any docker-agent version are accepted; an unknown one is one warning", () =>
    Effect.gen(function* () {
      const config = yield* parse(`
agents:
  a: { add_description_parameter: true, tool_choice: required, plan_persona: { instruction: x }, colour: red }
  b: { colour: blue }
`)
      assert.deepStrictEqual(config.warnings, [
        { path: "agents.a.colour", message: "`colour` is not an agent field Toolvisor knows; ignored" },
        { path: "", message: "no toolset Toolvisor runs (an MCP or LSP server): there is nothing to supervise" }
      ])
    })
  )

  it.effect("~ in a command or working_dir is a warning that says to write ${userHome}", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml("      - { type: mcp, name: home, command: ~/bin/server.sh, working_dir: ~/ }\n")
      )
      // No shell runs a server: "~" named a folder called "~" next to the config, and nothing said so.
      assert.deepStrictEqual(
        config.warnings?.map((w) => `${w.path}: ${w.message}`),
        [
          'agents.root.toolsets[0].command: "~" in command is not expanded (no shell runs the server): write ${userHome} instead',
          'agents.root.toolsets[0].working_dir: "~" in working_dir is not expanded (no shell runs the server): write ${userHome} instead'
        ]
      )
    })
  )

  it.effect("type: mpc says what was given and suggests mcp", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(agentYaml("      - { type: mpc, command: srv }\n"))
      assert.deepStrictEqual(issues, [
        { path: "agents.root.toolsets[0].type", message: 'Unknown type "mpc"; did you mean "mcp"?' }
      ])
    })
  )

  it.effect("a number or boolean in args or env is the text written, as docker-agent's Go YAML reads it", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml("      - { type: mcp, command: uvx, args: [--port, 8080, true, --python, 3.10], env: { V: 3.10 } }\n")
      )
      const transport = toolset(config, "mcp/cmd/uvx").transport
      assert.deepStrictEqual(transport._tag === "stdio" && [transport.args, transport.env], [
        ["--port", "8080", "true", "--python", "3.10"],
        { V: "3.10" }
      ])
    })
  )

  it.effect("tools: ['*'] on a toolset means all of its tools", () =>
    Effect.gen(function* () {
      const config = yield* parse(agentYaml('      - { type: mcp, name: fs, command: srv, tools: ["*"] }\n'))
      assert.isUndefined(toolset(config, "mcp/fs").tools)
    })
  )
})
