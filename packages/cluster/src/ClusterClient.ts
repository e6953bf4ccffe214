/**
 * Membership of a cluster without hosting toolsets: what the CLI and Effect apps use to reach
 * toolsets on runners. A client still reads the runner list and shard table from the shared
 * PostgreSQL database, which is how it finds the runners.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Timers from "./Timers.ts"

export interface Options {
  /** The cluster's PostgreSQL URL, e.g. postgres://toolvisor@127.0.0.1:5432/toolvisor. */
  readonly postgres: string
  readonly timers?: Partial<Timers.Timers>
}

export const database = (url: string) => PgClient.layer({ url: Redacted.make(url), applicationName: "toolvisor" })

export const layer = (options: Options) =>
  NodeClusterSocket.layer({
    clientOnly: true,
    storage: "sql",
    shardingConfig: { ...Timers.shardingConfig(options.timers), runnerAddress: Option.none() }
  }).pipe(Layer.provide(database(options.postgres)))
