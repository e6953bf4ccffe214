/**
 * Toolvisor core: typed lifecycle errors, states, restart policy, the Supervisor actor and ServerProcess.
 *
 * Modules under `src/internal/` are not part of this API. Toolvisor's own packages reach the few
 * they share (`internal/httpUrl`, `internal/levenshtein`, `internal/procfs`, `internal/wallClock`)
 * as `@toolvisor/core/internal/<module>`, as Effect's packages use `effect/internal/*`: they may
 * change in any release.
 */
export * as CallOrigin from "./CallOrigin.ts"
export * as Classify from "./Classify.ts"
export * as Deadline from "./Deadline.ts"
export * as JsonLimits from "./JsonLimits.ts"
export * as LifecycleError from "./LifecycleError.ts"
export * as Owner from "./Owner.ts"
export * as Policy from "./Policy.ts"
export * as RawMessage from "./RawMessage.ts"
export * as Redaction from "./Redaction.ts"
export * as ServerProcess from "./ServerProcess.ts"
export * as Session from "./Session.ts"
export * as State from "./State.ts"
export * as Supervisor from "./Supervisor.ts"
export * as Toolset from "./Toolset.ts"
export * as Tracing from "./Tracing.ts"
