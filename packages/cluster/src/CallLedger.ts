/**
 * The record of tool calls that have started, keyed by the cluster's request id. The cluster
 * re-delivers a call whose runner died with the same request id, so a second `begin` for an id
 * means the first run's fate is unknown; the host then refuses the call instead of running a
 * side effect twice. Shared by all runners, so it lives in SQL.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"

export interface Entry {
  readonly requestId: string
  readonly toolset: string
  readonly tool: string
  readonly runner: string
}

/** Where and when a call was first started. */
export interface First {
  readonly runner: string
  readonly startedAt: Date
}

export interface Ledger {
  /** Records the call as started; a call already recorded is not, and its first start is returned. */
  readonly begin: (entry: Entry) => Effect.Effect<First | undefined, SqlError.SqlError>
}

export class CallLedger extends Context.Service<CallLedger, Ledger>()("@toolvisor/cluster/CallLedger") {}

/** Rows older than this are deleted when a runner starts: no re-delivery comes that late. */
const retentionHours = 24

/** The ledger in the cluster's SQL database (PostgreSQL): one insert per guarded call. */
export const makeSql = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS toolvisor_call_ledger (
    request_id TEXT PRIMARY KEY,
    toolset TEXT NOT NULL,
    tool TEXT NOT NULL,
    runner TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`
  yield* sql`DELETE FROM toolvisor_call_ledger WHERE started_at < now() - make_interval(hours => ${retentionHours})`
  return {
    begin: (entry) =>
      Effect.gen(function* () {
        const inserted = yield* sql`INSERT INTO toolvisor_call_ledger (request_id, toolset, tool, runner)
          VALUES (${entry.requestId}, ${entry.toolset}, ${entry.tool}, ${entry.runner})
          ON CONFLICT (request_id) DO NOTHING RETURNING request_id`
        if (inserted.length > 0) return undefined
        const rows = yield* sql<{ runner: string; started_at: Date }>`SELECT runner, started_at
          FROM toolvisor_call_ledger WHERE request_id = ${entry.requestId}`
        const row = rows[0]
        return { runner: row?.runner ?? "unknown", startedAt: row?.started_at ?? new Date(0) }
      })
  } satisfies Ledger
})

export const layerSql: Layer.Layer<CallLedger, SqlError.SqlError, SqlClient.SqlClient> = Layer.effect(
  CallLedger,
  makeSql
)

/** A ledger in this process's memory: for one runner, or the cluster's in-memory test runner. */
export const makeMemory = Effect.sync((): Ledger => {
  const started = new Map<string, First>()
  return {
    begin: (entry) =>
      Effect.sync(() => {
        const first = started.get(entry.requestId)
        if (first !== undefined) return first
        started.set(entry.requestId, { runner: entry.runner, startedAt: new Date() })
        return undefined
      })
  }
})

export const layerMemory: Layer.Layer<CallLedger> = Layer.effect(CallLedger, makeMemory)
