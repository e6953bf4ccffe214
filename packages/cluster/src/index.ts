/**
 * Toolvisor on effect/cluster: toolsets as entities on runners, reached through the same registry.
 *
 * Modules under `src/internal/` (the call ledger, the fence and the lease, the call lane, orphan
 * sweeps, the entity's protocol and host, the remote toolset) are the runner's and the registry's
 * implementation, not part of this API, and may change in any release.
 */
export * as CallOutcome from "./CallOutcome.ts"
export * as ClusterClient from "./ClusterClient.ts"
export * as ClusterRegistry from "./ClusterRegistry.ts"
export * as ClusterRunner from "./ClusterRunner.ts"
/** @deprecated Renamed `ClusterRunner` (the CLI has a runner command of its own); `Runner` goes in the next release. */
export * as Runner from "./ClusterRunner.ts"
export * as Sealing from "./Sealing.ts"
export * as Timers from "./Timers.ts"
