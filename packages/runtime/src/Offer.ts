/**
 * What an agent's model is offered, on top of what its toolsets can do: which tools are deferred
 * (offered only once a tool search found them) and what the agent is told about each toolset.
 * Deferral follows docker-agent's `defer` on a toolset (every tool, or the tools it names, by the
 * server's name or the exposed one) and the agent's `defer_above` (every tool while the agent has
 * more than N, but those a toolset's `tools:` names and toolsets with `defer: false`). It changes
 * what is offered, never what works: deferred tools stay in the catalog, routable and callable.
 */
import type { AgentConfig } from "@toolvisor/config"
import type * as Catalog from "./Catalog.ts"

/** docker-agent's placeholder for the server's own instructions inside a toolset's `instruction`. */
export const original = "{ORIGINAL_INSTRUCTIONS}"

/** A server's instructions come from the server: bounded before they reach any prompt. */
export const maxInstructionLength = 16_384

/** The rules of one toolset of the agent. */
interface Rule {
  readonly prefix: string | undefined
  readonly defer: AgentConfig.Defer | undefined
  /** The `tools:` allow-list: tools the config names stay eager past `defer_above`. */
  readonly named: ReadonlyArray<string> | undefined
}

const explicitly = (rule: Rule, entry: Catalog.Entry): boolean =>
  rule.defer === true ||
  (Array.isArray(rule.defer) && (rule.defer.includes(entry.tool.name) || rule.defer.includes(entry.name)))

const automatically = (rule: Rule, entry: Catalog.Entry): boolean =>
  rule.defer !== false && rule.named?.includes(entry.name) !== true

/**
 * The rules of every catalog toolset. Several LSP toolsets of one agent sit behind one router
 * named after them (`Routing`): its tools are deferred only where every one of them defers.
 */
const rulesOf = (
  spec: AgentConfig.AgentSpec,
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>
): ReadonlyMap<string, ReadonlyArray<Rule>> => {
  const ruleOf = (toolset: AgentConfig.ToolsetConfig): Rule => ({
    prefix: toolset.prefix,
    defer: spec.offers?.[toolset.identity]?.defer,
    named: toolset.tools
  })
  const rules = new Map<string, ReadonlyArray<Rule>>(toolsets.map((toolset) => [toolset.name, [ruleOf(toolset)]]))
  const lsp = toolsets.filter((toolset) => toolset.type === "lsp")
  if (lsp.length > 1) rules.set(lsp.map((toolset) => toolset.name).join("+"), lsp.map(ruleOf))
  return rules
}

/** The catalog with `deferred` set on every tool the rules defer; the same catalog when none is. */
export const defer = (
  catalog: Catalog.Catalog,
  spec: AgentConfig.AgentSpec,
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>
): Catalog.Catalog => {
  const rules = rulesOf(spec, toolsets)
  const above = spec.deferAbove !== undefined && catalog.tools.length > spec.deferAbove
  const deferred = (entry: Catalog.Entry): boolean => {
    const own = rules.get(entry.toolset)
    if (own === undefined || own.length === 0) return false
    return own.every((rule) => explicitly(rule, entry) || (above && automatically(rule, entry)))
  }
  let any = false
  const tools = catalog.tools.map((entry) => {
    if (!deferred(entry)) return entry
    any = true
    return { ...entry, deferred: true }
  })
  return any ? { ...catalog, tools } : catalog
}

/**
 * One toolset's instructions: its configured `instruction` with the server's own after it, or in
 * place of `{ORIGINAL_INSTRUCTIONS}` when the instruction has it (docker-agent's form).
 */
export const instruction = (configured: string | undefined, server: string | undefined): string => {
  const own = server?.slice(0, maxInstructionLength).trim() ?? ""
  if (configured === undefined) return own
  // A function, so a `$&` the server wrote is text, not a replacement pattern.
  if (configured.includes(original)) return configured.replace(original, () => own).trim()
  return [configured.trim(), own].filter((text) => text !== "").join("\n\n")
}

export const instructionsOf = (
  spec: AgentConfig.AgentSpec,
  toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>,
  serverInstructions: (identity: string) => string | undefined
): ReadonlyArray<Catalog.Instruction> =>
  toolsets.flatMap((toolset) => {
    const text = instruction(spec.offers?.[toolset.identity]?.instruction, serverInstructions(toolset.identity))
    return text === "" ? [] : [{ toolset: toolset.name, text }]
  })

/** The names a catalog defers, as one key: when it changes, what the model is offered changed. */
const deferralKey = (catalog: Catalog.Catalog): string =>
  catalog.tools.flatMap((entry) => (entry.deferred === true ? [entry.name] : [])).join("\u0000")

export interface Tracker {
  /**
   * The agent's catalog as offered: deferral marked, instructions attached. Its `version` is the
   * catalog's plus the number of times the deferral changed under the same tools, so it moves when
   * either does (a reload that only changes `defer`, a catalog that crosses `defer_above`).
   */
  readonly offer: (
    catalog: Catalog.Catalog,
    spec: AgentConfig.AgentSpec,
    toolsets: ReadonlyArray<AgentConfig.ToolsetConfig>,
    serverInstructions: (identity: string) => string | undefined
  ) => Catalog.Catalog
}

/**
 * A tracker for one agent. It works again only when the catalog or the spec is a new object (the
 * registry builds a new catalog on every change and a new spec on every reload), so reading the
 * same catalog twice costs nothing.
 */
export const tracker = (): Tracker => {
  let last:
    | {
        readonly input: Catalog.Catalog
        readonly spec: AgentConfig.AgentSpec
        readonly output: Catalog.Catalog
        readonly key: string
      }
    | undefined
  let epoch = 0
  return {
    offer: (catalog, spec, toolsets, serverInstructions) => {
      if (last !== undefined && last.input === catalog && last.spec === spec) return last.output
      const marked = defer(catalog, spec, toolsets)
      const key = deferralKey(marked)
      if (last !== undefined && last.key !== key) epoch += 1
      const instructions = instructionsOf(spec, toolsets, serverInstructions)
      const output: Catalog.Catalog = {
        ...marked,
        version: catalog.version + epoch,
        ...(instructions.length === 0 ? {} : { instructions })
      }
      last = { input: catalog, spec, output, key }
      return output
    }
  }
}
