/**
 * One toolset as an operator's detail view shows it, beyond its status: the policy it runs on,
 * the tools it offers the agent, and what its server last wrote to stderr — masked like all the
 * registry's toolsets say (`Secrets`), and bounded as `ServerProcess` keeps it (short lines, few).
 */
import type { AgentConfig } from "@toolvisor/config"
import type { Policy, Toolset } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Catalog from "./Catalog.ts"
import * as Toolsets from "./Toolsets.ts"

export interface Inspection {
  readonly toolset: string
  /** The policy the toolset runs on: its config's, with what its transport adds. */
  readonly policy: Policy.Policy
  /**
   * The names the agent sees (after `name:` as a prefix, `tools:` and `deny`), in the server's
   * order; incomplete while the toolset has no live session to ask.
   */
  readonly tools: { readonly complete: boolean; readonly names: ReadonlyArray<string> }
  /** The latest server's last lines on stderr, oldest first; undefined for a remote server. */
  readonly stderr: ReadonlyArray<string> | undefined
}

/** Inspects one running toolset of the registry. */
export const make = (
  config: Pick<AgentConfig.ToolsetConfig, "name" | "type" | "transport" | "policy" | "prefix" | "tools" | "deny">,
  toolset: Toolset.Toolset
): Effect.Effect<Inspection> =>
  Effect.gen(function* () {
    const filter = Catalog.filterOf(config)
    const listing = yield* Effect.orElseSucceed(toolset.tools, () => ({ complete: false, items: [] }))
    const stderr = toolset.stderr === undefined ? undefined : yield* toolset.stderr
    return {
      toolset: config.name,
      policy: Toolsets.policyOf(config),
      tools: {
        complete: listing.complete,
        names: listing.items.flatMap((tool) =>
          Catalog.offers(filter, tool.name) ? [Catalog.exposedName(config.prefix, tool.name)] : []
        )
      },
      stderr
    }
  })

const millis = (duration: Duration.Duration | undefined) =>
  duration === undefined ? null : Duration.toMillis(duration)

/** An inspection as JSON: durations in milliseconds, `null` for none. */
export const json = (inspection: Inspection) => {
  const { policy } = inspection
  return {
    toolset: inspection.toolset,
    policy: {
      restart: policy.restart,
      maxRestarts: policy.maxRestarts,
      backoff: {
        initialMs: millis(policy.backoff.initial),
        maxMs: millis(policy.backoff.max),
        multiplier: policy.backoff.multiplier,
        jitter: policy.backoff.jitter,
        resetAfterMs: millis(policy.backoff.resetAfter)
      },
      startupTimeoutMs: millis(policy.startupTimeout),
      callTimeoutMs: millis(policy.callTimeout),
      required: policy.required,
      health:
        policy.health === undefined
          ? null
          : {
              intervalMs: millis(policy.health.interval),
              timeoutMs: millis(policy.health.timeout),
              failures: policy.health.failures
            }
    },
    tools: inspection.tools,
    stderr: inspection.stderr ?? null
  }
}
