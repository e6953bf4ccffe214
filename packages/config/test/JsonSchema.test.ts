import { assert, describe, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as JsonSchema from "../src/JsonSchema.ts"

describe("JsonSchema.make", () => {
  const schema = JsonSchema.make()
  const text = JSON.stringify(schema)

  it("is a draft 2020-12 JSON Schema of the agent config: open at the top and on agents, closed on toolsets", () => {
    assert.strictEqual(schema.$schema, "https://json-schema.org/draft/2020-12/schema")
    assert.strictEqual(schema.$ref, "#/$defs/AgentConfig")
    const defs = JSON.parse(text).$defs
    const root = defs.AgentConfig
    assert.strictEqual(root.type, "object")
    assert.deepStrictEqual(root.required, ["agents"])
    // Sections and agent fields a newer docker-agent adds still load (with a warning), so the schema allows them.
    assert.notStrictEqual(root.additionalProperties, false)
    assert.strictEqual(defs.McpToolset.additionalProperties, false)
  })

  it("has a schema for every host format, each requiring its server map", () => {
    const required = (format: JsonSchema.Format) => {
      const document = JsonSchema.make(format)
      const ref = String(document.$ref).replace("#/$defs/", "")
      const defs = document.$defs as Record<string, { readonly required?: ReadonlyArray<string> }>
      return defs[ref]?.required
    }
    assert.deepStrictEqual(required("mcp-servers"), ["mcpServers"])
    assert.deepStrictEqual(required("vscode"), ["servers"])
    assert.deepStrictEqual(required("vscode-settings"), ["mcp"])
    assert.deepStrictEqual(required("zed"), ["context_servers"])
    assert.include(JSON.stringify(JsonSchema.make("mcp-servers")), '"headersHelper"')
  })

  it("describes the toolset fields", () => {
    for (const field of ["command", "args", "env", "working_dir", "remote", "transport_type", "headers", "ref"]) {
      assert.include(text, `"${field}"`)
    }
    for (const field of ["file_types", "allow_outside_workspace", "tools", "lifecycle", "lazy", "mcps"])
      assert.include(text, `"${field}"`)
  })

  it("lists the lifecycle enums and bounds", () => {
    assert.include(text, '["resilient","strict","best-effort"]')
    assert.include(text, '["never","on_failure","always"]')
    assert.include(text, '"max_restarts":{"type":"integer","minimum":-1')
  })
})

describe("JsonSchema agrees with the loader on the edge cases", () => {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true })
  const agentSchema = ajv.compile(JsonSchema.make("docker-agent"))
  const hostSchema = ajv.compile(JsonSchema.make("mcp-servers"))
  const cases: ReadonlyArray<readonly [string, unknown, "docker-agent" | "mcp-servers"]> = [
    ["an agent with no toolsets", { agents: { root: { model: "x" } } }, "docker-agent"],
    ["toolsets: null", { agents: { root: { toolsets: null } } }, "docker-agent"],
    ["an unknown agent field", { agents: { root: { colour: "red" } } }, "docker-agent"],
    ["agent-level tools", { agents: { root: { tools: ["x"] } } }, "docker-agent"],
    ["a misspelt type", { agents: { root: { toolsets: [{ type: "mpc", command: "x" }] } } }, "docker-agent"],
    ["command and ref", { agents: { root: { toolsets: [{ type: "mcp", command: "x", ref: "y" }] } } }, "docker-agent"],
    ["a server with no source", { mcpServers: { a: { args: ["x"] } } }, "mcp-servers"],
    ["command and url", { mcpServers: { a: { command: "x", url: "https://x.example" } } }, "mcp-servers"],
    ["a Zed extension server", { mcpServers: { a: { source: "extension", settings: {} } } }, "mcp-servers"],
    ["another host's field", { mcpServers: { a: { command: "x", autoApprove: [] } } }, "mcp-servers"],
    [
      "a NUL byte in args",
      { agents: { root: { toolsets: [{ type: "mcp", command: "x", args: ["a\u0000"] }] } } },
      "docker-agent"
    ],
    ["a NUL byte in an env name", { mcpServers: { a: { command: "x", env: { "K\u0000": "v" } } } }, "mcp-servers"]
  ]
  for (const [name, document, format] of cases) {
    it.effect(name, () =>
      Effect.gen(function* () {
        const loaded = yield* Effect.result(
          ConfigLoader.parse(JSON.stringify(document), { source: "<inline>", baseDir: "/p", env: {} })
        )
        const accepts = (format === "docker-agent" ? agentSchema : hostSchema)(document)
        assert.strictEqual(accepts, loaded._tag === "Success", name)
      })
    )
  }
})
