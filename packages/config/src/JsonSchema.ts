/**
 * The JSON Schema of the agent YAML, generated from the same Schema the loader decodes with, so
 * editors (yaml-language-server, VS Code) complete and check exactly what Toolvisor accepts.
 */
import * as Schema from "effect/Schema"
import * as AgentConfig from "./AgentConfig.ts"

/** A standalone draft 2020-12 document: unknown fields are flagged, as the loader rejects them. */
export const make = (): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(AgentConfig.AgentFile, { onExcessProperty: "error" })
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    ...document.schema,
    $defs: document.definitions
  }
}
