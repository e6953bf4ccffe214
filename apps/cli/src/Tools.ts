/**
 * `toolvisor tools` lists the agent's catalog (with `--json`, each tool's input schema and
 * annotations, as an MCP client would see them); `toolvisor describe TOOL` shows one tool's
 * description and arguments readably.
 */
import { Catalog } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Failure } from "./CliError.ts"
import * as Describe from "./Describe.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Open from "./Open.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Settle from "./Settle.ts"

export interface Options extends Open.Target {
  readonly json: boolean
  readonly timeout: string
}

/** The agent's catalog once the toolsets have settled (or the timeout has passed). */
const settledCatalog = (options: Options) =>
  Effect.gen(function* () {
    const timeout = yield* DurationFlag.parse(options.timeout)
    const { registry } = yield* Open.open(options)
    yield* Settle.settle(registry, timeout)
    return yield* registry.catalog()
  })

export const list = Effect.fn("toolvisor.tools")(function* (options: Options) {
  const catalog = yield* settledCatalog(options)
  yield* Console.log(
    options.json
      ? Printable.json(Output.catalogJson(catalog))
      : Output.catalogText(catalog, process.stdout.columns || 120)
  )
})

export const describe = Effect.fn("toolvisor.describe")(function* (options: Options & { readonly tool: string }) {
  const catalog = yield* settledCatalog(options)
  const entry = catalog.tools.find((t) => t.name === options.tool)
  if (entry === undefined) {
    const near = Catalog.nearNames(
      options.tool,
      catalog.tools.map((t) => t.name)
    )
    const missing = catalog.missing.map((m) => `${m.toolset} (${m.state})`)
    return yield* new Failure({
      message: [
        `no tool named "${options.tool}"`,
        near.length > 0 ? `; did you mean ${near.join(", ")}?` : "",
        missing.length > 0 ? `; not ready: ${missing.join(", ")}` : ""
      ].join("")
    })
  }
  yield* Console.log(options.json ? Printable.json(Output.toolJson(entry)) : Describe.text(entry))
})
