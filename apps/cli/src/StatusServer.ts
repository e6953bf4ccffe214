/**
 * `--http PORT` for the status routes: the runtime's `StatusHttp` layer turned into a Node
 * request handler, mounted beside `/mcp` by `serve` or served alone by `run`. The bearer token
 * comes from the environment or a file, never from the command line where `ps` would show it.
 */
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { AgentConfig } from "@toolvisor/config"
import { StatusHttp, ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { UsageError } from "./CliError.ts"

/** The environment variable that holds the bearer token. */
export const tokenVariable = "TOOLVISOR_HTTP_TOKEN"

export type Handler = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) => void

export interface Address {
  readonly port: number
  readonly host: string
}

/**
 * The token from `--http-token-file` or the environment; a non-loopback bind without one is a
 * usage error, since anyone on the network could then read and drive the toolsets.
 */
export const token = (host: string, file: Option.Option<string>): Effect.Effect<string | undefined, UsageError> =>
  Effect.gen(function* () {
    const read = Option.isSome(file)
      ? yield* Effect.try({
          try: () => NodeFs.readFileSync(file.value, "utf8").trim(),
          catch: (cause) =>
            new UsageError({ message: `--http-token-file: cannot read ${file.value}: ${String(cause)}` })
        })
      : process.env[tokenVariable]?.trim()
    const given = read === undefined || read === "" ? undefined : read
    if (given === undefined && !StatusHttp.isLoopback(host)) {
      return yield* new UsageError({
        message: `--host ${host} is not loopback: set ${tokenVariable} or pass --http-token-file, so only holders of the token reach the toolsets`
      })
    }
    return given
  })

/** Whether each toolset must be Ready for `/readyz`: the config's `required`. */
export const required =
  (config: AgentConfig.Config) =>
  (name: string): boolean =>
    config.toolsets.find((t) => t.name === name)?.policy.required ?? true

/** The status routes as a Node handler, living as long as the current scope. */
export const handler = (
  registry: ToolsetRegistry.Registry,
  options: StatusHttp.Options
): Effect.Effect<Handler, never, Scope.Scope> =>
  Effect.gen(function* () {
    const app = yield* HttpRouter.toHttpEffect(StatusHttp.layer(options)).pipe(
      Effect.provideService(ToolsetRegistry.ToolsetRegistry, registry)
    )
    const scope = yield* Effect.scope
    return yield* NodeHttpServer.makeHandler(app, { scope })
  })

/** Serves the status routes alone (for `run --http`); closing the scope closes the socket and its streams. */
export const listen = (
  registry: ToolsetRegistry.Registry,
  address: Address,
  options: StatusHttp.Options
): Effect.Effect<Address, UsageError, Scope.Scope> =>
  Effect.gen(function* () {
    const handle = yield* handler(registry, options)
    const server = yield* Effect.acquireRelease(
      Effect.callback<NodeHttp.Server, UsageError>((resume) => {
        const server = NodeHttp.createServer(handle)
        server.once("error", (cause) =>
          resume(
            Effect.fail(
              new UsageError({ message: `cannot listen on ${address.host}:${address.port}: ${cause.message}` })
            )
          )
        )
        server.listen(address.port, address.host, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.gen(function* () {
          const closed = yield* Deferred.make<void>()
          server.close(() => Deferred.doneUnsafe(closed, Effect.void))
          // Event streams never end by themselves.
          server.closeAllConnections()
          yield* Deferred.await(closed)
        })
    )
    const bound = server.address()
    return { host: address.host, port: typeof bound === "object" && bound !== null ? bound.port : address.port }
  })
