/**
 * Tool search: how a model finds, among hundreds of tools, the few it is not offered yet. Tools
 * are ranked with BM25+ over their name, title, description and parameter names, names split into
 * words (`read_text_file`, `readTextFile` and `read-text-file` all read "read text file"); a query
 * `select:a,b` names tools exactly. The index follows the catalog: `update` touches only the tools
 * whose definition changed, so no query ever rebuilds it.
 *
 * The engine is MiniSearch, chosen by a benchmark against Orama 3.1 and FlexSearch 0.8 on 5,000
 * real tool definitions and 72 labelled queries, each engine fed the same words (one run, 2 cores
 * loaded by other work, so wall times are inflated alike): recall@5 MiniSearch 0.986, FlexSearch
 * 0.958, Orama 0.931; update of one toolset 0.6 ms, 2.1 ms, 6.3 ms; heap 5.9 MB, 3.2 MB, 17 MB;
 * build 441 ms, 222 ms, 778 ms; query p50 1.4 ms, 0.5 ms, 3.5 ms. FlexSearch answered fastest but
 * ranks by term position, not BM25, and needs a hand-made merge of its per-field results;
 * MiniSearch's cost is cut instead by leaving out the words most tools have (`maxDocumentShare`).
 */
import MiniSearch from "minisearch"
import * as Catalog from "./Catalog.ts"

/** One tool a search found. */
export interface Hit {
  /** The name to call it by. */
  readonly name: string
  readonly toolset: string
  /** The first line of its description (or its title), at most `summaryLength` characters. */
  readonly summary: string
  /** Whether the agent is offered it only once a search found it. */
  readonly deferred: boolean
  /**
   * Other names of the same definition: the same server declared again under another name. They
   * are folded into one hit, so five hits are five different tools.
   */
  readonly alike: ReadonlyArray<string>
}

/** A name `select:` asked for that no tool has, with the names close to it. */
export interface Unknown {
  readonly name: string
  readonly near: ReadonlyArray<string>
}

/** What a search answers: the tools found, best first, and the names `select:` asked for that none has. */
export interface Result {
  readonly hits: ReadonlyArray<Hit>
  readonly unknown: ReadonlyArray<Unknown>
  /** Names a `select:` asked for past `maxLimit`: not looked up, so the model is told to ask again. */
  readonly unread?: ReadonlyArray<string>
}

/** A query as `parse` reads it: exact names to select (and those past `maxLimit`), or text to rank tools by. */
export type Query =
  | { readonly _tag: "Select"; readonly names: ReadonlyArray<string>; readonly unread: ReadonlyArray<string> }
  | { readonly _tag: "Rank"; readonly text: string }

/** Hits a search returns when the model names no limit: enough to choose from, few enough to read. */
export const defaultLimit = 5
/** The most hits a search returns, whatever limit the model asks for (`clampLimit`). */
export const maxLimit = 50
/** A query comes from a model: longer ones are cut, not refused. */
export const maxQueryLength = 1000
/** A hit's summary is cut to this many characters: a model reads many hits, each only to choose. */
export const summaryLength = 160

/**
 * A `select:` is read to this many characters: `maxLimit` names of 256 characters (an MCP tool
 * name is at most 128, a toolset's prefix comes on top), where a ranked query is cut at
 * `maxQueryLength` (a select of 60 short names was cut there, and the names past the cut were lost).
 */
const maxSelectLength = maxLimit * 256

/** `select:NAME[,NAME]` selects exactly (as Claude Code's ToolSearch); anything else is ranked. */
export const parse = (query: string): Query => {
  const select = /^\s*select:/i.exec(query.slice(0, maxQueryLength))
  if (select === null) return { _tag: "Rank", text: query.slice(0, maxQueryLength).trim() }
  const names = query
    .slice(select[0].length, select[0].length + maxSelectLength)
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "")
  const distinct = [...new Set(names)]
  return { _tag: "Select", names: distinct.slice(0, maxLimit), unread: distinct.slice(maxLimit) }
}

/** Bounds a caller's limit to 1..`maxLimit`. */
export const clampLimit = (limit: number | undefined): number =>
  limit === undefined || !Number.isFinite(limit) ? defaultLimit : Math.min(maxLimit, Math.max(1, Math.floor(limit)))

const stopWords = new Set(
  "a an and any are as at be by can do for from how i in into is it its me my of on or please some that the their them then this to use using want we with you your".split(
    " "
  )
)

/**
 * Plural and verb endings folded away, and a final `e`, so "files", "file", "creating", "created"
 * and "create" meet ("fil", "creat"). Crude next to a real stemmer, but the same on both sides of
 * the match, which is all ranking needs.
 */
