/**
 * `toolvisor tools` lists the agent's catalog (with `--json`, each tool's input schema and
 * annotations, as an MCP client would see them); `toolvisor describe [CONFIG] TOOL` shows one
 * tool's (or a prompt's) description and arguments readably, and the line that runs it on the same config.
 */
import { Catalog } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Failure } from "./CliError.ts"
import * as Describe from "./Describe.ts"
import type * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Prompts from "./Prompts.ts"
import * as Settle from "./Settle.ts"

export interface Options extends Open.Target {
  readonly json: boolean
  readonly timeout: string
}

export const list = Effect.fn("toolvisor.tools")(function* (options: Options) {
  const registry = yield* Settle.opened(options, options.timeout)
  const catalog = yield* registry.catalog()
  yield* Console.log(
    options.json
      ? Printable.json(Output.catalogJson(catalog))
      : Output.catalogText(catalog, process.stdout.columns || 120)
  )
})

/**
 * One tool, or — when no tool has the name — one prompt: `describe` covers both, tools first
 * (a prompt named like a tool is still listed by `prompts` and got by `prompt`).
 */
export const describe = Effect.fn("toolvisor.describe")(function* (
  options: Omit<Options, "config"> & { readonly operands: ReadonlyArray<string> }
) {
  const { config, rest } = yield* Operands.split({ command: "describe", names: ["NAME"] }, options.operands)
  const name = rest[0] ?? ""
  const registry = yield* Settle.opened({ ...options, config }, options.timeout)
  const catalog = yield* registry.catalog()
  const path = Option.getOrUndefined(config)
  const entry = catalog.tools.find((t) => t.name === name)
  if (entry !== undefined) {
    return yield* Console.log(options.json ? Printable.json(Output.toolJson(entry)) : Describe.text(entry, path))
  }
  const prompts = yield* registry.prompts()
  const prompt = prompts.prompts.find((p) => p.name === name)
  if (prompt !== undefined) {
    return yield* Console.log(
      options.json ? Printable.json(Prompts.promptJson(prompt)) : Prompts.describeText(prompt, path)
    )
  }
  const near = Catalog.nearNames(name, [...catalog.tools.map((t) => t.name), ...prompts.prompts.map((p) => p.name)])
  const missing = catalog.missing.map((m) => `${m.toolset} (${m.state})`)
  return yield* new Failure({
    message: [
      `no tool or prompt named "${name}"`,
      near.length > 0 ? `; did you mean ${near.join(", ")}?` : "",
      missing.length > 0 ? `; not ready: ${missing.join(", ")}` : ""
    ].join("")
  })
})
