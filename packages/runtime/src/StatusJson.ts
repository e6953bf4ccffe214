/**
 * A toolset's status as JSON, the one shape `status --json`, `GET /status` and the status event
 * stream all speak, so a script written against one reads the others.
 */
import type { State } from "@toolvisor/core"

/**
 * A status line for scripts. `tools` is the snapshot's count as the registry gives it: the tools
 * the toolset offers after its `tools:` filter (`Catalog.offeredCount`); null while it has none.
 */
export const make = (s: State.StatusSnapshot) => ({
  type: "status" as const,
  toolset: s.name,
  kind: s.kind,
  state: s.state,
  restarts: s.restarts,
  /** Restarts the policy's budget paid for in this episode: `max_restarts` of them and it is Failed. */
  attempt: s.attempt,
  pid: s.pid ?? null,
  tools: s.toolCount ?? null,
  error:
    s.lastError === undefined
      ? null
      : {
          tag: s.lastError.tag,
          message: s.lastError.message,
          ...(s.lastError.tag === "AuthRequired" ? { action: `toolvisor auth ${s.name}` } : {})
        },
  at: new Date(s.since).toISOString()
})

export type StatusJson = ReturnType<typeof make>
