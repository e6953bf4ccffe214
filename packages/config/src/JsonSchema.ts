/**
 * JSON Schemas of every format Toolvisor reads, generated from the same Schemas the loader decodes
 * with, so editors (yaml-language-server, VS Code) complete and check exactly what Toolvisor
 * accepts. Sections a host keeps for itself are left open, as the loader ignores them.
 */
import * as Schema from "effect/Schema"
import * as AgentConfig from "./AgentConfig.ts"
import * as HostConfig from "./internal/hostConfig.ts"

/** The schema names `toolvisor schema --format` takes. */
export const formats = ["docker-agent", "mcp-servers", "vscode", "vscode-settings", "zed", "plugin"] as const
/** One of `formats`: the file format a generated JSON Schema describes. */
export type Format = (typeof formats)[number]

const schemaOf = (format: Format): Schema.Top => {
  switch (format) {
    case "docker-agent":
      return AgentConfig.AgentFile
    case "mcp-servers":
      return HostConfig.McpServersFile
    case "vscode":
      return HostConfig.VsCodeFile
    case "vscode-settings":
      return HostConfig.VsCodeSettingsFile
    case "zed":
      return HostConfig.ZedFile
    case "plugin":
      return HostConfig.PluginFile
  }
}

/** Which schema describes a detected format. */
export const formatOf = (format: HostConfig.Format): Format => {
  switch (format._tag) {
    case "DockerAgent":
      return "docker-agent"
    case "McpServers":
      return "mcp-servers"
    case "VsCode":
      return "vscode"
    case "VsCodeSettings":
      return "vscode-settings"
    case "Zed":
      return "zed"
    case "Plugin":
      return "plugin"
  }
}

/** A standalone draft 2020-12 document; unknown fields of a toolset are flagged, as the loader rejects them. */
export const make = (format: Format = "docker-agent"): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schemaOf(format), { onExcessProperty: "error" })
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    ...document.schema,
    $defs: document.definitions
  }
}
