/**
 * The cluster's timers as flags, the same for `runner` and for every command that joins a
 * cluster with `--cluster`, and `--cluster-settings FILE` for a settings file with a `cluster:`
 * section. Flags override the file, the file overrides the defaults, and the cluster checks the
 * result the same way for every member (`Settings` in @toolvisor/cluster). Only effect/cli here:
 * this module loads for `--help` too.
 */
import type { Timers } from "@toolvisor/cluster"
import { Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { UsageError } from "./CliError.ts"
import * as DurationFlag from "./DurationFlag.ts"

const timer = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

const settingsFile = Flag.String("cluster-settings").pipe(
  Flag.withDescription("A YAML or JSON file whose `cluster:` section sets the timers below (flags win over it)"),
  Flag.optional
)

/** The timers every member of a cluster must share. */
export const member = {
  clusterSettings: settingsFile,
  lease: timer(
    "lease",
    "How long a runner holds its shards without renewing: the failover time after a crash (default 10s)"
  ),
  leaseRefresh: timer("lease-refresh", "How often the lease is renewed; at most half the lease (default 3s)"),
  healthCheck: timer("health-check", "How often runners ping each other (default 5s)"),
  assignmentsRefresh: timer("assignments-refresh", "How often shard ownership is re-read (default 1s)"),
  messagePoll: timer("message-poll", "How often persisted start requests are polled (default 2s)"),
  rebalanceCooldown: timer(
    "rebalance-cooldown",
    "How long the runners must stay unchanged before one that joined or came back gets toolsets (default 30s)"
  )
}

/** A runner's: the shared timers and its own shutdown grace. */
export const runner = {
  ...member,
  shutdownGrace: timer("shutdown-grace", "How long shutdown waits for toolsets before moving them (default 10s)")
}

/** The cluster flags a member was given, as effect/cli parses them (all optional). */
export type Member = { readonly [K in keyof typeof runner]?: Option.Option<string> }

/** What a member was given: the settings file, and each timer flag parsed (a bad one is a usage error). */
export const given = (
  options: Member
): Effect.Effect<{ readonly file?: string; readonly timers: Partial<Timers.Timers> }, UsageError> =>
  Effect.gen(function* () {
    const timers: { -readonly [K in keyof Timers.Timers]?: Timers.Timers[K] } = {}
    const flags = [
      ["lease", "--lease"],
      ["leaseRefresh", "--lease-refresh"],
      ["healthCheck", "--health-check"],
      ["assignmentsRefresh", "--assignments-refresh"],
      ["messagePoll", "--message-poll"],
      ["rebalanceCooldown", "--rebalance-cooldown"],
      ["shutdownGrace", "--shutdown-grace"]
    ] as const
    for (const [name, flag] of flags) {
      const text = options[name]
      if (text !== undefined && Option.isSome(text)) timers[name] = yield* DurationFlag.parse(text.value, flag)
    }
    const file = options.clusterSettings === undefined ? undefined : Option.getOrUndefined(options.clusterSettings)
    return file === undefined ? { timers } : { file, timers }
  })
