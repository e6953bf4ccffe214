/**
 * How to reach an MCP server: a local command over stdio, or a URL over streamable HTTP or SSE.
 * A Schema, so config files decode into it with errors that name the field; remote URLs must be
 * absolute http(s) URLs.
 */
import * as HttpUrl from "@toolvisor/core/internal/httpUrl"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as HeadersHelper from "./internal/headersHelper.ts"

const Env = Schema.Record(Schema.String, Schema.String)

/** A server run as a child process, spoken to over its stdin and stdout. */
export class Stdio extends Schema.TaggedClass<Stdio>()("stdio", {
  command: Schema.NonEmptyString,
  args: Schema.Array(Schema.String).pipe(
    Schema.withDecodingDefault(Effect.succeed([])),
    Schema.withConstructorDefault(Effect.succeed([]))
  ),
  env: Schema.optionalKey(Env),
  cwd: Schema.optionalKey(Schema.String),
  /** A dotenv file read each time the server starts; `env` wins over it, and its values are secrets. */
  envFile: Schema.optionalKey(Schema.String)
}) {}

/** An absolute http:// or https:// URL, without credentials (`HttpUrl.serverProblem`). */
export const Url = Schema.String.pipe(Schema.check(Schema.makeFilter(HttpUrl.serverProblem)))

/**
 * OAuth for a remote server, as docker-agent spells it. Without a client id the client registers
 * itself (RFC 7591) where the server offers it; a secret without a callback port means the
 * client-credentials grant, for jobs with no person present.
 */
export class OAuth extends Schema.Class<OAuth>("OAuth")({
  clientId: Schema.optionalKey(Schema.NonEmptyString),
  clientSecret: Schema.optionalKey(Schema.String),
  callbackPort: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 }))),
  /** The redirect URI to register, when it is not `http://127.0.0.1:<port>/callback`. */
  callbackRedirectURL: Schema.optionalKey(Schema.String),
  scopes: Schema.optionalKey(Schema.Array(Schema.String))
}) {}

const remote = {
  url: Url,
  /** Sent with every request (e.g. `Authorization`); never shown in errors, logs or status. */
  headers: Schema.optionalKey(Env),
  oauth: Schema.optionalKey(OAuth),
  /** A command run at each connect whose JSON output adds headers (secrets, winning over `headers`). */
  headersHelper: Schema.optionalKey(HeadersHelper.Spec)
}

/** A remote server over streamable HTTP. */
export class Http extends Schema.TaggedClass<Http>()("http", remote) {}

/** A remote server over the older HTTP+SSE transport. */
export class Sse extends Schema.TaggedClass<Sse>()("sse", remote) {}

/** How to reach one MCP server: by process, streamable HTTP or SSE. */
export const McpSpec = Schema.Union([Stdio, Http, Sse])

export type McpSpec = typeof McpSpec.Type

/** The status kind of a spec: `mcp-stdio`, `mcp-http` or `mcp-sse`. */
export const kind = (spec: McpSpec): string => `mcp-${spec._tag}`

/** Remote sessions: servers close idle streams, and a dead peer is not always reported. */
export const isRemote = (spec: McpSpec): spec is Http | Sse => spec._tag !== "stdio"

/** A description safe to log: the command or the URL's origin and path, never headers or query. */
export const describe = (spec: McpSpec): string => {
  if (spec._tag === "stdio") return `${spec.command} ${spec.args.join(" ")}`.trim()
  const url = new URL(spec.url)
  return `${url.origin}${url.pathname}`
}
