/** server-everything as the one toolset of an agent config: its tools are `everything_*`. */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"

const root = NodePath.resolve(import.meta.dirname, "../..")

export const server = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")

/** Writes `agent.yaml` into `dir`, running server-everything over stdio with this Node; returns its path. */
export const writeConfig = (dir: string): string => {
  const path = NodePath.join(dir, "agent.yaml")
  NodeFs.writeFileSync(
    path,
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: everything",
      `        command: "${process.execPath}"`,
      `        args: ["${server}", "stdio"]`
    ].join("\n")
  )
  return path
}
