/**
 * Which runners are fenced, as every member reads it from the store. A runner back from a pause
 * past its lease takes no shard for the rebalance cooldown (`Lease`); were it only to refuse,
 * every member would still assign it shards, and those would wait unowned until its cooldown
 * ends — what a runner leaving meanwhile hosted, for one. So a fenced runner records its fence
 * here, and every member, runner or client, sees it unhealthy until the fence ends: no shard is
 * assigned to it, and calls are not routed to it. The fence's end is the store's clock, the one
 * clock every member shares.
 */
import type * as ClusterRunner from "effect/cluster/Runner"
import type * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Tables from "./tables.ts"

export type Runners = Array<readonly [ClusterRunner.Runner, boolean]>

const keyOf = (address: RunnerAddress.RunnerAddress) => `${address.host}:${address.port}`

/** Whether the runner at `address` is among `addresses` (those fenced, or those established). */
export const among = (addresses: ReadonlySet<string>, address: RunnerAddress.RunnerAddress): boolean =>
  addresses.has(keyOf(address))

/** Creates the fences' table, and the one of when each runner joined, if they are missing. */
export const ensure = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError.SqlError> =>
  Effect.andThen(
    Tables.ensure(
      sql,
      "toolvisor_runner_fences",
      sql`CREATE TABLE IF NOT EXISTS toolvisor_runner_fences (
        address TEXT PRIMARY KEY,
        until TIMESTAMPTZ NOT NULL
      )`
    ),
    Tables.ensure(
      sql,
      "toolvisor_runner_joins",
      sql`CREATE TABLE IF NOT EXISTS toolvisor_runner_joins (
        address TEXT PRIMARY KEY,
        joined TIMESTAMPTZ NOT NULL
      )`
    )
  )

/**
 * Records that the runner at `address` joins now, and returns the runners that joined more than
 * `millis` ago: the cluster's established members. Runners that start together find none, and
 * none of them is fenced for joining.
 */
export const join = (
  sql: SqlClient.SqlClient,
  address: RunnerAddress.RunnerAddress,
  millis: number
): Effect.Effect<ReadonlySet<string>, SqlError.SqlError> =>
  Effect.andThen(
    sql`INSERT INTO toolvisor_runner_joins (address, joined) VALUES (${keyOf(address)}, now())
      ON CONFLICT (address) DO UPDATE SET joined = EXCLUDED.joined`,
    Effect.map(
      sql<{ address: string }>`SELECT address FROM toolvisor_runner_joins
        WHERE joined < now() - make_interval(secs => ${millis / 1000})`,
      (rows): ReadonlySet<string> => new Set(rows.map((row) => row.address))
    )
  )

/** Records that the runner at `address` is fenced for `millis` from now. */
export const record = (
  sql: SqlClient.SqlClient,
  address: RunnerAddress.RunnerAddress,
  millis: number
): Effect.Effect<void, SqlError.SqlError> =>
  sql`INSERT INTO toolvisor_runner_fences (address, until)
    VALUES (${keyOf(address)}, now() + make_interval(secs => ${millis / 1000}))
    ON CONFLICT (address) DO UPDATE SET until = EXCLUDED.until`.pipe(Effect.asVoid)

/** The runners fenced now (none when the store cannot say, or has no fences' table yet). */
export const current = (sql: SqlClient.SqlClient): Effect.Effect<ReadonlySet<string>> =>
  sql<{ address: string }>`SELECT address FROM toolvisor_runner_fences WHERE until > now()`.pipe(
    Effect.map((rows): ReadonlySet<string> => new Set(rows.map((row) => row.address))),
    Effect.catchCause(() => Effect.succeed(new Set<string>()))
  )

/**
 * The runners, with those fenced shown unhealthy — unless that would leave no healthy runner at
 * all: then the fenced ones serve rather than no one.
 */
export const apply = (runners: Runners, fences: ReadonlySet<string>): Runners => {
  const serving = (runner: ClusterRunner.Runner, up: boolean) => up && !among(fences, runner.address)
  return runners.some(([runner, up]) => serving(runner, up))
    ? runners.map(([runner, up]) => [runner, serving(runner, up)] as const)
    : runners
}

/** A client's runner storage: the store's, with fenced runners shown unhealthy. */
export const clientStorage: Layer.Layer<
  RunnerStorage.RunnerStorage,
  never,
  RunnerStorage.RunnerStorage | SqlClient.SqlClient
> = Layer.effect(
  RunnerStorage.RunnerStorage,
  Effect.gen(function* () {
    const inner = yield* RunnerStorage.RunnerStorage
    const sql = yield* SqlClient.SqlClient
    return RunnerStorage.RunnerStorage.of({
      ...inner,
      getRunners: Effect.map(Effect.all([inner.getRunners, current(sql)]), ([runners, fences]) =>
        apply(runners, fences)
      )
    })
  })
)
