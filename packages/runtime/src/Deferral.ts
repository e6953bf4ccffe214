/**
 * How an agent loop offers deferred tools: every eager tool, one `search_tools` tool in place of
 * the deferred ones, and — from the next model call on, for the rest of the conversation — the
 * deferred tools a search returned. What a conversation has loaded is its own: two conversations,
 * or two agents built from one config, never see each other's (the evva rule). The agent adapters
 * (effect/ai, AI SDK) and the gateway's sessions share this module, so a model reads the same tool
 * and the same answers whichever way it is served.
 */
import * as Predicate from "effect/Predicate"
import type * as Catalog from "./Catalog.ts"
import * as ToolSearch from "./ToolSearch.ts"

/** The name the model calls the search by. */
export const name = "search_tools"

/** What the model reads about the search: that tools are missing until searched, and both ways to ask. */
export const description =
  "Find tools by what they do. Many of your tools are not listed until you search for them: describe the task " +
  "in a few words (e.g. 'create a GitHub issue', 'read a file'), or load tools by exact name with " +
  "'select:name1,name2'. Returns matching tool names with one-line descriptions; the tools it returns can be " +
  "called from your next step on."

/** The JSON Schema of the search's arguments. */
export const parameters = {
  type: "object",
  properties: {
    query: {
      type: "string",
      description: "What the tool should do, in a few words; or select:NAME[,NAME] to load tools by exact name"
    },
    limit: { type: "integer", minimum: 1, maximum: 50, description: "At most this many tools (default 5)" }
  },
  required: ["query"],
  additionalProperties: false
} as const

/** The search's arguments as `argsOf` reads them from what the model sent. */
export interface Args {
  readonly query: string
  readonly limit: number | undefined
}

/** The model's arguments, read leniently: a missing query is an empty one, a bad limit the default. */
export const argsOf = (params: unknown): Args => {
  const query = Predicate.isObject(params) && typeof params.query === "string" ? params.query : ""
  const limit = Predicate.isObject(params) && typeof params.limit === "number" ? params.limit : undefined
  return { query, limit }
}

/** Whether the catalog defers any tool: only then is `search_tools` offered. */
export const hasDeferred = (catalog: Catalog.Catalog): boolean => catalog.tools.some((entry) => entry.deferred === true)

/** Whether a conversation that loaded `loaded` (catalog names) is offered this tool. */
export const isOffered = (entry: Catalog.Entry, loaded: ReadonlySet<string>): boolean =>
  entry.deferred !== true || loaded.has(entry.name)

/**
 * A query as the registry searches it: the names of a `select:` are the model's, and a name a
 * provider would refuse is shown to the model rewritten (`ToolNames`), so each is turned back into
 * the catalog's. Answered with the rewritten names it had been shown, `select:` said "no tool".
 */
export const catalogQuery = (query: string, fromModel: (name: string) => string | undefined): string => {
  const select = /^(\s*select:)(.*)$/is.exec(query)
  if (select === null) return query
  const names = (select[2] ?? "").split(",").map((name) => fromModel(name.trim()) ?? name)
  return `${select[1]}${names.join(",")}`
}

/** Records what a search returned as loaded for the conversation. */
export const load = (loaded: Set<string>, result: ToolSearch.Result): void => {
  for (const hit of result.hits) if (hit.deferred) loaded.add(hit.name)
}

/**
 * What the model reads back: each tool by the name it calls it by, with its one-line summary;
 * names `select:` asked for that do not exist, with near ones; and those past its limit, not
 * looked up, so the model knows to ask again.
 */
export const render = (result: ToolSearch.Result, query: string, toModel: (name: string) => string): string => {
  const lines = result.hits.map((hit) => {
    const alike = hit.alike.length === 0 ? "" : ` (the same tool also as ${hit.alike.map(toModel).join(", ")})`
    return `- ${toModel(hit.name)}: ${hit.summary === "" ? "(no description)" : hit.summary}${alike}`
  })
  const unknown = result.unknown.map(
    (u) =>
      `No tool named "${u.name}"${u.near.length === 0 ? "" : ` (did you mean ${u.near.map((n) => `"${toModel(n)}"`).join(", ")}?)`}.`
  )
  const unread = result.unread ?? []
  const rest =
    unread.length === 0
      ? []
      : [
          `${unread.length} more name(s) were not looked up: a select: takes ${ToolSearch.maxLimit} at most. Ask again for ${unread
            .slice(0, 3)
            .map((name) => `"${name.slice(0, 100)}"`)
            .join(", ")}${unread.length > 3 ? " and the rest" : ""}.`
        ]
  if (lines.length === 0) {
    return [
      ...unknown,
      ...(unknown.length === 0 && unread.length === 0
        ? [`No tool matches "${query.slice(0, 200)}". Try other words, or select:NAME.`]
        : []),
      ...rest
    ].join("\n")
  }
  return [`${lines.length} tool(s), callable from your next step:`, ...lines, ...unknown, ...rest].join("\n")
}

/**
 * The agent's instructions about its tools: each toolset's (its configured `instruction` with the
 * server's own), and, when tools are deferred, how to find them. Empty when there is nothing to say.
 */
export const instructions = (catalog: Catalog.Catalog): string => {
  const deferred = catalog.tools.filter((entry) => entry.deferred === true).length
  return [
    ...(catalog.instructions ?? []).map((instruction) => `## ${instruction.toolset}\n${instruction.text}`),
    ...(deferred === 0
      ? []
      : [
          `## Deferred tools\n${deferred} of your ${catalog.tools.length} tools are not listed until you find them: call ${name} with what you need done, then call the tools it returns.`
        ])
  ].join("\n\n")
}
