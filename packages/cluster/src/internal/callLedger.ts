/**
 * The record of tool calls that have started, keyed by the caller's call id. The cluster
 * re-delivers a call whose runner died, with the same payload, so a second `begin` for an id
 * means the first run's fate is unknown; the host then refuses the call instead of running a
 * side effect twice. Shared by all runners, so it lives in SQL, and the insert is fenced: it
 * takes effect only while the runner's own session holds the lock of the toolset's shard, so a
 * runner that lost its shard (paused past its lease, cut off) cannot start a call any more.
 */

import * as Context from "effect/Context"
import type * as ShardId from "effect/cluster/ShardId"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Lease from "./lease.ts"
import * as ShardLock from "./shardLock.ts"
import * as Tables from "./tables.ts"

/** A call about to start, and the shard its runner must hold for the record to take effect. */
export interface Entry {
  readonly requestId: string
  readonly toolset: string
  readonly tool: string
  readonly runner: string
  /** The shard of the toolset's entity: the runner must hold it for the call to start. */
  readonly shard: ShardId.ShardId
}

/** What `begin` found. */
export type Began =
  /** Recorded: the call may run. */
  | { readonly _tag: "Started" }
  /** Already recorded: where and when it first started. */
  | { readonly _tag: "Repeated"; readonly runner: string; readonly startedAt: Date }
  /** Not recorded: this runner does not hold the toolset's shard. */
  | { readonly _tag: "NotOwner" }

/** Where and when a call first started. */
export interface First {
  readonly runner: string
  readonly startedAt: Date
}

/** The ledger's operations: `begin` records a call before it runs and says whether it may. */
export interface Ledger {
  readonly begin: (entry: Entry) => Effect.Effect<Began, SqlError.SqlError>
  /** Where a call started, if it did (a read, not fenced: it changes nothing). */
  readonly lookup: (requestId: string) => Effect.Effect<First | undefined, SqlError.SqlError>
}

/** The call ledger, as a service: SQL on a runner (`layerSql`), memory in the test runner (`layerMemory`). */
export class CallLedger extends Context.Service<CallLedger, Ledger>()("@toolvisor/cluster/CallLedger") {}

/** Rows older than this are deleted when a runner starts: no re-delivery comes that late. */
const retentionHours = 24

const started: Began = { _tag: "Started" }
const notOwner: Began = { _tag: "NotOwner" }

/** The ledger in the cluster's SQL database (PostgreSQL): one fenced insert per guarded call. */
export const makeSql = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const lease = yield* Lease.Lease
  yield* Tables.ensure(
    sql,
    "toolvisor_call_ledger",
    sql`CREATE TABLE IF NOT EXISTS toolvisor_call_ledger (
      request_id TEXT PRIMARY KEY,
      toolset TEXT NOT NULL,
      tool TEXT NOT NULL,
      runner TEXT NOT NULL,
      started_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`
  )
  yield* sql`DELETE FROM toolvisor_call_ledger WHERE started_at < now() - make_interval(hours => ${retentionHours})`
  return {
    begin: (entry) =>
      // One statement: the fenced insert, and the row as it was before it (the CTE's snapshot).
      Effect.map(
        sql<{ inserted: string; runner: string | null; started_at: Date | null }>`WITH ins AS (
            INSERT INTO toolvisor_call_ledger (request_id, toolset, tool, runner)
            SELECT ${entry.requestId}, ${entry.toolset}, ${entry.tool}, ${entry.runner}
            WHERE ${ShardLock.heldBy(sql, lease.name, entry.shard, lease.groups)}
            ON CONFLICT (request_id) DO NOTHING RETURNING 1
          )
          SELECT (SELECT count(*) FROM ins) AS inserted, l.runner, l.started_at
          FROM (SELECT 1) AS one LEFT JOIN toolvisor_call_ledger l ON l.request_id = ${entry.requestId}`,
        ([row]): Began =>
          Number(row?.inserted) > 0
            ? started
            : row?.runner != null && row.started_at != null
              ? { _tag: "Repeated", runner: row.runner, startedAt: row.started_at }
              : notOwner
      ),
    lookup: (requestId) =>
      Effect.map(
        sql<{ runner: string; started_at: Date }>`SELECT runner, started_at FROM toolvisor_call_ledger
          WHERE request_id = ${requestId}`,
        ([row]) => (row === undefined ? undefined : { runner: row.runner, startedAt: row.started_at })
      )
  } satisfies Ledger
})

/** The SQL ledger: creates its table if missing and deletes rows past the retention when built. */
export const layerSql: Layer.Layer<CallLedger, SqlError.SqlError, SqlClient.SqlClient | Lease.Lease> = Layer.effect(
  CallLedger,
  makeSql
)

/** A ledger in this process's memory: for one runner, or the cluster's in-memory test runner. */
export const makeMemory = Effect.sync((): Ledger => {
  const firsts = new Map<string, First>()
  return {
    begin: (entry) =>
      Effect.sync((): Began => {
        const first = firsts.get(entry.requestId)
        if (first !== undefined) return { _tag: "Repeated", ...first }
        firsts.set(entry.requestId, { runner: entry.runner, startedAt: new Date() })
        return started
      }),
    lookup: (requestId) => Effect.sync(() => firsts.get(requestId))
  }
})

/** The in-memory ledger, unfenced: a runner alone in its cluster owns every shard. */
export const layerMemory: Layer.Layer<CallLedger> = Layer.effect(CallLedger, makeMemory)
