import { assert, describe, it } from "@effect/vitest"
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
    for (const field of ["file_types", "tools", "lifecycle", "lazy", "mcps"]) assert.include(text, `"${field}"`)
  })

  it("lists the lifecycle enums and bounds", () => {
    assert.include(text, '["resilient","strict","best-effort"]')
    assert.include(text, '["never","on_failure","always"]')
    assert.include(text, '"max_restarts":{"type":"integer","minimum":-1')
  })
})
