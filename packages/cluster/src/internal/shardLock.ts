/**
 * Who holds a shard, asked of PostgreSQL itself. `SqlRunnerStorage` locks a shard with a
 * session-level advisory lock; its key is, in Effect's words, "a persistent advisory-lock wire
 * format [that] must never change": the FNV-1a hash of `effect-cluster:<prefix>` as the first
 * int4, `(group index + 1) × 1,000,000 + shard` as the second. Each member's sessions carry its
 * own `application_name`, so `pg_locks` joined with `pg_stat_activity` names the holder.
 */
import type * as ShardId from "effect/cluster/ShardId"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"

/** The table prefix the runner storage uses (Effect's default). */
const prefix = "cluster"

const fnv1a = (text: string): number => {
  const bytes = new TextEncoder().encode(text)
  let hash = 0x811c9dc5
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193)
  return hash | 0
}

/** The first int4 of every shard's lock key, as `pg_advisory_lock` takes it. */
export const namespaceKey = fnv1a(`effect-cluster:${prefix}`)

/** `pg_locks` shows the signed int4 key as an unsigned oid. */
const namespace = namespaceKey >>> 0

/** PostgreSQL keeps the first 63 bytes of an application name. */
const maxNameBytes = 63

/** The `application_name` of a member's sessions: how the database tells members apart. */
export const applicationName = (member: string): string => {
  const name = `toolvisor ${member}`
  return Buffer.from(name).subarray(0, maxNameBytes).toString()
}

/** The member an `application_name` names ("runner 10.0.0.5:34431"), or the name itself if not a member's. */
export const memberOf = (name: string): string =>
  name.startsWith("toolvisor ") ? name.slice("toolvisor ".length) : name

/** The second half of a shard's lock key. */
export const lockNumber = (shard: ShardId.ShardId, groups: ReadonlyArray<string>): number =>
  (groups.indexOf(shard.group) + 1) * 1_000_000 + shard.id

/**
 * A condition that holds while the sessions of the member named `name` hold the lock of `shard`:
 * for a statement that must only take effect while its runner owns the shard.
 */
export const heldBy = (
  sql: SqlClient.SqlClient,
  name: string,
  shard: ShardId.ShardId,
  groups: ReadonlyArray<string>
): Statement.Fragment =>
  sql`EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.classid = ${namespace}::oid AND l.objid = ${lockNumber(shard, groups)}::oid
      AND a.application_name = ${name})`

/** The `application_name`s of the sessions holding each of `shards`' locks (absent: no one holds it). */
export const holders = (
  sql: SqlClient.SqlClient,
  shards: ReadonlyArray<ShardId.ShardId>,
  groups: ReadonlyArray<string>
) =>
  sql<{
    readonly objid: number
    readonly holder: string | null
  }>`SELECT l.objid::int8 AS objid, a.application_name AS holder
    FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ${namespace}::oid
      AND l.objid IN ${sql.in(shards.map((shard) => lockNumber(shard, groups)))}`
