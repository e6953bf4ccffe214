import { assert, describe, it } from "@effect/vitest"
import * as JsonSchema from "../src/JsonSchema.ts"

describe("JsonSchema.make", () => {
  const schema = JsonSchema.make()
  const text = JSON.stringify(schema)

  it("is a draft 2020-12 JSON Schema of the agent config, closed to unknown fields", () => {
    assert.strictEqual(schema.$schema, "https://json-schema.org/draft/2020-12/schema")
    assert.strictEqual(schema.$ref, "#/$defs/AgentConfig")
    const root = JSON.parse(text).$defs.AgentConfig
    assert.strictEqual(root.type, "object")
    assert.deepStrictEqual(root.required, ["agents"])
    assert.strictEqual(root.additionalProperties, false)
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
