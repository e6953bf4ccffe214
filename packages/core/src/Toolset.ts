/**
 * What every toolset offers an agent, whatever its transport: a supervised lifecycle, a tool
 * listing that says when it is incomplete, and tool calls with typed errors. Tools and results
 * take MCP's shape, which LSP toolsets adopt too, so one catalog can serve both.
 */
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as CallOrigin from "./CallOrigin.ts"
import type * as LifecycleError from "./LifecycleError.ts"
import type * as State from "./State.ts"
import type * as Supervisor from "./Supervisor.ts"

/** MCP's hints about a tool, as its server declares them: advice, not a guarantee (see `isSafeToRepeat`). */
export interface ToolAnnotations {
  readonly title?: string | undefined
  readonly readOnlyHint?: boolean | undefined
  readonly destructiveHint?: boolean | undefined
  readonly idempotentHint?: boolean | undefined
  readonly openWorldHint?: boolean | undefined
}

/** A tool as MCP describes it, whichever transport offers it: a name, and a JSON Schema for its arguments. */
export interface Tool {
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  /** A JSON Schema object for the arguments. */
  readonly inputSchema: { readonly [key: string]: unknown }
  readonly outputSchema?: { readonly [key: string]: unknown } | undefined
  readonly annotations?: ToolAnnotations | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/** A tool's answer. `isError: true` is a result the agent should read, not a failure of the call. */
export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  readonly structuredContent?: { readonly [key: string]: unknown } | undefined
  readonly isError?: boolean | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * A listing that knows whether it is whole. A toolset that is not Ready reports `complete: false`
 * with the reason, so a caller never mistakes "not started" for "has no tools".
 */
export type Listing<A> =
  | { readonly complete: true; readonly items: ReadonlyArray<A> }
  | { readonly complete: false; readonly items: ReadonlyArray<A>; readonly reason: LifecycleError.NotStarted }

/** The toolset has no tool of that name. */
export class ToolNotFound extends Schema.TaggedError<ToolNotFound>()("ToolNotFound", {
  toolset: Schema.String,
  tool: Schema.String,
  message: Schema.String
}) {}

/** The server answered the call with a protocol error (bad arguments, internal error); the session is fine. */
export class ToolCallFailed extends Schema.TaggedError<ToolCallFailed>()("ToolCallFailed", {
  toolset: Schema.String,
  tool: Schema.String,
  message: Schema.String,
  /** The JSON-RPC error code, e.g. -32602 for invalid params. */
  code: Schema.optionalKey(Schema.Number),
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * The call may or may not have run: it was re-delivered after the process that ran it died, or it
 * ended (a crash, a deadline, a lost runner) after it was sent, and running it again could repeat
 * its side effects.
 */
export class CallOutcomeUnknown extends Schema.TaggedError<CallOutcomeUnknown>()("CallOutcomeUnknown", {
  toolset: Schema.String,
  tool: Schema.String,
  message: Schema.String,
  /** The id the call was first delivered with, as the call ledger recorded it. */
  requestId: Schema.String,
  /** What ended the call, when something did (a crash, a deadline, a lost runner). */
  cause: Schema.optional(Schema.Defect())
}) {}

/** Every way a call can fail that is about the tool rather than the toolset's lifecycle. */
export const ToolError = Schema.Union([ToolNotFound, ToolCallFailed, CallOutcomeUnknown])

export type ToolError = typeof ToolError.Type

/** A progress notification of the server for one call (MCP's `notifications/progress`). */
export interface Progress {
  readonly progress: number
  readonly total?: number | undefined
  readonly message?: string | undefined
}

/** What a call can carry besides its arguments; a toolset without the notion ignores it. */
export interface CallOptions {
  /** Called with each progress notification of the call, in the order the server sent them. */
  readonly onProgress?: ((progress: Progress) => void) | undefined
  /** Passed to the server as the request's `_meta`, as is. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
  /**
   * Run the call as an MCP task when the tool lists `taskSupport` `optional` (a tool that
   * requires one always runs as a task): what the gateway asks for a client that asked for a task.
   */
  readonly task?: boolean | undefined
}

/**
 * The contract the runtime builds its catalog on: a supervised lifecycle, a listing that says
 * when it is incomplete, and calls whose failures are typed. MCP and LSP toolsets implement it.
 */
export interface Toolset {
  readonly name: string
  readonly kind: string
  readonly start: Effect.Effect<void, LifecycleError.LifecycleError>
  readonly stop: Effect.Effect<void>
  readonly restart: Effect.Effect<void, LifecycleError.LifecycleError>
  readonly state: Effect.Effect<State.StatusSnapshot>
  readonly changes: Stream.Stream<State.StatusSnapshot>
  readonly events: Stream.Stream<State.Transition>
  /** The tools of the live session; incomplete (never empty-as-if-whole) while not Ready. */
  readonly tools: Effect.Effect<Listing<Tool>, LifecycleError.LifecycleError>
  readonly callTool: (
    name: string,
    args: { readonly [key: string]: unknown },
    options?: CallOptions
  ) => Effect.Effect<ToolResult, ToolError | LifecycleError.LifecycleError>
  /**
   * The last lines the toolset's latest server process wrote to stderr, oldest first, kept after
   * it died (that is when they matter); absent for a toolset without a local process of its own.
   */
  readonly stderr?: Effect.Effect<ReadonlyArray<string>>
  /**
   * The same call for a caller that lives in Promises (an MCP server's handler), sent at once
   * without entering the Effect runtime while nothing has to wait: the toolset is usable (it ends
   * with the session, as in `Supervisor.use`). `undefined` when the call must go through `callTool`. A
   * failure is recovered exactly as `callTool` recovers it (in the runtime, since it is rare), and
   * the promise never rejects: it resolves with the call's `Exit`. `signal` cancels the call;
   * `origin` is the caller's, as `CallOrigin.Current` is for `callTool`.
   */
  readonly callToolNow?: (
    name: string,
    args: { readonly [key: string]: unknown },
    signal?: AbortSignal,
    origin?: CallOrigin.CallOrigin
  ) => Promise<Exit.Exit<ToolResult, ToolError | LifecycleError.LifecycleError>> | undefined
}

/** The start, stop, restart and state half of a toolset, delegated as is to the supervisor that runs it. */
export const supervisedBy = <A>(
  supervisor: Supervisor.Supervisor<A>
): Pick<Toolset, "start" | "stop" | "restart" | "state" | "changes" | "events"> => ({
  start: supervisor.start,
  stop: supervisor.stop,
  restart: supervisor.restart,
  state: supervisor.state,
  changes: supervisor.changes,
  events: supervisor.events
})

/** Whether the server says a tool can run twice without harm, so a call of unknown fate may be sent again. */
export const isSafeToRepeat = (tool: Tool | undefined): boolean =>
  tool?.annotations?.readOnlyHint === true || tool?.annotations?.idempotentHint === true

/**
 * OpenAI-style clients send explicit nulls for omitted optional arguments; servers reject them.
 * Arguments without a null (nearly every call) are passed on as they are, without a copy.
 */
export const stripNulls = (args: { readonly [key: string]: unknown }): { readonly [key: string]: unknown } => {
  for (const key in args) {
    if (args[key] === null && Object.hasOwn(args, key)) {
      return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== null))
    }
  }
  return args
}
