/**
 * `--http PORT` for `run` and `serve`: the flags that say who may use the port turned into the
 * one `HttpGate` every route shares, and the runtime's status routes (with the gate's metadata
 * routes) as a Node request handler, mounted beside `/mcp` by `serve` or served alone by `run`.
 * A static token comes from a file or the environment, never from the command line where `ps`
 * would show it; JWTs are checked against an authorization server's keys.
 */

import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { AgentConfig } from "@toolvisor/config"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as HttpUrl from "@toolvisor/core/internal/httpUrl"
import { HttpGate, StatusHttp, ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Failure, UsageError } from "./CliError.ts"
import * as HttpListen from "./HttpListen.ts"

/** The environment variable that holds the bearer token. */
export const tokenVariable = "TOOLVISOR_HTTP_TOKEN"

/** The flags both commands take for their HTTP port. */
export interface Flags {
  readonly http: Option.Option<number>
  readonly host: string
  readonly httpTokenFile: Option.Option<string>
  readonly jwtIssuer: Option.Option<string>
  readonly jwtAudience: Option.Option<string>
  readonly jwksUrl: Option.Option<string>
}

/** A token file is one line; `<(pass show …)` is a pipe, which must end soon. */
const tokenFile = { maxBytes: 64 * 1024, pipeMillis: 30_000 }

/** The static token from `--http-token-file` or the environment; undefined when neither has one. */
const staticToken = (file: Option.Option<string>): Effect.Effect<string | undefined, UsageError> =>
  Effect.gen(function* () {
    const read = Option.isSome(file)
      ? yield* Effect.tryPromise({
          try: () => BoundedFile.readText(file.value, tokenFile),
          catch: (cause) =>
            new UsageError({
              message: `--http-token-file: cannot read ${file.value}: ${cause instanceof Error ? cause.message : String(cause)}`
            })
        }).pipe(
          Effect.flatMap((text) =>
            text === undefined
              ? Effect.fail(
                  new UsageError({ message: `--http-token-file: ${file.value} is larger than a token file's 64 KiB` })
                )
              : Effect.succeed(text.trim())
          )
        )
      : process.env[tokenVariable]?.trim()
    return read === undefined || read === "" ? undefined : read
  })

/** `--jwt-issuer` with its audience (and optional JWKS address), or none; half of it is a usage error. */
const jwt = (flags: Flags): Effect.Effect<HttpGate.Options["jwt"], UsageError> => {
  const { jwtIssuer, jwtAudience, jwksUrl } = flags
  if (Option.isNone(jwtIssuer)) {
    return Option.isSome(jwtAudience) || Option.isSome(jwksUrl)
      ? Effect.fail(new UsageError({ message: "--jwt-audience and --jwks-url need --jwt-issuer" }))
      : Effect.succeed(undefined)
  }
  if (Option.isNone(jwtAudience)) {
    return Effect.fail(
      new UsageError({
        message:
          "--jwt-issuer needs --jwt-audience: the URL clients reach this server at, e.g. https://tools.example/mcp"
      })
    )
  }
  const notUrl = (
    [
      ["--jwt-issuer", jwtIssuer.value],
      ["--jwks-url", Option.getOrUndefined(jwksUrl)]
    ] as const
  ).find(([, value]) => value !== undefined && !HttpUrl.is(value))
  if (notUrl !== undefined) {
    return Effect.fail(new UsageError({ message: `${notUrl[0]}: expected an http(s) URL, got ${notUrl[1]}` }))
  }
  return Effect.succeed({
    issuer: jwtIssuer.value,
    audience: jwtAudience.value,
    ...(Option.isSome(jwksUrl) ? { jwksUrl: jwksUrl.value } : {})
  })
}

/**
 * The gate for the port: a token or JWTs are optional on loopback and required off it, since
 * anyone on the network could otherwise read and drive the toolsets. With JWTs the issuer's keys
 * are found now, so a wrong issuer is one line at start rather than a 401 for every client.
 */
export const gate = (flags: Flags, resourcePath: `/${string}`): Effect.Effect<HttpGate.Gate, UsageError | Failure> =>
  Effect.gen(function* () {
    const token = yield* staticToken(flags.httpTokenFile)
    const tokens = yield* jwt(flags)
    if (token === undefined && tokens === undefined && !HttpGate.isLoopback(flags.host)) {
      return yield* new UsageError({
        message: `--host ${flags.host} is not loopback: set ${tokenVariable}, pass --http-token-file or --jwt-issuer, so only holders of a credential reach the toolsets`
      })
    }
    return yield* HttpGate.make({
      host: flags.host,
      resourcePath,
      ...(token === undefined ? {} : { token }),
      ...(tokens === undefined ? {} : { jwt: tokens })
    }).pipe(Effect.mapError((error) => new Failure({ message: `--jwt-issuer: ${error.message}` })))
  })

/** Whether each toolset must be Ready for `/readyz`: the config's `required`. */
export const required =
  (config: AgentConfig.Config) =>
  (name: string): boolean =>
    config.toolsets.find((t) => t.name === name)?.policy.required ?? true

/** The status routes and the gate's metadata as a Node handler, living as long as the current scope. */
export const handler = (
  registry: ToolsetRegistry.Registry,
  gate: HttpGate.Gate,
  options: StatusHttp.Options
): Effect.Effect<HttpListen.Handler, never, Scope.Scope> =>
  Effect.gen(function* () {
    const routed = yield* HttpRouter.toHttpEffect(Layer.merge(StatusHttp.layer(options), HttpGate.routes)).pipe(
      Effect.provideService(ToolsetRegistry.ToolsetRegistry, registry),
      Effect.provideService(HttpGate.HttpGate, gate)
    )
    const app = Effect.catchIf(
      routed,
      (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound",
      () => Effect.map(HttpServerRequest.HttpServerRequest, StatusHttp.notFound)
    )
    const scope = yield* Effect.scope
    return yield* NodeHttpServer.makeHandler(app, { scope })
  })

/**
 * Serves the status routes alone (for `run --http`); closing the scope closes the socket and its
 * streams. A port that cannot be bound fails as `serve` does: the same line, exit 1.
 */
export const listen = (
  registry: ToolsetRegistry.Registry,
  address: HttpListen.Address,
  gate: HttpGate.Gate,
  options: StatusHttp.Options
): Effect.Effect<HttpListen.Address, Failure, Scope.Scope> =>
  Effect.gen(function* () {
    const handle = yield* handler(registry, gate, options)
    return yield* HttpListen.listen(address, handle).pipe(
      Effect.mapError((error) => new Failure({ message: error.message }))
    )
  })
