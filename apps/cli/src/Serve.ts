/**
 * `toolvisor serve`: every tool of the agent's toolsets as one MCP server, over stdio or, with
 * `--http PORT`, streamable HTTP. The port is checked and bound before any toolset starts, so a
 * taken or impossible port is one line at once, not a failure after every server has started.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as Gateway from "./Gateway.ts"
import * as Open from "./Open.ts"

export interface Options extends Open.Target {
  readonly http: Option.Option<number>
  readonly host: string
}

export const run = Effect.fn("toolvisor.serve")(function* (options: Options) {
  if (Option.isSome(options.http)) {
    const port = options.http.value
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new UsageError({ message: `--http: a port is 0 to 65535, got ${port}` })
    }
  }
  const { registry } = yield* Open.open(options)
  const http = Option.map(options.http, (port) => ({ port, host: options.host }))
  return yield* Gateway.serve(registry, {
    ...Open.agentOptions(options.agent),
    ...Option.match(http, { onNone: () => ({}), onSome: (address) => ({ http: address }) })
  })
})
