/**
 * `toolvisor call [CONFIG] TOOL [ARGS_JSON]`: call one tool and print its result. Exit 1 when
 * the call fails or the tool reports an error; with `--json` a failure is still JSON on stdout
 * (`{"error":{"tag","message"}}`), so a script can branch on its tag. While the tool runs, the
 * servers' log lines go to stderr, and on a terminal a progress bar (`CallProgress`).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as CallProgress from "./CallProgress.ts"
import { Failure, UsageError } from "./CliError.ts"
import * as DurationFlag from "./DurationFlag.ts"
import * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"
import * as Output from "./Output.ts"
import * as Printable from "./Printable.ts"
import * as Settle from "./Settle.ts"

export interface Options extends Omit<Open.Target, "config"> {
  readonly operands: ReadonlyArray<string>
  readonly json: boolean
  readonly timeout: string
}

const parseArgs = (raw: string | undefined) =>
  Effect.try({
    try: (): { readonly [key: string]: unknown } => {
      const parsed: unknown = raw === undefined ? {} : JSON.parse(raw)
      if (!Predicate.isObject(parsed)) throw new Error("not an object")
      return parsed
    },
    catch: () => new UsageError({ message: `call: ARGS_JSON must be a JSON object, got ${raw}` })
  })

export const run = Effect.fn("toolvisor.call")(function* (options: Options) {
  const { config, rest } = yield* Operands.split({ command: "call", names: ["TOOL", "[ARGS_JSON]"] }, options.operands)
  const [tool = "", rawArgs] = rest
  const args = yield* parseArgs(rawArgs)
  const timeout = yield* DurationFlag.parse(options.timeout)
  const { registry } = yield* Open.open({ ...options, config })
  yield* Settle.settle(registry, timeout)
  const shown = yield* CallProgress.show(registry, tool)
  const result = yield* registry.callTool(tool, args, undefined, shown.options).pipe(
    Effect.ensuring(shown.done),
    Effect.tapError((error) => (options.json ? Console.log(Output.failureJson(error, { tool })) : Effect.void)),
    // A bug's failure too: a script reading stdout gets its line, whatever ended the call.
    Effect.tapDefect((defect) =>
      options.json
        ? Console.log(
            Output.failureJson(
              { _tag: "Defect", message: defect instanceof Error ? defect.message : String(defect) },
              { tool }
            )
          )
        : Effect.void
    )
  )
  yield* Console.log(options.json ? Printable.json(result) : Output.resultText(result))
  if (result.isError === true) return yield* new Failure({ message: `${tool} reported an error` })
})
