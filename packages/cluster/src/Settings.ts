/**
 * The cluster's settings, one source for runners and clients: a settings file with a `cluster:`
 * section (YAML or JSON), overridden by flags, checked by one set of rules. Members must agree:
 * a runner records its timers in the store when it starts, and a member whose timers differ
 * from those of the runners that are up is refused with a message that says which differ.
 *
 * ```yaml
 * cluster:
 *   lease: 10s
 *   lease_refresh: 3s
 *   health_check: 5s
 *   assignments_refresh: 1s
 *   message_poll: 2s
 *   shutdown_grace: 10s        # this runner's own; not compared
 *   rebalance_cooldown: 30s
 * ```
 */

import { ConfigError } from "@toolvisor/config"
import * as ConfigText from "@toolvisor/config/internal/configText"
import { Policy } from "@toolvisor/core"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Tables from "./internal/tables.ts"
import * as Timers from "./Timers.ts"

type Name = keyof Timers.Timers

/** Every timer, as the file and the flags spell it. */
export const spelling: { readonly [K in Name]: { readonly key: string; readonly flag: string } } = {
  lease: { key: "lease", flag: "--lease" },
  leaseRefresh: { key: "lease_refresh", flag: "--lease-refresh" },
  healthCheck: { key: "health_check", flag: "--health-check" },
  assignmentsRefresh: { key: "assignments_refresh", flag: "--assignments-refresh" },
  messagePoll: { key: "message_poll", flag: "--message-poll" },
  shutdownGrace: { key: "shutdown_grace", flag: "--shutdown-grace" },
  rebalanceCooldown: { key: "rebalance_cooldown", flag: "--rebalance-cooldown" }
}

const names = Object.keys(spelling) as ReadonlyArray<Name>

/** The timers every member must share; the shutdown grace is each runner's own. */
export const shared: ReadonlyArray<Name> = names.filter((name) => name !== "shutdownGrace")

/** Timers resolved to durations. */
export type Resolved = { readonly [K in Name]: Duration.Duration }

const File = Schema.Struct({
  cluster: Schema.Struct({
    lease: Schema.optionalKey(Policy.DurationString),
    lease_refresh: Schema.optionalKey(Policy.DurationString),
    health_check: Schema.optionalKey(Policy.DurationString),
    assignments_refresh: Schema.optionalKey(Policy.DurationString),
    message_poll: Schema.optionalKey(Policy.DurationString),
    shutdown_grace: Schema.optionalKey(Policy.DurationString),
    rebalance_cooldown: Schema.optionalKey(Policy.DurationString)
  })
})

const decodeFile = Schema.decodeUnknownEffect(File)

/** Settings files are a few lines; a bigger one is a mistake (or hostile). */
const maxFileBytes = 64 * 1024

const readText = (path: string): Effect.Effect<string, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const unreadable = (cause: unknown) =>
      ConfigError.make(path, [
        { path: "", message: `cannot read it: ${cause instanceof Error ? cause.message : String(cause)}` }
      ])
    const text = yield* Effect.tryPromise({
      try: () => BoundedFile.readText(path, { maxBytes: maxFileBytes, pipeMillis: 30_000 }),
      catch: unreadable
    })
    return text === undefined ? yield* unreadable(`it is more than a settings file's ${maxFileBytes} bytes`) : text
  })

/** The timers a settings file sets (unknown keys are errors, with a "did you mean"). */
export const readFile = (path: string): Effect.Effect<Partial<Resolved>, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const text = yield* readText(path)
    const syntax = ConfigText.syntaxOf(path, text)
    const document = yield* ConfigText.parse(text, syntax, path)
    const file = yield* decodeFile(document, { onExcessProperty: "error" }).pipe(
      Effect.mapError((error) => ConfigError.make(path, ConfigError.fromSchemaIssue(error.issue), [], syntax))
    )
    const out: { [K in Name]?: Duration.Duration } = {}
    for (const name of names) {
      const value = file.cluster[spelling[name].key as keyof typeof file.cluster]
      if (value !== undefined) out[name] = value
    }
    return out
  })

/**
 * The timers from defaults, then the file, then what was given (flags, or a program's options),
 * checked: a lease that survives one missed renewal, assignments read well within a lease, and
 * nothing zero that must tick.
 */
