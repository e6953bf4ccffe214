/**
 * An MCP server as a supervised toolset: a Supervisor over `McpConnector`, with tool and prompt
 * listings that say when they are incomplete, and tool calls that are never run twice behind
 * the caller's back. A call is sent again only when it provably never reached a live session
 * (the server rejected the session id, or refused the connection), or when the tool declares
 * itself read-only or idempotent.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { type LoggingLevel, McpError } from "@modelcontextprotocol/sdk/types.js"
import {
  CallOrigin,
  Classify,
  Deadline,
  JsonLimits,
  LifecycleError,
  Policy,
  RawMessage,
  Redaction,
  State,
  Supervisor,
  Toolset
} from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as ClientFeatures from "./ClientFeatures.ts"
import { CallSignal } from "./internal/callSignal.ts"
import * as ClientRequests from "./internal/clientFeatures.ts"
import * as Origins from "./internal/origins.ts"
import { NotDelivered } from "./internal/pipeTransport.ts"
import * as SchemaError from "./internal/schemaError.ts"
import * as SendGuard from "./internal/sendGuard.ts"
import * as SendNow from "./internal/sendNow.ts"
import * as TaskCall from "./internal/taskCall.ts"
import * as McpConnector from "./McpConnector.ts"
import * as McpSpec from "./McpSpec.ts"
import * as McpSurfaces from "./McpSurfaces.ts"
import * as Roots from "./Roots.ts"

/** What an MCP toolset is built from. */
export interface Options {
  readonly name: string
  readonly spec: McpSpec.McpSpec
  readonly policy?: Policy.Policy
  readonly clientInfo?: { readonly name: string; readonly version: string }
  readonly listChangedDebounce?: Duration.Input
  /** The level of the server's log messages asked for on every session (`logging/setLevel`). */
  readonly logLevel?: LoggingLevel | undefined
  /**
   * What the client offers the server (sampling, elicitation, roots); by default the services
   * of `ClientFeatures` provided where the toolset is made. Only these are declared.
   */
  readonly features?: ClientFeatures.Features | undefined
  /** The folders `Roots.layer` answers with; by default the folder the server runs in. */
  readonly roots?: ReadonlyArray<string> | undefined
}

/** An MCP server as a toolset: its tools, and its prompts, resources and logs. */
export interface McpToolset extends Toolset.Toolset, McpSurfaces.Surfaces {
  readonly supervisor: Supervisor.Supervisor<McpConnector.McpSession>
  readonly callToolNow: NonNullable<Toolset.Toolset["callToolNow"]>
  /** `callTool` with progress notifications and `_meta`; recovered and bounded the same way. */
  readonly callToolWith: (
    name: string,
    args: { readonly [key: string]: unknown },
    options: CallOptions
  ) => Effect.Effect<Toolset.ToolResult, Toolset.ToolError | LifecycleError.LifecycleError>
}

/** Probes for remote sessions, whose death the SDK transports may never report. */
const remoteHealth: Policy.Health = { interval: Duration.seconds(15), timeout: Duration.seconds(5), failures: 2 }

/**
 * Remote servers close idle streams cleanly, so a clean close reconnects (unless the user chose
 * `never`), and a health probe runs unless the user set one.
 */
export const effectivePolicy = (spec: McpSpec.McpSpec, policy: Policy.Policy): Policy.Policy =>
  McpSpec.isRemote(spec)
    ? {
        ...policy,
        restart: policy.restart === "on_failure" ? "always" : policy.restart,
        health: policy.health ?? remoteHealth
      }
    : policy

/** The SDK's code for the requests its session's end rejects (JSON-RPC's generic "server error"). */
const connectionClosed = -32000

/** The SDK's code for a request that ran past its `timeout`. */
const requestTimeout = -32001

/**
 * Whether an `McpError` is the SDK's own word on a request rather than the server's answer: a
 * server may answer with the same codes (-32000 is JSON-RPC's generic "server error"), and taking
 * its answer for a lost session would hold the call until its deadline. The SDK rejects with
 * -32000 only once the session is gone (its client has no transport any more) and with -32001 when
 * the timeout it was given, the deadline's, ran out; a timer may fire a little before `Date.now()`
 * reaches the deadline, hence the slack (a tenth of the call's time, at most a second).
 */
