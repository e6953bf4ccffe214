/**
 * `toolvisor serve`: every tool of the agent's toolsets as one MCP server, over stdio or, with
 * `--http PORT`, streamable HTTP. The port is checked and bound before any toolset starts, so a
 * taken or impossible port is one line at once, not a failure after every server has started.
 * Over HTTP the status routes (dashboard, /status, /events, /metrics, probes) share the port.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as Exporting from "./Exporting.ts"
import * as Gateway from "./Gateway.ts"
import * as Open from "./Open.ts"
import * as StatusServer from "./StatusServer.ts"

export interface Options extends Open.Target {
  readonly http: Option.Option<number>
  readonly host: string
  readonly httpTokenFile: Option.Option<string>
  readonly otlp: Option.Option<string>
}

export const run = (options: Options) => Exporting.withOtlp(options.otlp)(command(options))

const command = Effect.fn("toolvisor.serve")(function* (options: Options) {
  if (Option.isSome(options.http)) {
    const port = options.http.value
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new UsageError({ message: `--http: a port is 0 to 65535, got ${port}` })
    }
  }
  const { registry, config } = yield* Open.open(options)
  if (Option.isNone(options.http)) return yield* Gateway.serve(registry, Open.agentOptions(options.agent))
  const token = yield* StatusServer.token(options.host, options.httpTokenFile)
  const routes = yield* StatusServer.handler(registry, {
    host: options.host,
    required: StatusServer.required(config),
    ...Open.agentOptions(options.agent),
    ...(token === undefined ? {} : { token })
  })
  return yield* Gateway.serve(registry, {
    ...Open.agentOptions(options.agent),
    http: { port: options.http.value, host: options.host, routes }
  })
})
