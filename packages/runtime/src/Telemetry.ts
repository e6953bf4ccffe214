/**
 * The runtime's metrics, as Effect `Metric`s: export them with the Layer of your choice
 * (`effect/observability` has OTLP and Prometheus exporters). Every metric carries the toolset
 * name as an attribute.
 */
import type { State } from "@toolvisor/core"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/** Reconnects started, per toolset. */
export const restarts = Metric.counter("toolvisor_toolset_restarts_total", {
  description: "Reconnects started by the supervisor"
})

/** The current state per toolset, as a number: 0 Stopped, 1 Starting, 2 Ready, 3 Degraded, 4 Restarting, 5 Failed. */
export const state = Metric.gauge("toolvisor_toolset_state", {
  description: "0 Stopped, 1 Starting, 2 Ready, 3 Degraded, 4 Restarting, 5 Failed"
})

/** The tools each toolset offers the agent, after its `tools:` filter (`Catalog.offeredCount`). */
export const tools = Metric.gauge("toolvisor_toolset_tools", {
  description: "Tools the toolset offers the agent, after its tools: filter"
})

/** Records the tool count of one toolset, as its status snapshot shows it. */
export const toolCount = (toolset: string, count: number) =>
  Metric.update(Metric.withAttributes(tools, { toolset }), count)

const latencyOptions = {
  description: "Tool call latency",
  boundaries: Metric.exponentialBoundaries({ start: 0.25, factor: 2, count: 18 })
}

/** Tool call latency in milliseconds. */
export const callLatency = Metric.histogram("toolvisor_tool_call_duration_ms", latencyOptions)

const failuresOptions = { description: "Tool calls that failed, by error tag" }

/** Failed tool calls, by toolset and error tag. */
export const callFailures = Metric.counter("toolvisor_tool_call_failures_total", failuresOptions)

const stateCode: { readonly [S in State.State]: number } = {
  Stopped: 0,
  Starting: 1,
  Ready: 2,
  Degraded: 3,
  Restarting: 4,
  Failed: 5
}

/** Records one transition of one toolset. */
export const transition = (toolset: string, to: State.State) =>
  Effect.all(
    [
      Metric.update(Metric.withAttributes(state, { toolset }), stateCode[to]),
      to === "Restarting" ? Metric.update(Metric.withAttributes(restarts, { toolset }), 1) : Effect.void
    ],
    { discard: true }
  )

/**
 * Records the calls of one toolset. Its series are tagged once, when the recorder is made: tagging
 * a metric on every call costs a new series key per call.
 */
export interface CallRecorder {
  /**
   * Records one call's latency and, when it failed, its error tag, into the metrics of `context`
   * (the calling fiber's, or the registry's for calls made outside the runtime).
   */
  readonly recordUnsafe: (millis: number, failure: string | undefined, context: Context.Context<never>) => void
}

/**
 * A recorder for one toolset's calls, made once per toolset: its failure counters are tagged on
 * first use. Its series are the metrics made again with their attributes, not `withAttributes`
 * views, which add the attributes to a copy of the caller's context on every update (that copy was
 * ~1% of a call over stdio).
 */
export const callRecorder = (toolset: string): CallRecorder => {
  const latency = Metric.histogram(callLatency.id, { ...latencyOptions, attributes: { toolset } })
  const failures = new Map<string, typeof callFailures>()
  const failuresTagged = (tag: string) => {
    let counter = failures.get(tag)
    if (counter === undefined) {
      counter = Metric.counter(callFailures.id, { ...failuresOptions, attributes: { toolset, tag } })
      failures.set(tag, counter)
    }
    return counter
  }
  return {
    recordUnsafe: (millis, failure, context) => {
      latency.updateUnsafe(millis, context)
      if (failure !== undefined) failuresTagged(failure).updateUnsafe(1, context)
    }
  }
}