const sdkOwn = (cause: McpError, session: McpConnector.McpSession, deadline: Deadline.Deadline | undefined) =>
  cause.code === connectionClosed
    ? McpConnector.closedUnder(cause, session.client)
    : cause.code === requestTimeout &&
      deadline !== undefined &&
      Deadline.remaining(deadline) <= Math.min(1_000, deadline.millis / 10)

/** JSON-RPC's code for arguments that are not acceptable. */
const invalidParams = -32602

/**
 * A server's answer as words: the SDK prefixes `MCP error <code>: `, and a server on the SDK
 * answers with its own McpError's message, prefix included, so the prefix came twice.
 */
const answered = (error: McpError): string => error.message.replace(/^(MCP error -?\d+: )\1+/, "$1")

/** How one attempt of a call can fail. */
type AttemptError =
  | Toolset.ToolNotFound
  | Toolset.ToolCallFailed
  | Toolset.CallOutcomeUnknown
  | LifecycleError.LifecycleError

/**
 * One call as it goes: its arguments, the session it was sent on, whether sending it twice is
 * harmless, and its deadline, which a resend keeps.
 */
interface Call {
  readonly tool: string
  readonly args: { readonly [key: string]: unknown }
  /** Set only by `callToolWith`, so a plain call builds nothing more. */
  readonly with?: CallOptions | undefined
  session: McpConnector.McpSession | undefined
  safeToResend: boolean
  /** The tool must run as an MCP task (`TaskCall`); set from the session's listing. */
  task: boolean
  /** The task the server created for the call: a resend follows it rather than create another. */
  taskId: string | undefined
  deadline: Deadline.Deadline | undefined
}

/** A progress notification of the server for one call (`notifications/progress`). */
export type Progress = Toolset.Progress

/** What a call can carry besides its arguments: a progress listener, `_meta`. */
export type CallOptions = Toolset.CallOptions

