/**
 * Membership of a cluster without hosting toolsets: what the CLI and Effect apps use to reach
 * toolsets on runners. A client still reads the runner list and shard table from the shared
 * PostgreSQL database, which is how it finds the runners, and sends tool calls over the runners'
 * call lanes where it can (`LaneClient`).
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Redaction } from "@toolvisor/core"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as Fences from "./internal/fences.ts"
import * as LaneClient from "./internal/laneClient.ts"
import * as ShardLock from "./internal/shardLock.ts"
import * as Sockets from "./internal/sockets.ts"
import * as Wire from "./internal/wire.ts"
import * as Settings from "./Settings.ts"
import * as Timers from "./Timers.ts"

/**
 * Where a client finds the cluster, and its timers: they must agree with those of the runners
 * that are up, so they come from the same settings source as a runner's.
 */
export interface Options {
  /** The cluster's PostgreSQL URL, e.g. postgres://toolvisor@127.0.0.1:5432/toolvisor. */
  readonly postgres: string
  /** Timers over those of the settings file, over the defaults (see `Settings`). */
  readonly timers?: Partial<Timers.Timers>
  /** A settings file with a `cluster:` section. */
  readonly settingsFile?: string | undefined
}

/** The cluster's database cannot be reached: no member can work without it. */
export class ClusterUnavailable extends Schema.TaggedError<ClusterUnavailable>()("ClusterUnavailable", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * What the database said: the driver's message ("PgConnection: Failed to connect"), and under it
 * PostgreSQL's own ("password authentication failed for user …"), which alone says what to fix.
 */
const reasonOf = (error: Error): string => {
  let said = error.message
  let cause = error.cause
  for (let depth = 0; cause instanceof Error && depth < 4; depth++, cause = cause.cause) {
    if (!said.includes(cause.message)) said = `${said}: ${cause.message}`
  }
  return said
}

/**
 * The cluster's PostgreSQL client, checked with one query when built: the cluster's own layers
 * treat a database they cannot reach as a defect, which would surface as a stack trace. Its
 * sessions are named for `member`, which is how a runner finds out who holds a shard.
 */
export const database = (url: string, member = "client") =>
  Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`).pipe(
      Effect.mapError(
        (cause) =>
          new ClusterUnavailable({
            message: `cannot reach the cluster's PostgreSQL at ${Redaction.redact(url)}: ${reasonOf(cause)}`,
            cause
          })
      )
    )
  ).pipe(
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), applicationName: ShardLock.applicationName(member) }))
  )

/**
 * A client-only member. Its timers must agree with those of the runners that are up: a client
 * whose lease or assignment timers differ routes calls by another view of the cluster. It is
 * `NodeClusterSocket.layer` with `clientOnly` and SQL storage, assembled here to speak over
 * `Sockets`.
 */
export const layer = (options: Options) =>
  Layer.unwrap(
    Effect.map(Settings.resolve({ given: options.timers, file: options.settingsFile }), (timers) =>
      SocketRunner.layerClientOnly.pipe(
        Layer.merge(LaneClient.layer),
        Layer.provide(Sockets.clientProtocol),
        Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
        // A client routes by the same view as the runners: fenced runners are out of it.
        Layer.provide(Fences.clientStorage.pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))),
        Layer.provide(ShardingConfig.layerFromEnv({ ...Timers.shardingConfig(timers), runnerAddress: Option.none() })),
        Layer.provide(Wire.layer),
        Layer.provide(Layer.effectDiscard(Settings.agree(timers, "client"))),
        Layer.provide(database(options.postgres))
      )
    )
  )
