/**
 * The cluster's timers, named for what they decide. Effect's defaults suit long-lived fleets
 * (a dead runner's toolsets move after 35 s); these defaults move them after about 10 s, and
 * every member of one cluster — runners and clients — must use the same values.
 */
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Duration from "effect/Duration"

export interface Timers {
  /** How long a runner's hold on its shards lasts without renewal: the failover time after a crash. */
  readonly lease: Duration.Input
  /** How often a runner renews its lease; well under `lease`. */
  readonly leaseRefresh: Duration.Input
  /** How often runners ping each other to notice a dead one. */
  readonly healthCheck: Duration.Input
  /** How often a member re-reads who owns which shard. */
  readonly assignmentsRefresh: Duration.Input
  /** How often persisted requests (a toolset's "should run") are polled from storage. */
  readonly messagePoll: Duration.Input
  /** How long a runner shutting down waits for its toolsets to finish before moving them. */
  readonly shutdownGrace: Duration.Input
}

export const defaults: Timers = {
  lease: "10 seconds",
  leaseRefresh: "3 seconds",
  healthCheck: "5 seconds",
  assignmentsRefresh: "1 second",
  messagePoll: "2 seconds",
  shutdownGrace: "10 seconds"
}

/**
 * The sharding settings for these timers. Every field that matters is set here, because the
 * Node cluster layers also read the environment (`HOST`, `PORT`, `SHARDS_PER_GROUP`, …) for
 * whatever is left unset, and a stray variable would silently change a runner.
 */
export const shardingConfig = (timers: Partial<Timers> = {}): Partial<ShardingConfig.ShardingConfig["Service"]> => {
  const t = { ...defaults, ...timers }
  return {
    shardsPerGroup: 300,
    availableShardGroups: ["default"],
    assignedShardGroups: ["default"],
    shardLockExpiration: t.lease,
    shardLockRefreshInterval: t.leaseRefresh,
    runnerHealthCheckInterval: t.healthCheck,
    refreshAssignmentsInterval: t.assignmentsRefresh,
    entityMessagePollInterval: t.messagePoll,
    entityTerminationTimeout: t.shutdownGrace,
    entityMaxIdleTime: Duration.infinity
  }
}
