/**
 * `toolvisor resources [CONFIG]` lists the agent's resources and resource templates (URIs as their
 * servers gave them), and `toolvisor read [CONFIG] URI` reads one: text to stdout; in place of a
 * blob a line with its MIME type and size, since raw bytes would garble a terminal — `--out FILE`
 * writes the bytes (or the text) to a file instead. Everything shown comes from the servers, so
 * human output is escaped; `--json` prints the contents as the server sent them (blobs in base64).
 */
import * as NodeFs from "node:fs"
import type { ReadResourceResult } from "@modelcontextprotocol/sdk/types.js"
import type { Surfaces } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Failure, UsageError } from "./CliError.ts"
import * as Content from "./Content.ts"
import * as Operands from "./Operands.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Prompts from "./Prompts.ts"
import * as Settle from "./Settle.ts"

type Json = { readonly [key: string]: unknown }

/** What follows a URI: its MIME type, its name or title, the first line of its description. */
const about = (
  item: {
    readonly name: string
    readonly title?: string | undefined
    readonly mimeType?: string | undefined
    readonly description?: string | undefined
  },
  lastKnown: boolean
) =>
  [
    item.mimeType ?? "",
    item.title ?? item.name,
    (item.description ?? "").split("\n")[0] ?? "",
    lastKnown ? "[last-known]" : ""
  ]
    .filter((part) => part !== "")
    .join("  ")

export const catalogText = (catalog: Surfaces.ResourceCatalog, width = 120): string => {
  const resources = catalog.resources.map((r) => [r.item.uri, r.toolset, about(r.item, r.lastKnown)] as const)
  const templates = catalog.templates.map((t) => [t.item.uriTemplate, t.toolset, about(t.item, t.lastKnown)] as const)
  return [
    ...(resources.length === 0 ? ["(no resources)"] : Output.columns(resources, width)),
    ...(templates.length === 0
      ? []
      : ["", "templates (read a URI that fits one):", ...Output.columns(templates, width)]),
    ...Prompts.notes(catalog)
  ].join("\n")
}

const offeredJson = <A extends object>(entry: Surfaces.Offered<A>) => ({
  ...entry.item,
  toolset: entry.toolset,
  lastKnown: entry.lastKnown
})

export const list = Effect.fn("toolvisor.resources")(function* (options: Prompts.Options) {
  const registry = yield* Settle.opened(options, options.timeout)
  const catalog = yield* registry.resources()
  yield* Prompts.printCatalog(
    options.json,
    "resources",
    catalog,
    { resources: catalog.resources.map(offeredJson), templates: catalog.templates.map(offeredJson) },
    catalogText
  )
})

/** A read's contents for people: each one's text, or the line that stands for its blob. */
export const contentsText = (result: ReadResourceResult): string =>
  result.contents.map((contents: Json) => Content.resourceText(contents)).join("\n")

/** The bytes `--out` writes: the one item's text as UTF-8, or its blob decoded. */
const bytesOf = (uri: string, result: ReadResourceResult) => {
  const [only, ...others] = result.contents
  if (only === undefined || others.length > 0) {
    return Effect.fail(
      new Failure({ message: `read: ${uri} has ${result.contents.length} contents; --out writes exactly one` })
    )
  }
  return Effect.succeed("blob" in only ? Buffer.from(only.blob, "base64") : Buffer.from(only.text, "utf8"))
}

export interface ReadOptions extends Omit<Prompts.Options, "config"> {
  readonly operands: ReadonlyArray<string>
  readonly out: Option.Option<string>
}

export const read = Effect.fn("toolvisor.read")(function* (options: ReadOptions) {
  const { config, rest } = yield* Operands.split({ command: "read", names: ["URI"] }, options.operands)
  const uri = rest[0] ?? ""
  const registry = yield* Settle.opened({ ...options, config }, options.timeout)
  const result = yield* registry
    .readResource(uri)
    .pipe(Effect.tapError((error) => (options.json ? Console.log(Output.failureJson(error, { uri })) : Effect.void)))
  if (Option.isSome(options.out)) {
    const path = options.out.value
    const bytes = yield* bytesOf(uri, result)
    yield* Effect.try({
      try: () => NodeFs.writeFileSync(path, bytes),
      catch: (cause) => new UsageError({ message: `read: cannot write ${path}: ${String(cause)}` })
    })
    return yield* Effect.logInfo(`wrote ${bytes.length} bytes of ${uri} to ${path}`)
  }
  yield* Console.log(options.json ? Printable.json(result) : contentsText(result))
})
