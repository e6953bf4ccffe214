/**
 * `toolvisor run`: start the agent's toolsets and keep them supervised until Ctrl-C, SIGTERM or
 * (with `--json`, when stdin carries commands) the end of stdin; on `/dev/null`, as under
 * systemd, it runs as a service. On a terminal it is the live view; with `--json` the line
 * protocol; piped without `--json`, one line per transition. `--http PORT` serves the status
 * routes and the dashboard besides.
 */
import * as NodePath from "node:path"
import { Runtime } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Exporting from "./Exporting.ts"
import * as HttpListen from "./HttpListen.ts"
import * as JsonLines from "./JsonLines.ts"
import * as LiveView from "./LiveView.ts"
import * as Open from "./Open.ts"
import * as Output from "./Output.ts"
import * as StatusServer from "./StatusServer.ts"

export interface Options extends Open.Target, StatusServer.Flags {
  readonly json: boolean
  readonly watch: boolean
  readonly otlp: Option.Option<string>
}

export const run = (options: Options) => Exporting.withOtlp(options.otlp)(command(options))

const command = Effect.fn("toolvisor.run")(function* (options: Options) {
  if (!options.json && process.stdout.isTTY && process.stdin.isTTY) {
    return yield* LiveView.run(
      Effect.tap(opened(options), ({ registry }) => Effect.forkScoped(Effect.ignore(registry.start)))
    )
  }
  const { registry, path } = yield* opened(options)
  if (options.json) return yield* JsonLines.run(registry)
  yield* registry.events.pipe(
    Stream.runForEach((e) => Console.log(Output.transitionLine(e, path))),
    Effect.forkScoped({ startImmediately: true })
  )
  const started = yield* Effect.result(registry.start)
  if (started._tag === "Failure") yield* Effect.logError(started.failure.message)
  return yield* Effect.never
})

/** The registry, reloaded from its file on change with `--watch`, its status served with `--http`. */
const opened = (options: Options) =>
  Effect.gen(function* () {
    const http = Option.isSome(options.http)
      ? { port: yield* HttpListen.checkPort(options.http.value), gate: yield* StatusServer.gate(options, "/") }
      : undefined
    const result = yield* Open.open(options)
    if (http !== undefined) {
      const address = yield* StatusServer.listen(result.registry, { port: http.port, host: options.host }, http.gate, {
        required: StatusServer.required(result.config),
        config: NodePath.basename(result.path),
        ...Open.agentOptions(options.agent)
      })
      yield* Effect.logInfo(`status at http://${HttpListen.hostPort(address.host, address.port)}/`)
    }
    if (options.watch) {
      yield* Runtime.watch(result.path, result.reload, result.registry)
    }
    return result
  })