/** A supervised MCP toolset, in the current scope (closing it stops the server); nothing starts until `start`. */
export const make = (options: Options): Effect.Effect<McpToolset, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, spec } = options
    const policy = effectivePolicy(spec, options.policy ?? Policy.defaults)
    const remote = McpSpec.isRemote(spec)
    const features = options.features ?? (yield* ClientFeatures.current)
    const origins = Origins.make()
    const attributed = ClientFeatures.needsOrigin(features)
    const runExitIn = Effect.runPromiseExitWith(yield* Effect.context<never>())
    let client: Client | undefined
    const provides = ClientRequests.provides(
      { name, features, roots: rootsOf(spec, options.roots), attribution: origins.now },
      (effect, signal) => runExitIn(effect, { signal })
    )
    yield* ClientRequests.followRoots(features, () => client)
    const surfaces = yield* McpSurfaces.make({
      name,
      logLevel: options.logLevel,
      remote,
      failure: (subject, cause, deadline, session) => callFailure(subject, cause, deadline, session),
      provides: (next) => {
        client = next
        return provides(next)
      }
    })
    const supervisor = yield* Supervisor.make({
      name,
      kind: McpSpec.kind(spec),
      policy,
      connector: McpConnector.make({
        name,
        spec,
        ...(options.clientInfo === undefined ? {} : { clientInfo: options.clientInfo }),
        ...(options.listChangedDebounce === undefined ? {} : { listChangedDebounce: options.listChangedDebounce }),
        hooks: surfaces.hooks
      })
    })
    surfaces.bind(supervisor)

    const callMillis = policy.callTimeout === undefined ? undefined : Duration.toMillis(policy.callTimeout)
    const bounded = Deadline.bound(name)

    const incomplete = (reason: LifecycleError.NotStarted) => ({ complete: false as const, items: [], reason })

    /** A listing of the live session, or an incomplete one at once when the toolset is not usable. */
    const listing = <A>(
      read: (session: McpConnector.McpSession) => Effect.Effect<ReadonlyArray<A>, LifecycleError.LifecycleError>
    ): Effect.Effect<Toolset.Listing<A>, LifecycleError.LifecycleError> =>
      Effect.gen(function* () {
        const status = yield* supervisor.state
        if (!State.isUsable(status.state)) {
          return incomplete(LifecycleError.notStarted(name, `not ready (${status.state})`))
        }
        const items = yield* supervisor.use(read)
        return { complete: true as const, items }
      }).pipe(Effect.catchTag("NotStarted", (reason) => Effect.succeed(incomplete(reason))))

    /**
     * The server's answer to the request is the caller's business; anything else is a lifecycle
     * failure. The SDK's "Not connected" (the transport closed before the request was sent) and a
     * write into a pipe nobody reads any more mean the request provably never reached the server:
     * it is handled as a lost session and may be sent again. An answer too big or too deep to
     * read fails the call alone, saying that it ran: the session is fine. An error the server
     * answered with is the caller's, whatever its code (`sdkOwn`).
     */
    const callFailure = (
      tool: string,
      cause: unknown,
      deadline: Deadline.Deadline | undefined,
      session: McpConnector.McpSession
    ): Toolset.ToolCallFailed | LifecycleError.LifecycleError => {
      const refused = refusalOf(cause)
      if (refused !== undefined) return refusedAnswer(tool, refused)
      if (cause instanceof SendGuard.Unsendable) {
        const message = `${name}/${tool}: ${cause.message}, so it did not run`
        return new Toolset.ToolCallFailed({ toolset: name, tool, message, code: invalidParams, cause })
      }
      const invalid = SchemaError.firstIssue(cause)
      if (invalid !== undefined) {
        const message = `${name}/${tool}: the server's answer is not a valid tool result (${Redaction.redact(invalid)}); the call ran, but its answer was dropped`
        return new Toolset.ToolCallFailed({ toolset: name, tool, message, cause })
      }
      return cause instanceof NotDelivered || (cause instanceof Error && cause.message === "Not connected")
        ? new LifecycleError.SessionMissing({
            toolset: name,
            message: `${name}: the session closed before "${tool}" was sent`,
            cause
          })
        : cause instanceof McpError && sdkOwn(cause, session, deadline)
          ? cause.code === requestTimeout
            ? Deadline.exceeded(name, deadline ?? { millis: McpConnector.noSdkTimeout })
            : Classify.classify(name, cause)
          : cause instanceof McpError
            ? new Toolset.ToolCallFailed({
                toolset: name,
                tool,
                message: `${name}/${tool}: ${Redaction.redact(answered(cause))}`,
                code: cause.code,
                cause
              })
            : Classify.classify(name, cause)
    }

    /** A tool call's failure: `callFailure`, or a task the server no longer knows, which may have run. */
    const toolCallFailure = (
      tool: string,
      cause: unknown,
      deadline: Deadline.Deadline | undefined,
      session: McpConnector.McpSession
    ): AttemptError =>
      cause instanceof TaskCall.TaskUnknown
        ? new Toolset.CallOutcomeUnknown({
            toolset: name,
            tool,
            message: `${name}/${tool}: ${cause.message} (it restarted, or the task expired), so the call may have run`,
            requestId: cause.taskId,
            cause
          })
        : callFailure(tool, cause, deadline, session)

    const refusedAnswer = (tool: string, refused: RawMessage.Refused) =>
      new Toolset.ToolCallFailed({
        toolset: name,
        tool,
        message: `${name}/${tool}: the server's answer is ${refused.message}; the call ran, but its answer was dropped`,
        cause: refused
      })

    /**
     * The current listing by name, built once per listing: a listing is replaced, never changed,
     * so a call costs one map lookup however many tools the server has.
     */
    let indexed: { readonly tools: ReadonlyArray<Toolset.Tool>; readonly byName: Map<string, Toolset.Tool> } | undefined
    const toolNamed = (tools: ReadonlyArray<Toolset.Tool>, tool: string) => {
      if (indexed?.tools !== tools) {
        const byName = new Map<string, Toolset.Tool>()
        for (const t of tools) if (!byName.has(t.name)) byName.set(t.name, t)
        indexed = { tools, byName }
      }
      return indexed.byName.get(tool)
    }

    const toolNotFound = (known: ReadonlyArray<Toolset.Tool>, tool: string) => {
      const names = known.map((t) => t.name)
      const shown = `${names.slice(0, 20).join(", ")}${names.length > 20 ? ", …" : ""}`
      return new Toolset.ToolNotFound({
        toolset: name,
        tool,
        message: `${name}: no tool named "${tool}" (it has ${names.length}: ${shown})`
      })
    }

    /**
     * Sends a call on a session: a plain promise. The SDK enforces what is left of the call's
     * deadline with a plain timer (mapped to CallTimeout) and rejects a pending request as soon as
     * its session closes, so a call on a stdio session needs no fiber of its own.
     */
    const send = (
      session: McpConnector.McpSession,
      call: Call,
      deadline: Deadline.Deadline | undefined,
      signal?: AbortSignal
    ) => {
      const options = SendNow.sdkOptions(deadline, signal)
      const sent =
        call.taskId !== undefined
          ? TaskCall.follow(session.client, call.tool, call.taskId, taskOptions(call, deadline, signal))
          : call.task
            ? TaskCall.call(
                session.client,
                { name: call.tool, arguments: call.args },
                taskOptions(call, deadline, signal)
              )
            : call.with === undefined
              ? plain(session, call, options)
              : withOptions(session, call, call.with, options)
      return remote ? sent.then(withinDepth) : sent
    }

    const taskOptions = (
      call: Call,
      deadline: Deadline.Deadline | undefined,
      signal: AbortSignal | undefined
    ): TaskCall.Options => ({
      signal,
      until: deadline === undefined ? undefined : Date.now() + Deadline.remaining(deadline),
      _meta: call.with?._meta,
      created: (taskId) => {
        call.taskId = taskId
      }
    })

    const plain = (session: McpConnector.McpSession, call: Call, options: SendNow.SdkOptions) =>
      session.client.callTool({ name: call.tool, arguments: call.args }, undefined, options)

    /**
     * A call with `_meta` or a progress listener. Its progress token is ours, routed by the
     * session as each message arrives, and dropped when the call ends (on this session).
     */
    const withOptions = (
      session: McpConnector.McpSession,
      call: Call,
      extra: CallOptions,
      options: SendNow.SdkOptions
    ) => {
      const { onProgress } = extra
      const token = onProgress === undefined ? undefined : `${name}-${++progressTokens}`
      const untrack =
        token === undefined || onProgress === undefined
          ? undefined
          : session.progress.track(token, ({ progress, total, message }) => onProgress({ progress, total, message }))
      const meta = { ...extra._meta, ...(token === undefined ? {} : { progressToken: token }) }
      const sent = session.client.callTool({ name: call.tool, arguments: call.args, _meta: meta }, undefined, options)
      return untrack === undefined ? sent : sent.finally(untrack)
    }
    let progressTokens = 0

    /**
     * Checks the call against the session's current listing and records the session in the call.
     * Only a current listing may veto a call: a stale one would miss a tool just added.
     */
    const prepare = (call: Call, session: McpConnector.McpSession): Toolset.ToolNotFound | undefined => {
      call.session = session
      const known = session.tools.currentUnsafe()
      const found = known === undefined ? undefined : toolNamed(known, call.tool)
      if (known !== undefined && found === undefined) return toolNotFound(known, call.tool)
      call.safeToResend = Toolset.isSafeToRepeat(found)
      call.task = TaskCall.required(found) || (call.with?.task === true && TaskCall.supported(found))
      return undefined
    }

    /**
     * One attempt on the live session, under the deadline `Supervisor.use` gives it (the caller's,
     * the first attempt's on a resend, or `call_timeout` from now), which the call keeps; the
     * request bounds itself by it. Interrupting it aborts the request (the SDK tells the server),
     * through a `CallSignal`. The answer is mapped as it resumes the fiber, with no promise of its
     * own in between.
     */
    const attempt = (call: Call) =>
      supervisor.use((session, deadline): Effect.Effect<Toolset.ToolResult, AttemptError> => {
        call.deadline = deadline
        const notFound = prepare(call, session)
        if (notFound !== undefined) return Effect.fail(notFound)
        return Effect.callback<Toolset.ToolResult, AttemptError>((resume) => {
          const signal = new CallSignal()
          send(session, call, deadline, signal).then(
            (result) => resume(Effect.succeed(toToolResult(result))),
            // Classified in the fiber, where a defect in classifying cannot leave the call hanging.
            (cause) => resume(Effect.suspend(() => Effect.fail(toolCallFailure(call.tool, cause, deadline, session))))
          )
          return Effect.sync(() => signal.abort())
        })
      })

    /**
     * Recovery from a failed attempt, by what the failure proves; its effects are built only when
     * an attempt fails, so a call that succeeds costs one Effect operation per layer.
     *
     * A failure that says the session is gone is reported to the Supervisor (`lost`), which
     * records the crash once, with its real cause; the call never restarts anything itself. It is
     * sent again, on the next session and within the same deadline, only when it provably never
     * reached the server or the tool says running it twice is harmless; otherwise it fails with
     * the crash as the Supervisor recorded it. The wait for the crash and the resend run under the
     * call's deadline: one budget for the whole call.
     *
     * A task the server created is never created again behind the caller's back: over HTTP the
     * server may still know it, so the call follows it on the next session (`TaskCall.follow`),
     * and fails at once with `CallOutcomeUnknown` if the server no longer does. A local server's
     * tasks die with its process.
     */
    const recover = (call: Call, error: AttemptError): Effect.Effect<Toolset.ToolResult, AttemptError> => {
      /** Tells the Supervisor, then resends or fails with the crash it recorded. */
      const afterLoss = (lostBy: LifecycleError.LifecycleError, neverSent: boolean) => {
        const session = call.session
        if (session === undefined) return Effect.fail(lostBy)
        // A local process reports its own death with its exit; a remote session may never.
        const lost = bounded(supervisor.lost(session, remote ? lostBy : undefined))
        const again = call.taskId === undefined ? neverSent || call.safeToResend : remote || call.safeToResend
        if (!remote) call.taskId = undefined
        const next = Effect.flatMap(lost, (crash) => (again ? attempt(call) : Effect.fail(crash)))
        return call.deadline === undefined ? next : Effect.provideService(next, Deadline.Current, call.deadline)
      }
      switch (error._tag) {
        case "SessionMissing":
          return afterLoss(error, true)
        case "ServerUnavailable":
          return remote ? afterLoss(error, true) : Effect.fail(error)
        case "ServerCrashed":
          return afterLoss(error, false)
        case "TransportError":
          // Over HTTP one failed request does not prove the session dead; the probe decides. A
          // task's poll is another matter: the task is followed on a session that answers.
          return remote && !call.safeToResend && call.taskId === undefined
            ? Effect.fail(error)
            : afterLoss(error, false)
        default:
          return Effect.fail(error)
      }
    }

    /**
     * Arguments nested too deep for the recursive code on their way (serialization, validation)
     * are refused before anything is sent, so the call provably did not run.
     */
    const tooDeep = (tool: string, args: { readonly [key: string]: unknown }) =>
      JsonLimits.isTooDeep(args)
        ? new Toolset.ToolCallFailed({
            toolset: name,
            tool,
            message: `${name}/${tool}: the arguments are nested deeper than ${JsonLimits.maxDepth} levels, the limit; they were not sent, so the call did not run`,
            code: invalidParams
          })
        : undefined

    const callOf = (
      tool: string,
      args: { readonly [key: string]: unknown },
      deadline: Deadline.Deadline | undefined,
      options?: CallOptions
    ): Call => ({
      tool,
      args: Toolset.stripNulls(args),
      with: options,
      session: undefined,
      safeToResend: false,
      task: false,
      taskId: undefined,
      deadline
    })

    const callTool = (tool: string, args: { readonly [key: string]: unknown }, options?: CallOptions) => {
      const refused = tooDeep(tool, args)
      if (refused !== undefined) return Effect.fail(refused)
      const call = callOf(tool, args, undefined, options)
      const run = Effect.catch(attempt(call), (error) => recover(call, error))
      // Counted only when a server request may need to know whose call it is.
      return attributed
        ? Effect.withFiber((fiber) => {
            const leave = origins.enter(fiber.getRef(CallOrigin.Current))
            return Effect.ensuring(run, Effect.sync(leave))
          })
        : run
    }

    /** What runs a failed fast call's recovery: the context the toolset was made in (its logger, its clock). */
    const runExit = Effect.runPromiseExitWith(yield* Effect.context<never>())

    const callToolNow = (
      tool: string,
      args: { readonly [key: string]: unknown },
      signal?: AbortSignal,
      origin?: CallOrigin.CallOrigin
    ) => {
      if (!attributed) return sendNow(tool, args, signal)
      const leave = origins.enter(origin)
      const sent = sendNow(tool, args, signal)
      if (sent !== undefined) return CallOrigin.leaving(sent, leave)
      leave()
      return undefined
    }

    const sendNow = (tool: string, args: { readonly [key: string]: unknown }, signal?: AbortSignal) => {
      const refused = tooDeep(tool, args)
      if (refused !== undefined) return Promise.resolve(Exit.fail(refused))
      const now = supervisor.liveNow()
      if (now === undefined) return undefined
      const deadline = callMillis === undefined ? undefined : Deadline.after(callMillis)
      const call = callOf(tool, args, deadline)
      const notFound = prepare(call, now.handle)
      if (notFound !== undefined) return Promise.resolve(Exit.fail(notFound))
      return SendNow.settle(now, send(now.handle, call, deadline, signal), {
        signal,
        succeeded: toToolResult,
        failure: (cause): AttemptError => toolCallFailure(tool, cause, deadline, now.handle),
        recover: (error) => runExit(recover(call, error))
      })
    }

    return {
      name,
      kind: McpSpec.kind(spec),
      supervisor,
      ...Toolset.supervisedBy(supervisor),
      tools: listing((session) => session.tools.get),
      callTool,
      callToolWith: callTool,
      callToolNow,
      ...surfaces.surfaces
    } satisfies McpToolset
  })

