/** server-everything as the one toolset of an agent config: its tools are `everything_*`. */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

const root = NodePath.resolve(import.meta.dirname, "../..")

export const server = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")

/** What a test adds to the config, as YAML lines; `writeConfig` indents them. */
export interface Extra {
  /** More keys of the everything toolset, e.g. `defer: [get-sum]`. */
  readonly entry?: ReadonlyArray<string>
  /** More items of the toolsets list after it, each starting `- type: …`. */
  readonly toolsets?: ReadonlyArray<string>
}

/** Writes `agent.yaml` into `dir`, running server-everything over stdio with this Node; returns its path. */
export const writeConfig = (dir: string, extra: Extra = {}): string => {
  const path = NodePath.join(dir, "agent.yaml")
  NodeFs.writeFileSync(
    path,
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: everything",
      `        command: ${JSON.stringify(process.execPath)}`,
      `        args: [${JSON.stringify(server)}, "stdio"]`,
      ...(extra.entry ?? []).map((line) => `        ${line}`),
      ...(extra.toolsets ?? []).map((line) => `      ${line}`),
      ""
    ].join("\n")
  )
  return path
}
