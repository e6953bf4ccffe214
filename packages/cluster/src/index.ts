/** Toolvisor on effect/cluster: toolsets as entities on runners, reached through the same registry. */
export * as CallLedger from "./CallLedger.ts"
export * as ClusterClient from "./ClusterClient.ts"
export * as ClusterRegistry from "./ClusterRegistry.ts"
export * as ClusterRunner from "./ClusterRunner.ts"
/** @deprecated Renamed `ClusterRunner` (the CLI has a runner command of its own); `Runner` goes in the next release. */
export * as Runner from "./ClusterRunner.ts"
export * as Orphans from "./Orphans.ts"
export * as RemoteToolset from "./RemoteToolset.ts"
export * as Sealing from "./Sealing.ts"
export * as Timers from "./Timers.ts"
export * as ToolsetEntity from "./ToolsetEntity.ts"
export * as ToolsetHost from "./ToolsetHost.ts"
