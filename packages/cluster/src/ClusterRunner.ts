/**
 * A runner: one process of the cluster that hosts toolset entities. It joins through the shared
 * PostgreSQL database, listens on a TCP socket for the other members and on another for tool
 * calls sent to it directly (its call lane, `LaneServer`), and before it takes any
 * toolset (and again after it let them all go) kills whatever a previous life at the same
 * address left running.
 *
 * It is Effect's socket runner, assembled here rather than by `NodeClusterSocket.layer` so that
 * three things fit in: the shard-lock storage keeps the runner's lease through a store outage
 * (`Lease`), a fence keeps a runner that lost its shards from serving them (`Fence`), and the
 * runner's shutdown is bounded: the shutdown grace for the toolsets to finish, then a margin,
 * after which whatever is still hosted is stopped and the runner leaves anyway.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ClusterClient from "./ClusterClient.ts"
import { bounded } from "./internal/bounded.ts"
import * as CallLedger from "./internal/callLedger.ts"
import * as Fence from "./internal/fence.ts"
import * as LaneClient from "./internal/laneClient.ts"
import * as LaneServer from "./internal/laneServer.ts"
import * as Lease from "./internal/lease.ts"
import * as Orphans from "./internal/orphans.ts"
import * as ShardLock from "./internal/shardLock.ts"
import * as Sockets from "./internal/sockets.ts"
import * as ToolsetHost from "./internal/toolsetHost.ts"
import * as Wire from "./internal/wire.ts"
import * as Settings from "./Settings.ts"
import * as Timers from "./Timers.ts"

/**
 * What a runner needs: the cluster's database, the address other members reach it at, its
 * timers, and the options of the toolsets it hosts (activation wait, cluster key, clock skew).
 */
export interface Options extends ToolsetHost.Options {
  /** The cluster's PostgreSQL URL, shared by every runner and client. */
  readonly postgres: string
  /** The address other members reach this runner at; also its identity. */
  readonly host: string
  readonly port: number
  /** The address to bind, when it differs from `host` (e.g. 0.0.0.0 in a container). */
  readonly listenHost?: string
  /**
   * The port clients send tool calls to directly (`LaneServer`), on the same host; 0, the
   * default, takes a free port, which the runner tells its clients. Set it when the port must be
   * known in advance, as in a container.
   */
  readonly lanePort?: number
  /** Timers over those of the settings file, over the defaults (see `Settings`). */
  readonly timers?: Partial<Timers.Timers>
  /** A settings file with a `cluster:` section. */
  readonly settingsFile?: string | undefined
}

/** How long past the shutdown grace a runner's shutdown may take before it stops what is left. */
export const shutdownMargin = Duration.seconds(2)

/**
 * Effect's socket runner over the SQL message storage and whatever runner storage is provided,
 * speaking `Wire` over `Sockets`.
 */
const socketRunner = SocketRunner.layer.pipe(
  Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc))),
  Layer.provide([Sockets.server, Sockets.clientProtocol]),
  Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
  Layer.provide(Wire.layer)
)

/**
 * The runner. Its timers (`options.timers` over the defaults) are checked, and must agree with
 * those of the runners that are up (`Settings`); they are then recorded for later members.
 */
export const layer = (options: Options) =>
  Layer.unwrap(
    Effect.map(Settings.resolve({ given: options.timers, file: options.settingsFile }), (timers) =>
      assemble(options, timers)
    )
  )

const assemble = (options: Options, timers: Settings.Resolved) => {
  const address = RunnerAddress.make(options.host, options.port)
  const id = Orphans.runnerId(address)
  const limit = Duration.sum(timers.shutdownGrace, shutdownMargin)
  const config = ShardingConfig.layer({
    ...Timers.shardingConfig(timers),
    runnerAddress: Option.some(address),
    runnerListenAddress:
      options.listenHost === undefined
        ? Option.none()
        : Option.some(RunnerAddress.make(options.listenHost, options.port))
  })
  const stopLeftovers = (deadline: Duration.Duration) =>
    Effect.flatMap(Fence.Fence, (fence) =>
      Effect.andThen(
        Effect.logWarning(
          `runner ${id} did not shut down within ${Duration.format(deadline)}: stopping its toolsets and leaving; their shards move when the lease expires`
        ),
        fence.stopAll
      )
    )
  const agreement = Layer.effectDiscard(Settings.agree(timers, id))
  const lanes = LaneServer.layer({
    host: options.host,
    ...(options.listenHost === undefined ? {} : { listenHost: options.listenHost }),
    ...(options.lanePort === undefined ? {} : { port: options.lanePort })
  })
  // Merged, not only provided: an app on the runner can reach toolsets through its Sharding, and
  // call them over their runners' lanes.
  const hosting = ToolsetHost.layer(options).pipe(
    Layer.provide(CallLedger.layerSql),
    Layer.provideMerge(socketRunner),
    Layer.merge(LaneClient.layer)
  )
  return bounded(hosting, limit, stopLeftovers).pipe(
    // Published once this runner listens: one that could not (its address taken) spoke for the runner
    // there, and new members were refused for timers that runner does not have.
    Layer.tap(() => Settings.publish(timers, id)),
    Layer.provideMerge(Fence.layer()),
    Layer.provideMerge(Lease.layer(ShardLock.applicationName(`runner ${id}`), timers.rebalanceCooldown)),
    // Before the runner joins: one whose lane cannot listen must not take shards.
    Layer.provide(lanes),
    Layer.provide(config),
    // Before anything joins: a runner whose timers differ from the others' must not take shards.
    Layer.provide(agreement),
    Layer.provide(ClusterClient.database(options.postgres, `runner ${id}`)),
    Layer.provide(Orphans.layer(id))
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
    Effect.catchTag("LaneListenError", (error) =>
      Effect.fail(
        new ListenFailed({
          message: `runner cannot take calls on ${error.address}:${options.lanePort ?? 0}: ${
            error.cause instanceof Error ? error.cause.message : String(error.cause)
          }`,
          cause: error.cause
        })
      )
    ),
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
