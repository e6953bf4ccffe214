/**
 * `toolvisor stop [CONFIG] [TOOLSET…] --cluster URL`: stops toolsets a cluster runs, for every
 * client — the config's, or the ones named. A cluster's toolsets outlive the clients that started
 * them, by design; this is how they end: a definition whose secret was rotated, a throwaway
 * config's. Each stop answers the toolset's persisted start request, so no runner starts it again.
 * Without `--cluster` there is nothing to stop: a command's own toolsets end with it.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"

export interface Options extends Omit<Open.Target, "config"> {
  readonly operands: ReadonlyArray<string>
}

const shape: Operands.Shape = { command: "stop", names: ["[TOOLSET…]"] }

export const run = Effect.fn("toolvisor.stop")(function* (options: Options) {
  if (Option.isNone(options.cluster)) {
    return yield* new UsageError({
      message: "stop: stops toolsets a cluster runs, so it needs --cluster URL; a command's own toolsets end with it"
    })
  }
  const { config, rest } = yield* Operands.split(shape, options.operands)
  const { registry } = yield* Open.open({ ...options, config })
  const known = (yield* registry.snapshot).map((s) => s.name)
  const unknown = rest.filter((name) => !known.includes(name))
  if (unknown.length > 0) {
    return yield* new UsageError({
      message: `stop: no toolset named ${unknown.map((n) => `"${n}"`).join(", ")} (toolsets: ${known.join(", ")})`
    })
  }
  const names = rest.length > 0 ? rest : known
  yield* Effect.forEach(names, (name) => Effect.orDie(registry.stopToolset(name)), { concurrency: "unbounded" })
  yield* Console.log(`stopped: ${names.join(", ")}`)
})
