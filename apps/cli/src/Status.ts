/**
 * `toolvisor status`: start, wait until every toolset settles (at most `--timeout`), print the
 * table, stop. The exit code is the verdict of `Settle`: 1 when a required toolset is down or
 * nothing is up, 0 otherwise, with optional failures named in a summary line. Tools a toolset
 * lists but the agent never sees, because an earlier toolset offers the same names, are named
 * too: the table counts them, the agent cannot call them.
 */
import { Catalog, type ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Failure } from "./CliError.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Open from "./Open.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Settle from "./Settle.ts"

export interface Options extends Open.Target {
  readonly json: boolean
  readonly timeout: string
}

/** One line per group of tools hidden behind another toolset's, per agent (named when there are several). */
const collisionLines = (registry: ToolsetRegistry.Registry) =>
  Effect.gen(function* () {
    const agents = yield* registry.agents
    const lines: Array<string> = []
    for (const agent of agents) {
      const catalog = yield* Effect.orElseSucceed(registry.catalog(agent), () => ({ shadowed: [] }))
      const named = agents.length > 1 ? `agent ${agent}: ` : ""
      for (const collision of Catalog.collisions(catalog)) lines.push(`${named}${Catalog.collisionMessage(collision)}`)
    }
    return lines
  })

export const run = Effect.fn("toolvisor.status")(function* (options: Options) {
  const timeout = yield* DurationFlag.parse(options.timeout)
  const { config, registry, path } = yield* Open.open(options)
  const board = yield* Settle.settle(registry, timeout)
  const { ok, summary } = Settle.verdict(config, board)
  const collisions = yield* collisionLines(registry)
  if (options.json) {
    yield* Console.log(Printable.json(board.map((s) => Output.statusJson(s, path))))
    for (const line of collisions) yield* Effect.logWarning(line)
  } else {
    const width = process.stdout.columns || 120
    yield* Console.log(Output.table(board, { colour: false, width, config: path }))
    for (const line of Output.problems(board, path)) yield* Console.log(line)
    for (const line of collisions) yield* Console.log(Printable.line(`warning ${line}`))
    if (ok && summary !== undefined) yield* Console.log(Printable.line(summary))
  }
  if (!ok) return yield* new Failure({ message: summary ?? "no toolset is Ready" })
  if (options.json && summary !== undefined) yield* Effect.logWarning(summary)
})
