/**
 * Whether a cluster call that failed ran. A caller that retries a call it was told did not run
 * must never run a tool twice, so every error a cluster call can end with belongs to one class,
 * read from its type alone (never from its message):
 *
 * | class | errors | retry |
 * |---|---|---|
 * | `NotRun`: provably never reached a server | `UnknownTool`, `UnknownAgent`, `ToolNotFound`, `NotStarted`, `TransportError`, `ServerUnavailable`, `InitTimeout`, `InitNotification`, `CapabilityMissing`, `AuthRequired`, `SessionMissing` | safe |
 * | `Answered`: the server ran it and answered with an error | `ToolCallFailed` | only if the tool allows it |
 * | `MayHaveRun`: nobody can tell | `CallOutcomeUnknown`, `ServerCrashed`, `CallTimeout` | only if the tool allows it |
 *
 * The runner keeps the table true: a failure after it handed the call to the server, whatever its
 * type, becomes `CallOutcomeUnknown` (`afterHandOff`), so a `NotStarted` or a `TransportError` can
 * only come from before. The client does the same for what the cluster itself fails with
 * (`undelivered`) and for a call whose answer never came (a deadline, a defect, an interruption
 * it did not ask for). `ServerCrashed` and `CallTimeout` are listed for the local registry's sake:
 * a cluster call ends with them only as the `cause` of a `CallOutcomeUnknown`.
 */
import { LifecycleError, Toolset } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import type * as ClusterError from "effect/cluster/ClusterError"

/**
 * What a failed call's error says about whether it ran: `NotRun` (it never reached a server, so
 * sending it again cannot run it twice), `Answered` (the server ran it and answered with an
 * error) or `MayHaveRun` (nobody can tell).
 */
export type Outcome = "NotRun" | "Answered" | "MayHaveRun"

/** Every error a call through a registry can end with, locally or through the cluster. */
export type CallError = ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent

/** The table above, as data: a new error type does not compile until it is classified here. */
export const table: { readonly [Tag in CallError["_tag"]]: Outcome } = {
  UnknownTool: "NotRun",
  UnknownAgent: "NotRun",
  ToolNotFound: "NotRun",
  NotStarted: "NotRun",
  TransportError: "NotRun",
  ServerUnavailable: "NotRun",
  InitTimeout: "NotRun",
  InitNotification: "NotRun",
  CapabilityMissing: "NotRun",
  AuthRequired: "NotRun",
  SessionMissing: "NotRun",
  ToolCallFailed: "Answered",
  CallOutcomeUnknown: "MayHaveRun",
  ServerCrashed: "MayHaveRun",
  CallTimeout: "MayHaveRun"
}

/** The class of a call's error. */
export const outcome = (error: CallError): Outcome => table[error._tag]

/** True when the call provably never reached a server, so sending it again cannot run it twice. */
export const didNotRun = (error: CallError): boolean => table[error._tag] === "NotRun"

/** Who and what a call was: enough to name it in an error. */
export interface Call {
  readonly toolset: string
  readonly tool: string
  /** The caller's id of the call, the same on every delivery of it (the call ledger's key). */
  readonly callId: string
}

/** A call of unknown fate, saying why in a sentence led by the toolset's name. */
export const unknown = (call: Call, why: string, cause?: unknown): Toolset.CallOutcomeUnknown =>
  new Toolset.CallOutcomeUnknown({
    toolset: call.toolset,
    tool: call.tool,
    requestId: call.callId,
    message: `${call.toolset}: "${call.tool}" may or may not have run: ${why}`,
    cause
  })

/**
 * A failure of a call the runner had handed to the server: the server may have run it, unless
 * the toolset vetoed it before sending (`ToolNotFound`) or the server answered (`ToolCallFailed`).
 */
export const afterHandOff = (
  call: Call,
  error: Toolset.ToolError | LifecycleError.LifecycleError
): Toolset.ToolError | LifecycleError.LifecycleError =>
  error._tag === "ToolNotFound" || error._tag === "ToolCallFailed" || error._tag === "CallOutcomeUnknown"
    ? error
    : unknown(call, `${error._tag}: ${error.message}`, error)

/** What the cluster client fails with when it could not hand a message to the entity. */
export type Undelivered =
  | ClusterError.MailboxFull
  | ClusterError.AlreadyProcessingMessage
  | ClusterError.PersistenceError
  | ClusterError.EntityNotAssignedToRunner

/**
 * A cluster failure of a call, classified. A full mailbox refused the message and an unassigned
 * entity was never reached: not run. `AlreadyProcessingMessage` means the same request is running
 * on the runner right now; a `PersistenceError` says nothing about where the message got to.
 */
export const undelivered = (
  call: Call,
  error: Undelivered
): LifecycleError.TransportError | Toolset.CallOutcomeUnknown => {
  switch (error._tag) {
    case "MailboxFull":
    case "EntityNotAssignedToRunner":
      return new LifecycleError.TransportError({
        toolset: call.toolset,
        message: `${call.toolset}: the cluster could not deliver "${call.tool}" (${error._tag}); it did not run`,
        cause: error
      })
    case "AlreadyProcessingMessage":
      return unknown(call, "the runner is already processing this same call", error)
    case "PersistenceError":
      return unknown(call, `the cluster's storage failed while sending it (${error.message})`, error)
  }
}
