/**
 * `toolvisor prompts [CONFIG]` lists the agent's prompts (named like its tools: prefixed with the
 * toolset's `name` when the config gives one), and `toolvisor prompt [CONFIG] NAME [ARGS…]` gets
 * one, with its arguments as `key=value` words or one JSON object of strings, and prints its
 * messages. A prompt's name, description and messages come from its server: human output escapes
 * them, `--json` keeps them as they were.
 */
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/sdk/types.js"
import type { Surfaces } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { UsageError } from "./CliError.ts"
import * as Content from "./Content.ts"
import type * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Settle from "./Settle.ts"
import * as Shell from "./Shell.ts"

export interface Options extends Open.Target {
  readonly json: boolean
  readonly timeout: string
}

/** One prompt for scripts: what an MCP client would see in prompts/list, plus its toolset. */
export const promptJson = (entry: Surfaces.PromptEntry) => ({
  ...entry.item,
  name: entry.name,
  toolset: entry.toolset,
  lastKnown: entry.lastKnown
})

/** What the catalogs of prompts and resources share: whether all is there, and what clashed. */
export interface Shared {
  readonly complete: boolean
  readonly clashes: ReadonlyArray<Surfaces.Clash>
  readonly unsupported: ReadonlyArray<string>
}

/** The shared part as notes under the catalog's lines. */
export const notes = (catalog: Shared): ReadonlyArray<string> => [
  ...(catalog.complete ? [] : ["(some toolsets are not ready: what they offered last is marked last-known)"]),
  ...catalog.clashes.map((c) => Printable.line(`(${c.name} of ${c.toolset} is shadowed by ${c.shadowedBy})`)),
  ...catalog.unsupported.map((t) => Printable.line(`(${t}: prompts and resources not available)`))
]

/** A prompt's arguments in a few characters: `city, units?`. */
const argumentsOf = (prompt: Prompt): string =>
  (prompt.arguments ?? []).map((a) => `${a.name}${a.required === true ? "" : "?"}`).join(", ")

export const catalogText = (catalog: Surfaces.PromptCatalog, width = 120): string => {
  const rows = catalog.prompts.map((p): readonly [string, string, string] => [
    p.name,
    p.toolset,
    [
      argumentsOf(p.item) === "" ? "" : `(${argumentsOf(p.item)})`,
      (p.item.description ?? "").split("\n")[0] ?? "",
      p.lastKnown ? "[last-known]" : ""
    ]
      .filter((part) => part !== "")
      .join(" ")
  ])
  return [...(rows.length === 0 ? ["(no prompts)"] : Output.columns(rows, width)), ...notes(catalog)].join("\n")
}

/** A prompt as `describe` shows it: its description, its arguments and the `prompt` line that gets it. */
export const describeText = (entry: Surfaces.PromptEntry, config?: string): string => {
  const { item } = entry
  const args = item.arguments ?? []
  const width = Math.max(0, ...args.map((a) => Printable.line(a.name).length))
  const title = item.title === undefined ? "" : `  ${item.title}`
  return [
    Printable.line(`${entry.name}  (prompt of toolset ${entry.toolset})${title}`),
    "",
    item.description === undefined ? "(no description)" : Printable.lines(item.description),
    "",
    "arguments:",
    ...(args.length === 0
      ? ["  (none)"]
      : args.map((a) =>
          `  ${Printable.line(a.name).padEnd(width)}  ${a.required === true ? "required" : "optional"}  ${Printable.line((a.description ?? "").split("\n")[0] ?? "")}`.trimEnd()
        )),
    "",
    `get it: ${Shell.toolvisor(
      "prompt",
      ...(config === undefined ? [] : [config]),
      entry.name,
      ...args.filter((a) => a.required === true).map((a) => `${a.name}=…`)
    )}`
  ].join("\n")
}

/** A prompt's messages for people: its description, then each message under its role. */
export const resultText = (result: GetPromptResult): string =>
  [
    ...(result.description === undefined ? [] : [Printable.lines(result.description), ""]),
    ...result.messages.flatMap((m, i) => [
      ...(i === 0 ? [] : [""]),
      `[${Printable.line(m.role)}]`,
      Content.text(m.content)
    ])
  ].join("\n")

/** `key=value` words, or one JSON object whose values are strings (MCP's prompt arguments are strings). */
export const parseArgs = (words: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [first] = words
    if (words.length === 1 && first !== undefined && first.trimStart().startsWith("{")) {
      const parsed = yield* Effect.try({
        try: (): unknown => JSON.parse(first),
        catch: () => new UsageError({ message: `prompt: ARGS must be key=value words or a JSON object, got ${first}` })
      })
      if (!Predicate.isObject(parsed) || Array.isArray(parsed)) {
        return yield* new UsageError({ message: `prompt: ARGS must be a JSON object, got ${first}` })
      }
      const entries = Object.entries(parsed)
      const notText = entries.find(([, value]) => typeof value !== "string")
      if (notText !== undefined) {
        return yield* new UsageError({
          message: `prompt: the argument ${notText[0]} must be a string (a prompt's arguments are text)`
        })
      }
      return Object.fromEntries(entries.map(([key, value]) => [key, String(value)]))
    }
    const pairs: Array<readonly [string, string]> = []
    for (const word of words) {
      const at = word.indexOf("=")
      if (at <= 0) return yield* new UsageError({ message: `prompt: expected key=value, got ${word}` })
      pairs.push([word.slice(0, at), word.slice(at + 1)])
    }
    return Object.fromEntries(pairs)
  })

/**
 * Prints a catalog of prompts or resources: for scripts (`--json`) one object of its `type`, its
 * `lists` and the shared part; for people `text`, as wide as the terminal.
 */
export const printCatalog = <C extends Shared>(
  json: boolean,
  type: string,
  catalog: C,
  lists: { readonly [key: string]: unknown },
  text: (catalog: C, width: number) => string
) =>
  Console.log(
    json
      ? Printable.json({
          type,
          complete: catalog.complete,
          ...lists,
          clashes: catalog.clashes,
          unsupported: catalog.unsupported
        })
      : text(catalog, process.stdout.columns || 120)
  )

export const list = Effect.fn("toolvisor.prompts")(function* (options: Options) {
  const registry = yield* Settle.opened(options, options.timeout)
  const catalog = yield* registry.prompts()
  yield* printCatalog(options.json, "prompts", catalog, { prompts: catalog.prompts.map(promptJson) }, catalogText)
})

export const get = Effect.fn("toolvisor.prompt")(function* (
  options: Omit<Options, "config"> & { readonly operands: ReadonlyArray<string> }
) {
  const { config, rest } = yield* Operands.split({ command: "prompt", names: ["NAME", "[ARGS…]"] }, options.operands)
  const [name = "", ...words] = rest
  const args = yield* parseArgs(words)
  const registry = yield* Settle.opened({ ...options, config }, options.timeout)
  const result = yield* registry
    .getPrompt(name, args)
    .pipe(
      Effect.tapError((error) =>
        options.json ? Console.log(Output.failureJson(error, { prompt: name })) : Effect.void
      )
    )
  yield* Console.log(options.json ? Printable.json(result) : resultText(result))
})
