/**
 * A toolset's status as JSON, the one shape `status --json`, `GET /status` and the status event
 * stream all speak, so a script written against one reads the others.
 */
import type { State } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import type * as Catalog from "./Catalog.ts"
import type * as ToolsetRegistry from "./ToolsetRegistry.ts"

/** A status line for scripts; `tools` is what the agent is offered when `exposed` counts are known. */
export const make = (s: State.StatusSnapshot, exposed?: ReadonlyMap<string, number>) => ({
  type: "status" as const,
  toolset: s.name,
  kind: s.kind,
  state: s.state,
  restarts: s.restarts,
  pid: s.pid ?? null,
  tools: s.toolCount === undefined ? null : exposed === undefined ? s.toolCount : (exposed.get(s.name) ?? 0),
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

/** How many tools each toolset exposes to the agent, after its `tools:` filter. */
export const exposedCounts = (catalog: Catalog.Catalog): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>()
  for (const entry of catalog.tools) counts.set(entry.toolset, (counts.get(entry.toolset) ?? 0) + 1)
  return counts
}

/** The exposed counts of the registry's default agent now; undefined when it has no catalog. */
export const exposed = (registry: ToolsetRegistry.Registry): Effect.Effect<ReadonlyMap<string, number> | undefined> =>
  registry.catalog().pipe(
    Effect.map(exposedCounts),
    Effect.orElseSucceed(() => undefined)
  )
