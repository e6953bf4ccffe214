/**
 * A runner: one process of the cluster that hosts toolset entities. It joins through the shared
 * PostgreSQL database, listens on a TCP socket for the other members, and before it takes any
 * toolset (and again after it let them all go) kills whatever a previous life at the same
 * address left running.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
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