const stem = (word: string): string => {
  let out = word
  if (out.length > 4 && out.endsWith("ies")) out = `${out.slice(0, -3)}y`
  else if (out.length > 6 && out.endsWith("ing")) out = out.slice(0, -3)
  else if (out.length > 4 && out.endsWith("ed")) out = out.slice(0, -2)
  else if (out.length > 3 && out.endsWith("s") && !out.endsWith("ss")) out = out.slice(0, -1)
  return out.length > 3 && out.endsWith("e") ? out.slice(0, -1) : out
}

const isUpper = (c: number) => c >= 65 && c <= 90
const isLower = (c: number) => c >= 97 && c <= 122
const isDigit = (c: number) => c >= 48 && c <= 57

/**
 * Splits at everything but ASCII letters and digits, and where the case changes: `readFile`,
 * `v2Beta`, and `HTTPServer` before its `S`. One pass: the regular expressions that do this
 * backtrack quadratically on a run of capitals (36 s for a 100,000-letter name from a hostile server).
 */
const split = (text: string): Array<string> => {
  const parts: Array<string> = []
  let start = -1
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0
    if (!(isUpper(c) || isLower(c) || isDigit(c))) {
      if (start >= 0) parts.push(text.slice(start, i))
      start = -1
    } else if (start < 0) {
      start = i
    } else if (isUpper(c)) {
      const before = text.charCodeAt(i - 1)
      if (isLower(before) || isDigit(before) || (isUpper(before) && isLower(text.charCodeAt(i + 1)))) {
        parts.push(text.slice(start, i))
        start = i
      }
    }
  }
  return parts
}

/** The words of a name or a text: `camelCase`, `snake_case`, `kebab-case` and `dotted.names` split, lower-cased, stemmed. */
export const words = (text: string): Array<string> =>
  split(text)
    .map((word) => word.toLowerCase())
    .filter((word) => !stopWords.has(word))
    .map(stem)

/** What is indexed of a tool; a hostile server's megabyte description is cut, not indexed whole. */
interface Document {
  readonly id: string
  readonly name: string
  readonly title: string
  readonly description: string
  readonly params: string
}

/** What a server says about one tool is indexed up to these lengths. */
const maxIndexedName = 256
const maxIndexedDescription = 4096
const maxIndexedParams = 100

const documentOf = (entry: Catalog.Entry): Document => {
  const { tool } = entry
  const properties = tool.inputSchema.properties
  const params =
    typeof properties === "object" && properties !== null
      ? Object.keys(properties)
          .slice(0, maxIndexedParams)
          .map((param) => param.slice(0, maxIndexedName))
          .join(" ")
      : ""
  return {
    id: entry.name,
    name: entry.name.slice(0, maxIndexedName),
    title: (tool.title ?? tool.annotations?.title ?? "").slice(0, maxIndexedName),
    description: (tool.description ?? "").slice(0, maxIndexedDescription),
    params
  }
}

/** Tools with the same definition share it: the same server under two names. */
const definitionOf = (entry: Catalog.Entry, document: Document): string =>
  `${entry.tool.name}\u0000${document.title}\u0000${document.description}\u0000${document.params}`

const sameDocument = (a: Document, b: Document): boolean =>
  a.title === b.title && a.description === b.description && a.params === b.params

/** The first line of a tool's description (or its title), cut to `summaryLength`. */
export const summaryOf = (entry: Catalog.Entry): string => {
  const text = (entry.tool.description ?? entry.tool.title ?? "").trim()
  const line = text.split(/\r?\n/, 1)[0] ?? ""
  return line.length <= summaryLength ? line : `${line.slice(0, summaryLength - 1)}…`
}

/** Field weights: a word of the name says more about a tool than a word of its description. */
const boost = { name: 3, title: 2, description: 1, params: 1 }

/**
 * A query word found in more than this share of the tools says almost nothing about which one is
 * meant (its IDF is near zero) and costs the most to score: it is left out when the query has a
 * rarer word (as Elasticsearch's `cutoff_frequency`). At 5,000 tools this halves a query's cost
 * and changes no answer of the labelled set.
 */
export const maxDocumentShare = 0.2

const termsOf = (document: Document): ReadonlySet<string> =>
  new Set(words(`${document.name} ${document.title} ${document.description} ${document.params}`))

interface Indexed {
  readonly entry: Catalog.Entry
  readonly document: Document
  readonly definition: string
}

/** One agent's searchable tools, kept in step with its catalog by `update`. */
export interface Index {
  /**
   * Brings the index to `tools` (a catalog's offer): tools gone are removed, new ones added, and
   * only those whose name, title, description or parameters changed are indexed again.
   */
  readonly update: (tools: ReadonlyArray<Catalog.Entry>) => void
  /**
   * Ranks or selects among the tools `within` accepts (every tool when omitted): a gateway
   * session bound to a tool group searches the agent's one index, never sees a tool outside it.
   */
  readonly search: (query: string, limit?: number, within?: (name: string) => boolean) => Result
  readonly size: () => number
  /** Documents indexed so far, first time or again (for tests and benchmarks: updates are incremental). */
  readonly writes: () => number
}

