/**
 * What one gateway session is offered and may call. A session bound to a tool group (`/mcp/<group>`,
 * `serve --group`) sees and calls only the group's tools; deferred tools (`defer`, `defer_above`)
 * are listed only once a `search_tools` of this session found them, as the agent adapters offer
 * them (`Deferral`), and stay callable by name without a search, for hosts that cache names.
 *
 * The state is a session's own and small — the names its searches loaded — and lives in the
 * session's server, so it goes when the session does: nothing here subscribes to anything.
 */
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import { ErrorCode, McpError, type ServerNotification, type ServerRequest } from "@modelcontextprotocol/sdk/types.js"
import { ToolGroups } from "@toolvisor/config"
import type { Toolset } from "@toolvisor/core"
import { type Catalog, Deferral, type ToolSearch, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"

/** A tool group as a session uses it. */
export interface Group {
  readonly name: string
  readonly member: (tool: string) => boolean
}

export const group = (name: string, patterns: ReadonlyArray<string>): Group => ({
  name,
  member: ToolGroups.member(patterns)
})

export interface SessionOffer {
  /** The session's group; every tool when undefined. */
  readonly group: Group | undefined
  /** The catalog's tools this session lists now: its group's, eager or loaded by its searches. */
  readonly listed: (tools: ReadonlyArray<Catalog.Entry>) => ReadonlyArray<Catalog.Entry>
  /**
   * Whether the gateway's `search_tools` is offered: the group defers tools. A toolset's tool of
   * that name is then hidden, as deferred tools could otherwise never be found.
   */
  readonly searches: (tools: ReadonlyArray<Catalog.Entry>) => boolean
  /** Whether the session may call a tool of this name (its group's; deferred or not). */
  readonly may: (tool: string) => boolean
  /** Loads the deferred tools a search found; true when the session's list grew. */
  readonly load: (found: ToolSearch.Result) => boolean
}

export const make = (group: Group | undefined): SessionOffer => {
  const loaded = new Set<string>()
  const mine = (tools: ReadonlyArray<Catalog.Entry>) =>
    group === undefined ? tools : tools.filter((entry) => group.member(entry.name))
  return {
    group,
    listed: (tools) => mine(tools).filter((entry) => Deferral.isOffered(entry, loaded)),
    searches: (tools) => mine(tools).some((entry) => entry.deferred === true),
    may: (tool) => group === undefined || group.member(tool),
    load: (found) => {
      const before = loaded.size
      Deferral.load(loaded, found)
      return loaded.size > before
    }
  }
}

/** `search_tools` as MCP lists it: the same tool the agent adapters offer a model. */
export const searchTool = {
  name: Deferral.name,
  description: Deferral.description,
  inputSchema: {
    ...Deferral.parameters,
    properties: { ...Deferral.parameters.properties },
    required: [...Deferral.parameters.required]
  },
  annotations: { readOnlyHint: true }
}

/**
 * A call outside the session's group: the JSON-RPC error a call of a tool the server never listed
 * gets (invalid params), so a grouped session learns nothing of, and reaches nothing beyond, its group.
 */
export const outside = (session: SessionOffer, tool: string): McpError =>
  new McpError(
    ErrorCode.InvalidParams,
    `unknown tool: ${tool.slice(0, 200)}${session.group === undefined ? "" : ` (not in tool group ${session.group.name})`}`
  )

/**
 * Runs `search_tools` for the session: searches its group only, loads the deferred tools found, and
 * when its list grew tells this session alone (`tools/list_changed`, sent with the answer's
 * request, so it reaches a streamable HTTP client without a standing GET stream).
 */
export const search = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  session: SessionOffer,
  args: unknown,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>
): Effect.Effect<Toolset.ToolResult> => {
  const { query, limit } = Deferral.argsOf(args)
  return registry.searchTools(query, { limit, agent, within: session.group?.member }).pipe(
    Effect.flatMap((found) => {
      const answer: Toolset.ToolResult = {
        content: [{ type: "text", text: Deferral.render(found, query, (name) => name) }]
      }
      if (!session.load(found)) return Effect.succeed(answer)
      return Effect.tryPromise(() => extra.sendNotification({ method: "notifications/tools/list_changed" })).pipe(
        Effect.catch((error) => Effect.logDebug("a client missed tools/list_changed after its search", error)),
        Effect.as(answer)
      )
    }),
    Effect.catchTag("UnknownAgent", (error) =>
      Effect.succeed({ content: [{ type: "text" as const, text: `${error._tag}: ${error.message}` }], isError: true })
    )
  )
}
