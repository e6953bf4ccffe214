/**
 * A runner: one process of the cluster that hosts toolset entities. It joins through the shared
 * PostgreSQL database, listens on a TCP socket for the other members, and before it takes any
 * toolset (and again after it let them all go) kills whatever a previous life at the same
 * address left running.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as CallLedger from "./CallLedger.ts"
import * as ClusterClient from "./ClusterClient.ts"
import * as Orphans from "./Orphans.ts"
import * as Timers from "./Timers.ts"
import * as ToolsetHost from "./ToolsetHost.ts"

export interface Options extends ToolsetHost.Options {
  readonly postgres: string
  /** The address other members reach this runner at; also its identity. */
  readonly host: string
  readonly port: number
  /** The address to bind, when it differs from `host` (e.g. 0.0.0.0 in a container). */
  readonly listenHost?: string
  readonly timers?: Partial<Timers.Timers>
}

export const layer = (options: Options) => {
  const address = RunnerAddress.make(options.host, options.port)
  return ToolsetHost.layer(options).pipe(
    Layer.provide(CallLedger.layerSql),
    // Merged, not only provided: an app on the runner can reach toolsets through its Sharding.
    Layer.provideMerge(
      NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          ...Timers.shardingConfig(options.timers),
          runnerAddress: Option.some(address),
          runnerListenAddress:
            options.listenHost === undefined
              ? Option.none()
              : Option.some(RunnerAddress.make(options.listenHost, options.port))
        }
      })
    ),
    Layer.provide(ClusterClient.database(options.postgres)),
    Layer.provide(Orphans.layer(Orphans.runnerId(address)))
  )
}

/** The runner cannot listen on its address: the port is taken, or the host is not this machine's. */
export class ListenFailed extends Schema.TaggedError<ListenFailed>()("ListenFailed", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Builds the runner in the current scope. A socket it cannot open fails with `ListenFailed`,
 * which names the address and the reason; the socket server's own error says only "Open".
 */
export const start = (options: Options) =>
  Layer.build(layer(options)).pipe(
    Effect.catchTag("SocketServerError", (error) =>
      Effect.fail(
        new ListenFailed({
          message: `runner cannot listen on ${options.listenHost ?? options.host}:${options.port}: ${
            error.cause instanceof Error ? error.cause.message : error.message
          }`,
          cause: error.cause
        })
      )
    )
  )