export const resolve = (options: {
  readonly file?: string | undefined
  readonly given?: Partial<Timers.Timers> | undefined
}): Effect.Effect<Resolved, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const fromFile = options.file === undefined ? {} : yield* readFile(options.file)
    const timers = Object.fromEntries(
      names.map((name) => [
        name,
        Duration.fromInputUnsafe(options.given?.[name] ?? fromFile[name] ?? Timers.defaults[name])
      ])
    ) as Resolved
    const issues = check(timers)
    if (issues.length > 0) return yield* ConfigError.make(options.file ?? "cluster settings", issues)
    return timers
  })

const millis = Duration.toMillis

/** The rules every member's timers must pass. */
export const check = (t: Resolved): ReadonlyArray<ConfigError.Issue> => {
  const issues: Array<ConfigError.Issue> = []
  const issue = (name: Name, message: string) =>
    issues.push({ path: `${spelling[name].key} (${spelling[name].flag})`, message })
  for (const name of ["lease", "leaseRefresh", "healthCheck", "assignmentsRefresh", "messagePoll"] as const) {
    if (millis(t[name]) <= 0) issue(name, "must be more than 0")
  }
  if (millis(t.lease) < 1000) issue("lease", `must be at least 1s, got ${Duration.format(t.lease)}`)
  if (millis(t.leaseRefresh) * 2 > millis(t.lease)) {
    issue(
      "leaseRefresh",
      `must be at most half the lease (${Duration.format(t.lease)}), so one missed renewal does not lose it`
    )
  }
  if (millis(t.assignmentsRefresh) >= millis(t.lease)) {
    issue("assignmentsRefresh", `must be shorter than the lease (${Duration.format(t.lease)})`)
  }
  return issues
}

/** A member whose timers differ from those of the runners that are up. */
export class SettingsMismatch extends Schema.TaggedError<SettingsMismatch>()("SettingsMismatch", {
  message: Schema.String
}) {}

const encode = (t: Resolved): Record<string, number> =>
  Object.fromEntries(shared.map((name) => [name, millis(t[name])]))

const table = "toolvisor_cluster_settings"

const ensureTable = (sql: SqlClient.SqlClient) =>
  Tables.ensure(
    sql,
    table,
    sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    member TEXT PRIMARY KEY,
    timers TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`
  )

/**
 * Compares `timers` with those of every runner that is up (a heartbeat within its lease), and
 * fails naming the first runner that differs and how.
 */
export const agree = (
  timers: Resolved,
  self: string
): Effect.Effect<void, SettingsMismatch | SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* ensureTable(sql)
    // Before the first runner ever started, the cluster's own tables do not exist: nothing to agree with.
    const [cluster] = yield* sql<{ present: boolean }>`SELECT to_regclass('cluster_runners') IS NOT NULL AS present`
    const runners = cluster?.present
      ? yield* sql<{ member: string; timers: string }>`SELECT s.member, s.timers
          FROM ${sql(table)} s JOIN cluster_runners r ON r.address = s.member
          WHERE s.member <> ${self} AND r.last_heartbeat > now() - make_interval(secs => ${millis(timers.lease) / 1000})`
      : []
    const mine = encode(timers)
    for (const runner of runners) {
      const theirs = yield* Effect.try({
        try: () => JSON.parse(runner.timers) as Record<string, unknown>,
        catch: () => new SettingsMismatch({ message: `runner ${runner.member} recorded unreadable timers` })
      })
      const differ = shared.filter((name) => theirs[name] !== mine[name])
      if (differ.length > 0) {
        const what = differ
          .map(
            (name) =>
              `${spelling[name].flag} ${Duration.format(timers[name])} here, ${Duration.format(Duration.millis(Number(theirs[name])))} on runner ${runner.member}`
          )
          .join("; ")
        return yield* new SettingsMismatch({
          message: `this member's cluster timers differ from the runners': ${what}. Every member must use the same timers (the same flags, or the same --cluster-settings file)`
        })
      }
    }
  })

/** Records a runner's timers, for the members that join after it to compare with. */
export const publish = (
  timers: Resolved,
  runner: string
): Effect.Effect<void, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* ensureTable(sql)
    yield* sql`INSERT INTO ${sql(table)} (member, timers) VALUES (${runner}, ${JSON.stringify(encode(timers))})
      ON CONFLICT (member) DO UPDATE SET timers = excluded.timers, updated_at = now()`
  })
