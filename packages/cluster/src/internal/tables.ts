/**
 * Toolvisor's own tables in the cluster's database, created by whichever member starts first.
 * PostgreSQL's `CREATE TABLE IF NOT EXISTS` is not safe against a concurrent one: when two
 * members start at the same moment on a fresh database, the second fails on `pg_type`'s unique
 * index ("duplicate key value violates unique constraint") and that runner would not start. So
 * the statement runs in a transaction that first takes an advisory lock named for the table: the
 * second member waits for the first to commit, and then finds the table there.
 */
import * as Effect from "effect/Effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"

/** The first int4 of the lock key: Toolvisor's, apart from Effect's shard locks (see `shardLock`). */
const namespaceKey = 0x74766973 // "tvis"

/** Runs `create` (a `CREATE … IF NOT EXISTS`) once at a time across every member. */
export const ensure = (
  sql: SqlClient.SqlClient,
  table: string,
  create: Statement.Statement<unknown>
): Effect.Effect<void, SqlError.SqlError> =>
  sql
    .withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${namespaceKey}, hashtext(${table}))`, create))
    .pipe(Effect.asVoid)
