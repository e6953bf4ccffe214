/**
 * `toolvisor tools` lists the agent's catalog (with `--json`, each tool's input schema and
 * annotations, as an MCP client would see them); `toolvisor describe [CONFIG] TOOL` shows one
 * tool's description and arguments readably, and the `call` line that runs it on the same config.
 */
import { Catalog } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Failure } from "./CliError.ts"
import * as Describe from "./Describe.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"
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

export const describe = Effect.fn("toolvisor.describe")(function* (
  options: Omit<Options, "config"> & { readonly operands: ReadonlyArray<string> }
) {
  const { config, rest } = yield* Operands.split({ command: "describe", names: ["TOOL"] }, options.operands)
  const tool = rest[0] ?? ""
  const catalog = yield* settledCatalog({ ...options, config })
  const entry = catalog.tools.find((t) => t.name === tool)
  if (entry === undefined) {
    const near = Catalog.nearNames(
      tool,
      catalog.tools.map((t) => t.name)
    )
    const missing = catalog.missing.map((m) => `${m.toolset} (${m.state})`)
    return yield* new Failure({
      message: [
        `no tool named "${tool}"`,
        near.length > 0 ? `; did you mean ${near.join(", ")}?` : "",
        missing.length > 0 ? `; not ready: ${missing.join(", ")}` : ""
      ].join("")
    })
  }
  yield* Console.log(
    options.json ? Printable.json(Output.toolJson(entry)) : Describe.text(entry, Option.getOrUndefined(config))
  )
})
