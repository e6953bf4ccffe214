/** Toolvisor core: typed lifecycle errors, states, restart policy, the Supervisor actor and ServerProcess. */
export * as Classify from "./Classify.ts"
export * as LifecycleError from "./LifecycleError.ts"
export * as Policy from "./Policy.ts"
export * as ServerProcess from "./ServerProcess.ts"
export * as Session from "./Session.ts"
export * as State from "./State.ts"
export * as Supervisor from "./Supervisor.ts"
export * as Toolset from "./Toolset.ts"
