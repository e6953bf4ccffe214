/**
 * The CLI's HTTP port, for `run --http` and `serve --http` alike: the port checked before
 * anything starts, the socket bound with one clear line when that fails (the same line and exit
 * code from both commands), the security headers on every response whatever route answers it,
 * and every connection closed with the scope, streams included.
 */
import * as NodeHttp from "node:http"
import { HttpGate } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { UsageError } from "./CliError.ts"

export type Handler = (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) => void

export interface Address {
  readonly port: number
  readonly host: string
}

/** The port could not be bound: taken, privileged, or the address is not this machine's. */
export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** `--http PORT` as a usage error when no socket can have it, before anything starts. */
export const checkPort = (port: number): Effect.Effect<number, UsageError> =>
  Number.isInteger(port) && port >= 0 && port <= 65535
    ? Effect.succeed(port)
    : Effect.fail(new UsageError({ message: `--http: a port is 0 to 65535, got ${port}` }))

/** Why binding failed, in the user's terms rather than libuv's. */
const why = (cause: Error): string => {
  const code = "code" in cause ? cause.code : undefined
  if (code === "EADDRINUSE") return "the port is already in use (another server, or another toolvisor?)"
  if (code === "EACCES") return "permission denied (ports below 1024 need privileges)"
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") return "no such address on this machine"
  return cause.message
}

/**
 * How long a request may take to arrive: its headers, then all of it. A client that trickles its
 * request in holds a socket no longer than this (Node's defaults are 60 s and 300 s); no MCP
 * request (at most 4 MiB) or status request needs more. Streams that answer for long are responses.
 * Node checks them every `connectionsCheckingInterval` (30 s by default, which made 30 s into 60).
 */
const headersTimeout = 10_000
const requestTimeout = 30_000

/** `host:port` as a URL writes it: an IPv6 address in brackets. */
export const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`

/**
 * Binds `handler` to the address (port 0 binds a free one) and returns the bound address. Closing
 * the scope stops accepting, runs `beforeClose` (the gateway closes its sessions there), then
 * closes every connection, since event streams and idle keep-alives never end by themselves.
 */
export const listen = (
  address: Address,
  handler: Handler,
  beforeClose: Effect.Effect<void> = Effect.void
): Effect.Effect<Address, ListenError, Scope.Scope> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const secured: Handler = (req, res) => {
      for (const [name, value] of Object.entries(HttpGate.securityHeaders)) res.setHeader(name, value)
      handler(req, res)
    }
    const server = yield* Effect.acquireRelease(
      Effect.callback<NodeHttp.Server, ListenError>((resume) => {
        const server = NodeHttp.createServer(
          { headersTimeout, requestTimeout, connectionsCheckingInterval: headersTimeout / 2 },
          secured
        )
        const onError = (cause: Error) =>
          resume(
            Effect.fail(
              new ListenError({
                message: `cannot listen on ${hostPort(address.host, address.port)}: ${why(cause)}`,
                cause
              })
            )
          )
        server.once("error", onError)
        try {
          server.listen(address.port, address.host, () => {
            server.off("error", onError)
            resume(Effect.succeed(server))
          })
        } catch (cause) {
          // An impossible port throws at once rather than emitting "error".
          onError(cause instanceof Error ? cause : new Error(String(cause)))
        }
      }),
      (server) =>
        Effect.gen(function* () {
          const closed = yield* Deferred.make<void>()
          server.close(() => Deferred.doneUnsafe(closed, Effect.void))
          yield* beforeClose
          server.closeAllConnections()
          yield* Deferred.await(closed)
        })
    )
    server.on("error", (cause) => {
      Effect.runForkWith(context)(Effect.logWarning("the HTTP server reported an error", cause))
    })
    const bound = server.address()
    return { host: address.host, port: typeof bound === "object" && bound !== null ? bound.port : address.port }
  })
