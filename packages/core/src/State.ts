/**
 * The states of a supervised toolset and the snapshot a status subscriber sees. The Supervisor
 * decides which transitions are valid; this module only names and describes them.
 */
import * as Schema from "effect/Schema"

export const State = Schema.Literals(["Stopped", "Starting", "Ready", "Degraded", "Restarting", "Failed"])

export type State = typeof State.Type

/** Stopped and Failed need an outside action (start, restart) to leave. */
export const isTerminal = (state: State): boolean => state === "Stopped" || state === "Failed"

/** Ready and Degraded serve requests; Degraded means a health probe is failing. */
export const isUsable = (state: State): boolean => state === "Ready" || state === "Degraded"

/** The last error, in the short form that travels with a snapshot. */
export const ErrorSummary = Schema.Struct({
  tag: Schema.String,
  message: Schema.String
})

/**
 * What a status subscriber sees of one toolset at one moment. Plain data, not a class: the
 * Supervisor makes one on every transition of every toolset, from values it has already typed,
 * so it is built as an object literal with no validating constructor; the schema is for the wire.
 */
export const StatusSnapshot = Schema.Struct({
  name: Schema.String,
  kind: Schema.String,
  state: State,
  /** When the toolset entered `state`, in epoch milliseconds of the Effect `Clock`. */
  since: Schema.Number,
  lastError: Schema.optionalKey(ErrorSummary),
  /** Reconnects performed since the toolset was last started from Stopped or Failed. */
  restarts: Schema.Int,
  /** Position in the current restart episode; back to 0 once Ready has lasted `reset_after`. */
  attempt: Schema.Int,
  /**
   * The process backing the session, when it is local; while Stopped, the process of a late first
   * connect kept (parked) for the next start, which adopts it.
   */
  pid: Schema.optionalKey(Schema.Int),
  /**
   * The tools the live session offers. A registry's snapshots count them after the toolset's
   * `tools:` filter, which is the number every status output shows.
   */
  toolCount: Schema.optionalKey(Schema.Int),
  /**
   * Bumped whenever the toolset's tool list may have changed (each Ready, each re-listing), so a
   * catalog knows when to list again from the status stream alone.
   */
  toolsVersion: Schema.Int,
  server: Schema.optionalKey(Schema.Struct({ name: Schema.String, version: Schema.String })),
  instructions: Schema.optionalKey(Schema.String)
})

export interface StatusSnapshot extends Schema.Schema.Type<typeof StatusSnapshot> {}

/** One state change, as the `events` stream delivers it. */
export const Transition = Schema.Struct({
  from: State,
  snapshot: StatusSnapshot
})

export interface Transition extends Schema.Schema.Type<typeof Transition> {}