/** The default roots: the folders given, or the one the server runs in (this process's for a remote one). */
const rootsOf = (spec: McpSpec.McpSpec, folders: ReadonlyArray<string> | undefined) =>
  [...new Set(folders ?? [spec._tag === "stdio" ? (spec.cwd ?? process.cwd()) : process.cwd()])].map(Roots.ofFolder)

/** What the SDK's `callTool` resolves with. */
type SdkResult = Awaited<ReturnType<Client["callTool"]>>

/** The refusal a failure carries: a remote answer too deep, or an answer the stdio transport refused. */
const refusalOf = (cause: unknown): RawMessage.Refused | undefined =>
  cause instanceof RawMessage.Refused
    ? cause
    : cause instanceof McpError && cause.data instanceof RawMessage.Refused
      ? cause.data
      : undefined

/**
 * A remote answer's depth, checked once the SDK has parsed it (without recursion: `JSON.parse` is
 * iterative and the SDK's schemas stop at the result's open fields) and before anything recursive
 * (a serializer, a schema) walks it. The stdio transport checks the raw line instead.
 */
const withinDepth = (result: SdkResult): Promise<SdkResult> =>
  JsonLimits.isTooDeep(result) ? Promise.reject(new RawMessage.Refused(0, true)) : Promise.resolve(result)

/** Servers of the 2024-10-07 protocol answer `{ toolResult }`; it becomes one text item. */
const toToolResult = (result: SdkResult): Toolset.ToolResult =>
  "toolResult" in result ? { content: [{ type: "text", text: JSON.stringify(result.toolResult) }] } : result
