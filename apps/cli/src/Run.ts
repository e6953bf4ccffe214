/**
 * `toolvisor run`: start the agent's toolsets and keep them supervised until Ctrl-C, SIGTERM or
 * (with `--json`) the end of stdin. On a terminal it is the live view; with `--json` the line
 * protocol; piped without `--json`, one line per transition.
 */
import { ConfigLoader } from "@toolvisor/config"
import { Runtime } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as JsonLines from "./JsonLines.ts"
import * as LiveView from "./LiveView.ts"
import * as Open from "./Open.ts"
import * as Output from "./Output.ts"

export interface Options extends Open.Target {
  readonly json: boolean
  readonly watch: boolean
}

export const run = Effect.fn("toolvisor.run")(function* (options: Options) {
  if (!options.json && process.stdout.isTTY && process.stdin.isTTY) {
    return yield* LiveView.run(
      Effect.tap(opened(options), ({ registry }) => Effect.forkScoped(Effect.ignore(registry.start)))
    )
  }
  const { registry } = yield* opened(options)
  if (options.json) return yield* JsonLines.run(registry)
  yield* registry.events.pipe(
    Stream.runForEach((e) => Console.log(Output.transitionLine(e))),
    Effect.forkScoped({ startImmediately: true })
  )
  const started = yield* Effect.result(registry.start)
  if (started._tag === "Failure") yield* Effect.logError(started.failure.message)
  return yield* Effect.never
})

/** The registry, reloaded from its file on change with `--watch`. */
const opened = (options: Options) =>
  Effect.gen(function* () {
    const result = yield* Open.open(options)
    if (options.watch) {
      yield* Runtime.watch(
        result.path,
        ConfigLoader.load(result.path, Open.agentOptions(options.agent)),
        result.registry
      )
    }
    return result
  })
