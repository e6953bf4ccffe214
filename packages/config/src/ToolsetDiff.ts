/**
 * What changed between two configs, toolset by toolset: the foundation of hot reload. A toolset is
 * matched by its identity (what it is) and compared by its signature (how it is defined), as in
 * docker-agent's `pkg/teamloader/diff.go`.
 */
import * as NodeCrypto from "node:crypto"
import { Policy } from "@toolvisor/core"
import * as Schema from "effect/Schema"
import type * as AgentConfig from "./AgentConfig.ts"

/** The declared fields an identity is built from. */
export interface Declared {
  readonly type: string
  readonly name?: string | undefined
  readonly ref?: string | undefined
  readonly command?: string | undefined
  readonly url?: string | undefined
}

/**
 * A toolset's identity: `type/name` when named (renaming is a different toolset), else by its
 * source: `mcp/ref/<ref>`, `mcp/cmd/<command>`, `mcp/remote/<url>`, `lsp/cmd/<command>`.
 */
export const identity = (declared: Declared): string => {
  if (declared.name !== undefined) return `${declared.type}/${declared.name}`
  if (declared.type === "mcp" && declared.ref !== undefined) return `mcp/ref/${declared.ref}`
  if (declared.command !== undefined) return `${declared.type}/cmd/${declared.command}`
  if (declared.type === "mcp" && declared.url !== undefined) return `mcp/remote/${declared.url}`
  return `${declared.type}/unnamed`
}

/** What a signature covers: everything that changes how the toolset runs, not where it was declared. */
export type Signed = Pick<
  AgentConfig.ToolsetConfig,
  "type" | "prefix" | "transport" | "fileTypes" | "allowOutsideWorkspace" | "tools" | "deny" | "lifecycle" | "lazy"
>

const encodeLifecycle = Schema.encodeSync(Policy.Lifecycle)

/** JSON with object keys sorted at every level and `undefined` dropped: equal values, equal text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_, item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item
  )

/**
 * Hex SHA-256 of the canonical JSON of the resolved entry. Durations are compared as written
 * after decoding, so `30` and `30s` sign the same; expanded environment values take part, so a
 * rotated token is a change.
 */
export const signature = (toolset: Signed): string =>
  NodeCrypto.createHash("sha256")
    .update(
      canonicalJson({
        type: toolset.type,
        prefix: toolset.prefix,
        transport: toolset.transport,
        fileTypes: toolset.fileTypes,
        allowOutsideWorkspace: toolset.allowOutsideWorkspace,
        tools: toolset.tools,
        deny: toolset.deny,
        lifecycle: encodeLifecycle(toolset.lifecycle),
        lazy: toolset.lazy
      })
    )
    .digest("hex")

export interface Change {
  readonly before: AgentConfig.ToolsetConfig
  readonly after: AgentConfig.ToolsetConfig
}

export interface Diff {
  /** In the new config's order. */
  readonly added: ReadonlyArray<AgentConfig.ToolsetConfig>
  /** In the old config's order. */
  readonly removed: ReadonlyArray<AgentConfig.ToolsetConfig>
  /** In the new config's order. */
  readonly changed: ReadonlyArray<Change>
  /** In the new config's order. */
  readonly unchanged: ReadonlyArray<AgentConfig.ToolsetConfig>
}

/** Matches toolsets by identity; a later duplicate identity in the old list wins, as in docker-agent. */
export const diff = (
  before: Pick<AgentConfig.Config, "toolsets">,
  after: Pick<AgentConfig.Config, "toolsets">
): Diff => {
  const old = new Map(before.toolsets.map((toolset) => [toolset.identity, toolset]))
  const seen = new Set(after.toolsets.map((toolset) => toolset.identity))
  const added: Array<AgentConfig.ToolsetConfig> = []
  const changed: Array<Change> = []
  const unchanged: Array<AgentConfig.ToolsetConfig> = []
  for (const toolset of after.toolsets) {
    const previous = old.get(toolset.identity)
    if (previous === undefined) added.push(toolset)
    else if (previous.signature === toolset.signature) unchanged.push(toolset)
    else changed.push({ before: previous, after: toolset })
  }
  const removed = [...old.values()].filter((toolset) => !seen.has(toolset.identity))
  return { added, removed, changed, unchanged }
}

/** True when anything must be started, stopped or restarted. */
export const hasChanges = (diff: Diff): boolean =>
  diff.added.length > 0 || diff.removed.length > 0 || diff.changed.length > 0