const everything = (): boolean => true

/** An empty index; `update` fills it. */
export const make = (): Index => {
  const engine = new MiniSearch<Document>({
    fields: ["name", "title", "description", "params"],
    tokenize: words,
    // `words` already lower-cases and stems; MiniSearch's own term processing would undo nothing useful.
    processTerm: (term) => term,
    // Documents leave by `remove`, which cleans up at once: no vacuum timers to outlive anything.
    autoVacuum: false,
    searchOptions: { boost, combineWith: "OR", tokenize: words, processTerm: (term) => term }
  })
  const indexed = new Map<string, Indexed>()
  /** How many tools each word appears in, for `maxDocumentShare`. */
  const frequency = new Map<string, number>()
  let writes = 0

  const add = (document: Document) => {
    engine.add(document)
    for (const term of termsOf(document)) frequency.set(term, (frequency.get(term) ?? 0) + 1)
    writes += 1
  }

  const remove = (document: Document) => {
    engine.remove(document)
    for (const term of termsOf(document)) {
      const count = (frequency.get(term) ?? 0) - 1
      if (count > 0) frequency.set(term, count)
      else frequency.delete(term)
    }
  }

  const update = (tools: ReadonlyArray<Catalog.Entry>) => {
    const seen = new Set<string>()
    for (const entry of tools) {
      if (seen.has(entry.name)) continue
      seen.add(entry.name)
      const old = indexed.get(entry.name)
      if (old !== undefined && old.entry.tool === entry.tool && old.entry.toolset === entry.toolset) {
        if (old.entry !== entry) indexed.set(entry.name, { ...old, entry })
        continue
      }
      const document = documentOf(entry)
      if (old !== undefined && sameDocument(old.document, document)) {
        indexed.set(entry.name, { ...old, entry })
        continue
      }
      if (old !== undefined) remove(old.document)
      add(document)
      indexed.set(entry.name, { entry, document, definition: definitionOf(entry, document) })
    }
    for (const [name, old] of indexed) {
      if (seen.has(name)) continue
      remove(old.document)
      indexed.delete(name)
    }
  }

  const hitOf = (item: Indexed, alike: ReadonlyArray<string> = []): Hit => ({
    name: item.entry.name,
    toolset: item.entry.toolset,
    summary: summaryOf(item.entry),
    deferred: item.entry.deferred === true,
    alike
  })

  const select = (names: ReadonlyArray<string>, within: (name: string) => boolean): Result => {
    const hits: Array<Hit> = []
    const unknown: Array<Unknown> = []
    const known = [...indexed.keys()].filter(within)
    for (const name of names) {
      const exact = indexed.get(name)
      const item =
        exact !== undefined && within(name)
          ? exact
          : [...indexed.values()].find((i) => i.entry.name.toLowerCase() === name.toLowerCase() && within(i.entry.name))
      if (item === undefined) unknown.push({ name, near: Catalog.nearNames(name, known) })
      else if (!hits.some((hit) => hit.name === item.entry.name)) hits.push(hitOf(item))
    }
    return { hits, unknown }
  }

  /** Ranked hits, one per definition: the names of its other copies go in `alike` (a few at most). */
  const rank = (text: string, limit: number, within: (name: string) => boolean): Result => {
    const groups = new Map<string, { readonly first: Indexed; readonly alike: Array<string> }>()
    const terms = words(text)
    const cutoff = maxDocumentShare * indexed.size
    const telling = terms.filter((term) => (frequency.get(term) ?? 0) <= cutoff)
    // The words are stemmed already: the engine takes them as they are.
    const query = (telling.length > 0 ? telling : terms).join(" ")
    for (const found of engine.search(query, { tokenize: (kept) => kept.split(" ") })) {
      const item = indexed.get(String(found.id))
      if (item === undefined || !within(item.entry.name)) continue
      const group = groups.get(item.definition)
      if (group !== undefined) {
        if (group.alike.length < 3) group.alike.push(item.entry.name)
        continue
      }
      if (groups.size === limit) break
      groups.set(item.definition, { first: item, alike: [] })
    }
    return { hits: [...groups.values()].map((group) => hitOf(group.first, group.alike)), unknown: [] }
  }

  const search = (query: string, limit?: number, within: (name: string) => boolean = everything): Result => {
    const parsed = parse(query)
    if (parsed._tag === "Select") {
      const found = select(parsed.names, within)
      return parsed.unread.length === 0 ? found : { ...found, unread: parsed.unread }
    }
    return parsed.text === "" ? { hits: [], unknown: [] } : rank(parsed.text, clampLimit(limit), within)
  }

  return { update, search, size: () => indexed.size, writes: () => writes }
}
