/**
 * `toolvisor status`: start, wait until every toolset settles (at most `--timeout`), print the
 * table, stop. The exit code is the verdict of `Settle`: 1 when a required toolset is down or
 * nothing is up, 0 otherwise, with optional failures named in a summary line.
 */
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

export const run = Effect.fn("toolvisor.status")(function* (options: Options) {
  const timeout = yield* DurationFlag.parse(options.timeout)
  const { config, registry } = yield* Open.open(options)
  const board = yield* Settle.settle(registry, timeout)
  const { ok, summary } = Settle.verdict(config, board)
  if (options.json) {
    yield* Console.log(Printable.json(board.map((s) => Output.statusJson(s))))
  } else {
    const width = process.stdout.columns || 120
    yield* Console.log(Output.table(board, { colour: false, width }))
    for (const line of Output.problems(board)) yield* Console.log(line)
    if (ok && summary !== undefined) yield* Console.log(Printable.line(summary))
  }
  if (!ok) return yield* new Failure({ message: summary ?? "no toolset is Ready" })
  if (options.json && summary !== undefined) yield* Effect.logWarning(summary)
})
