import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as JsonSchema from "../src/JsonSchema.ts"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

describe("docker-agent toolset fields: defer, instruction, env_file; agent defer_above", () => {
  it.effect("defer: true, a list, false; an empty list defers nothing", () =>
    Effect.gen(function* () {
      const config = yield* parse(
        agentYaml(`
      - { type: mcp, name: a, command: srv-a, defer: true }
      - { type: mcp, name: b, command: srv-b, defer: [read_file, b_write_file] }
      - { type: mcp, name: c, command: srv-c, defer: false }
      - { type: mcp, name: d, command: srv-d, defer: [] }
      - { type: lsp, command: gopls, defer: true }
`)
      )
      assert.deepStrictEqual(config.agents[0]?.offers, {
        "mcp/a": { defer: true },
        "mcp/b": { defer: ["read_file", "b_write_file"] },
        "mcp/c": { defer: false },
        "lsp/cmd/gopls": { defer: true }
      })
      assert.deepStrictEqual(config.warnings ?? [], [], "defer is a field Toolvisor honours now")
    })
  )

  it.effect("defer_above on an agent; no offers and no threshold leave the agent spec as it was", () =>
    Effect.gen(function* () {
      const config = yield* parse(`
agents:
  big:
    defer_above: 40
    toolsets: [{ type: mcp, command: srv }]
  small:
    toolsets: [{ type: mcp, command: srv }]
`)
      assert.deepStrictEqual(config.agents, [
        { name: "big", toolsets: ["mcp/cmd/srv"], deferAbove: 40 },
        { name: "small", toolsets: ["mcp/cmd/srv"] }
      ])
      assert.deepStrictEqual(config.warnings ?? [], [])
      const issues = yield* issuesOf("agents:\n  a:\n    defer_above: -1\n    toolsets: []\n")
      assert.deepStrictEqual(
        issues.map((i) => i.path),
        ["agents.a.defer_above"]
      )
    })
  )

  it.effect("a defer that is neither a boolean nor a list of names is an error at its path", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(agentYaml("      - { type: mcp, command: srv, defer: sometimes }\n"))
      assert.deepStrictEqual(
        issues.map((i) => i.path),
        ["agents.root.toolsets[0].defer"]
      )
    })
  )

  it.effect(
    "two agents share one toolset (one server, one signature) and defer it differently; instruction is per agent",
    () =>
      Effect.gen(function* () {
        const config = yield* parse(`
agents:
  lean:
    toolsets:
      - { type: mcp, name: gh, command: gh-mcp, defer: true, instruction: "Use gh for GitHub work." }
  full:
    toolsets:
      - { type: mcp, name: gh, command: gh-mcp }
`)
        assert.strictEqual(config.toolsets.length, 1, "deferral changes what is offered, not the server")
        assert.deepStrictEqual(config.agents[0]?.offers, {
          "mcp/gh": { defer: true, instruction: "Use gh for GitHub work." }
        })
        assert.isUndefined(config.agents[1]?.offers)
        const plain = yield* parse(agentYaml("      - { type: mcp, name: gh, command: gh-mcp }\n"))
        assert.strictEqual(toolset(config, "mcp/gh").signature, toolset(plain, "mcp/gh").signature)
      })
  )

  it.effect("defer and instruction of an mcps definition apply to the entries that ref it; an entry's own win", () =>
    Effect.gen(function* () {
      const config = yield* parse(`
mcps:
  fs: { command: fs-mcp, defer: [write_file], instruction: "Files live under /data." }
agents:
  a:
    toolsets: [{ type: mcp, ref: fs }]
  b:
    toolsets: [{ type: mcp, ref: fs, defer: true }]
`)
      assert.deepStrictEqual(config.agents[0]?.offers, {
        "mcp/ref/fs": { defer: ["write_file"], instruction: "Files live under /data." }
      })
      assert.deepStrictEqual(config.agents[1]?.offers, {
        "mcp/ref/fs": { defer: true, instruction: "Files live under /data." }
      })
    })
  )

  it.effect("env_file is VS Code's envFile: the same server gets the same transport from either file", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-env-file-"))
      NodeFs.writeFileSync(NodePath.join(dir, ".env"), "API_KEY=sk-from-file-2\nMODE=file\n")
      const yaml = NodePath.join(dir, "agent.yaml")
      const listed = NodePath.join(dir, "listed.yaml")
      const json = NodePath.join(dir, "mcp.json")
      const entry = (envFile: string) =>
        `      - { type: mcp, name: a, command: x, env: { MODE: own }, env_file: ${envFile} }\n`
      NodeFs.writeFileSync(yaml, agentYaml(entry(".env")))
      NodeFs.writeFileSync(listed, agentYaml(entry("[.env]")))
      NodeFs.writeFileSync(
        json,
        JSON.stringify({ servers: { a: { command: "x", envFile: ".env", env: { MODE: "own" } } } })
      )
      const transportOf = (path: string) =>
        Effect.map(ConfigLoader.load(path, { env: {} }), (config) => toolset(config, "mcp/a").transport)
      const fromVsCode = yield* transportOf(json)
      assert.deepStrictEqual(yield* transportOf(yaml), fromVsCode)
      assert.deepStrictEqual(yield* transportOf(listed), fromVsCode)
      NodeFs.writeFileSync(yaml, agentYaml(entry("[.env, other.env]")))
      const error = yield* Effect.flip(ConfigLoader.load(yaml, { env: {} }))
      assert.deepStrictEqual(
        error.issues.map((i) => i.path),
        ["agents.root.toolsets[0].env_file"]
      )
      assert.include(error.issues[0]?.message, "one env_file per toolset")
      // A language server is started without one: a field it would ignore is refused instead.
      const lsp = yield* issuesOf(agentYaml("      - { type: lsp, command: gopls, env_file: .env }\n"))
      assert.deepStrictEqual(
        lsp.map((i) => [i.path, i.message]),
        [["agents.root.toolsets[0].env_file", "env_file can only be used with type 'mcp'"]]
      )
      NodeFs.rmSync(dir, { recursive: true, force: true })
    })
  )

  it("the JSON Schema describes defer, instruction, env_file and defer_above", () => {
    const text = JSON.stringify(JsonSchema.make())
    for (const field of ["defer", "instruction", "env_file", "defer_above"]) assert.include(text, `"${field}"`)
    assert.notInclude(
      JSON.stringify(JSON.parse(text).$defs.McpToolset.properties.defer),
      "ignored by Toolvisor",
      "defer is no longer an ignored field"
    )
  })
})
