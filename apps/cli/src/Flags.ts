/**
 * The arguments and flags several commands share, so every command spells `--timeout` or
 * `--cluster` the same way. Only effect/cli here: this module loads for `--help` too.
 */
import { Argument, Flag } from "effect/cli"

export const config = Argument.String("config").pipe(
  Argument.withDescription(
    "Agent config: docker-agent YAML or an MCP host's JSON (default ./agent.yaml; in a checkout, the bundled example); always the first operand"
  ),
  Argument.optional
)

/**
 * A command's operands when CONFIG comes before others (`[CONFIG] TOOL`): effect/cli cannot put
 * an optional argument before a required one, so `Operands` splits them.
 */
export const operands = (description: string, max: number, min = 1) =>
  Argument.String("operands").pipe(Argument.withDescription(description), Argument.variadic({ min, max }))

export const input = Flag.String("input").pipe(
  // biome-ignore lint/suspicious/noTemplateCurlyInString: ${input:id} is the VS Code syntax being documented
  Flag.withDescription("A value for VS Code's ${input:id}: --input id=value (repeatable)"),
  Flag.atLeast(0)
)

export const agent = Flag.String("agent").pipe(Flag.withDescription("The agent whose toolsets to use"), Flag.optional)

export const json = Flag.Boolean("json").pipe(Flag.withDescription("Machine-readable output"), Flag.withDefault(false))

export const timeout = Flag.String("timeout").pipe(
  Flag.withDescription("How long to wait for the toolsets to settle, e.g. 30s"),
  Flag.withDefault("30s")
)

export const cluster = Flag.String("cluster").pipe(
  Flag.withDescription(
    "PostgreSQL URL of a Toolvisor cluster: run the toolsets on its runners instead of in this process"
  ),
  Flag.optional
)

export const host = Flag.String("host").pipe(
  Flag.withDescription("Address to bind with --http"),
  Flag.withDefault("127.0.0.1")
)

export const httpTokenFile = Flag.String("http-token-file").pipe(
  Flag.withDescription(
    "File holding the bearer token every HTTP route but the health probes then requires (needed off loopback, unless --jwt-issuer); default $TOOLVISOR_HTTP_TOKEN"
  ),
  Flag.optional
)

export const jwtIssuer = Flag.String("jwt-issuer").pipe(
  Flag.withDescription(
    "Also accept JWT access tokens from this OAuth authorization server (issuer URL; its keys are found through its metadata)"
  ),
  Flag.optional
)

export const jwtAudience = Flag.String("jwt-audience").pipe(
  Flag.withDescription(
    "The aud a JWT must carry: the URL clients reach this server at, e.g. https://tools.example/mcp (with --jwt-issuer)"
  ),
  Flag.optional
)

export const jwksUrl = Flag.String("jwks-url").pipe(
  Flag.withDescription("Where the issuer's signing keys are, when its metadata does not say (with --jwt-issuer)"),
  Flag.optional
)

/** What both commands take for their HTTP port, besides the port itself. */
export const httpAccess = { host, httpTokenFile, jwtIssuer, jwtAudience, jwksUrl }

export const otlp = Flag.String("otlp").pipe(
  Flag.withDescription("Export traces, metrics and logs over OTLP/HTTP to this collector, e.g. http://127.0.0.1:4318"),
  Flag.optional
)
