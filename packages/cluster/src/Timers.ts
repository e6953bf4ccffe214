/**
 * The cluster's timers, named for what they decide. Effect's defaults suit long-lived fleets
 * (a dead runner's toolsets move after 35 s); these defaults move them after about 10 s, and
 * every member of one cluster — runners and clients — must use the same values.
 */
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Duration from "effect/Duration"

/**
 * The cluster's timers, each named for what it decides rather than for Effect's setting it maps
 * to (`shardingConfig`). A member gives any of them over `defaults`.
 */
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
  /**
   * How long the runners must stay unchanged before a runner that joined (or came back) gets
   * toolsets: a toolset stays where it is healthy, and one that moved is not moved back to a
   * runner that just returned (a paused one included) until the cluster has settled.
   */
  readonly rebalanceCooldown: Duration.Input
}

/**
 * What every timer is when neither a settings file nor a flag or option sets it: a crashed
 * runner's toolsets move after about the 10 s lease (Effect's own default lease is 35 s).
 */
export const defaults: Timers = {
  lease: "10 seconds",
  leaseRefresh: "3 seconds",
  healthCheck: "5 seconds",
  assignmentsRefresh: "1 second",
  messagePoll: "2 seconds",
  shutdownGrace: "10 seconds",
  rebalanceCooldown: "30 seconds"
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
    // The cooldown is a fence in the store (`Lease`), the same in every member's view; Effect's
    // debounce held a join back only in the views of members that saw the cluster before it.
    runnerJoinDebounce: 0,
    entityMaxIdleTime: Duration.infinity
  }
}
