/**
 * The arguments and flags several commands share, so every command spells `--timeout` or
 * `--cluster` the same way. Only effect/cli here: this module loads for `--help` too.
 */
import { Argument, Flag } from "effect/cli"

export const config = Argument.String("config").pipe(
  Argument.withDescription(
    "Agent config: docker-agent YAML or mcpServers JSON (default ./agent.yaml; in a checkout, the bundled example)"
  ),
  Argument.optional
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
    "File holding the bearer token the HTTP control routes (and, off loopback, every route) require; default $TOOLVISOR_HTTP_TOKEN"
  ),
  Flag.optional
)

export const otlp = Flag.String("otlp").pipe(
  Flag.withDescription("Export traces, metrics and logs over OTLP/HTTP to this collector, e.g. http://127.0.0.1:4318"),
  Flag.optional
)
