/**
 * The Supervisor's state machine, as data and one pure function. A `Phase` holds exactly what is
 * valid in it — a backoff timer exists only in `Backoff`, a live session only in `Live` — and
 * `transition(machine, message)` returns the next machine and the commands to run. The actor in
 * `Supervisor.ts` owns the resources those commands name (connects, the live session, timers) by
 * id; it never decides anything itself. A message about work that is no longer current (an old
 * connect, a cancelled timer, an ended session) names an id the phase no longer holds, and is
 * ignored here.
 *
 * The transition table of DESIGN.md, row by row (`Phase.test.ts` walks every row):
 *
 * | from              | message                                   | to                                   |
 * |-------------------|-------------------------------------------|--------------------------------------|
 * | Stopped           | Start                                     | Starting (adopts a parked connect)   |
 * | Starting          | Connected ok                              | Live (Ready); waiters released after |
 * | Starting          | Connected fails, no retry                 | Stopped, error to the caller         |
 * | Starting          | Connected fails, retry (optional toolset) | Backoff (Restarting), error to caller|
 * | Starting          | StartupTimeout, no retry                  | Stopped; the connect stays parked    |
 * | Starting          | StartupTimeout, retry                     | Backoff; the connect is discarded    |
 * | Live              | Ended with error, Lost, policy allows     | Backoff (Restarting)                 |
 * | Live              | Ended cleanly                             | Backoff if `always`, else Failed     |
 * | Live              | Ended with a permanent error              | Failed, budget untouched             |
 * | Backoff           | BackoffElapsed                            | Reconnecting; restarts += 1          |
 * | Reconnecting      | Connected ok                              | Live (Ready)                         |
 * | Reconnecting      | Connected fails / StartupTimeout, budget  | Backoff, next delay                  |
 * | Reconnecting      | fails, budget spent or permanent          | Failed, last error kept              |
 * | Live              | Stable (Ready lasted `reset_after`)       | Live, attempt reset to 0             |
 * | Live (Ready)      | Probed fails                              | Live (Degraded)                      |
 * | Live (Degraded)   | Probed ok                                 | Live (Ready)                         |
 * | Live (Degraded)   | `health.failures` probe failures in a row | Reconnecting, counts as a restart    |
 * | Live              | Restart (forced)                          | Reconnecting at once                 |
 * | Backoff           | Restart (forced)                          | Reconnecting at once (wait cut short)|
 * | Starting/Reconn.  | Restart (forced)                          | unchanged: shares the connect        |
 * | Stopped / Failed  | Restart                                   | Starting                             |
 * | any               | Stop                                      | Stopped; everything in flight closed |
 */
import type * as Deferred from "effect/Deferred"
import * as LifecycleError from "./LifecycleError.ts"
import * as Policy from "./Policy.ts"
import type * as State from "./State.ts"

/** A late first connect kept while Stopped, for the next start to adopt instead of opening another. */
export interface Parked {
  readonly id: number
  readonly done: boolean
}

export type Phase =
  | { readonly _tag: "Stopped"; readonly parked: Parked | undefined }
  | { readonly _tag: "Failed" }
  /** A first start: its connect, and whether a failure backs off and retries (optional toolsets). */
  | { readonly _tag: "Starting"; readonly connect: number; readonly retry: boolean }
  | { readonly _tag: "Live"; readonly session: number; readonly probeFailures: number }
  | { readonly _tag: "Backoff"; readonly timer: number }
  | { readonly _tag: "Reconnecting"; readonly connect: number }

/** A reply to `start`/`restart`: completed once the toolset is Ready or cannot become Ready. */
export type Reply = Deferred.Deferred<void, LifecycleError.LifecycleError>

export type Message =
  | { readonly _tag: "Start"; readonly reply: Reply }
  | { readonly _tag: "Restart"; readonly reply: Reply }
  | { readonly _tag: "Stop" }
  | { readonly _tag: "Connected"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "StartupTimeout"; readonly id: number }
  /** The session ended by itself (`error` undefined: a clean close), or a request proved it lost. */
  | { readonly _tag: "Ended"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "BackoffElapsed"; readonly id: number }
  | { readonly _tag: "Probed"; readonly id: number; readonly error: LifecycleError.LifecycleError | undefined }
  | { readonly _tag: "Stable"; readonly id: number }
  | { readonly _tag: "ToolCount"; readonly id: number; readonly count: number }

/** What the actor does for a transition, in order. Ids name the resources it holds. */
export type Command =
  /** Open a connect with this id, and arm its startup deadline. */
  | { readonly _tag: "Connect"; readonly id: number }
  /** Re-arm the startup deadline of a connect already in flight (a start adopting it). */
  | { readonly _tag: "ArmStartup"; readonly id: number }
  /** Close a connect (in flight or parked) and its deadline; the close runs in the background. */
  | { readonly _tag: "Discard"; readonly id: number }
  /**
   * The connect's session becomes the live one: watch its end, its tool count, its health, and,
   * when the episode has restarts to forgive (`stable`), how long it lasts.
   */
  | { readonly _tag: "GoLive"; readonly id: number; readonly stable: boolean }
  /** Close the live session; requests in flight on it fail with `error`. */
  | { readonly _tag: "EndLive"; readonly error: LifecycleError.ServerCrashed | LifecycleError.NotStarted }
  /** Wait `Policy.delay(attempt)`, then post `BackoffElapsed` with this id. */
  | { readonly _tag: "Backoff"; readonly id: number; readonly attempt: number }
  | { readonly _tag: "CancelBackoff"; readonly id: number }
  /** Answer every waiting `start`/`restart` (`waiters`, taken off the machine). */
  | {
      readonly _tag: "Settle"
      readonly waiters: ReadonlyArray<Reply>
      readonly exit: "ready" | LifecycleError.LifecycleError
    }
  | { readonly _tag: "Warn"; readonly message: string }

/** Everything the actor knows besides resources: the phase and the counters a snapshot shows. */
export interface Machine {
  readonly phase: Phase
  /** Reconnects since the toolset was last started from Stopped or Failed. */
  readonly restarts: number
  /** Position in the current restart episode; back to 0 once Ready has lasted `reset_after`. */
  readonly attempt: number
  readonly error: LifecycleError.LifecycleError | undefined
  /** The live session's tool count as re-listed; undefined: what the session gave at handshake. */
  readonly toolCount: number | undefined
  readonly toolsVersion: number
  readonly waiters: ReadonlyArray<Reply>
  readonly nextId: number
}

export const initial: Machine = {
  phase: { _tag: "Stopped", parked: undefined },
  restarts: 0,
  attempt: 0,
  error: undefined,
  toolCount: undefined,
  toolsVersion: 0,
  waiters: [],
  nextId: 0
}

/** The state a snapshot shows for a machine. */
export const stateOf = (machine: Machine): State.State => {
  const phase = machine.phase
  switch (phase._tag) {
    case "Stopped":
    case "Failed":
    case "Starting":
      return phase._tag
    case "Live":
      return phase.probeFailures > 0 ? "Degraded" : "Ready"
    case "Backoff":
    case "Reconnecting":
      return "Restarting"
  }
}

export interface Step {
  readonly machine: Machine
  readonly commands: ReadonlyArray<Command>
}

/** What a transition needs to know about the toolset besides its machine. */
export interface Context {
  readonly name: string
  readonly policy: Policy.Policy
  /** The deadline error of a connect, built by the actor (it knows the configured duration). */
  readonly initTimeout: () => LifecycleError.InitTimeout
}

/** The pure transition: the next machine and the commands to run, in order. */
export const transition = (context: Context, machine: Machine, message: Message): Step => {
  const phase = machine.phase
  switch (message._tag) {
    case "Start":
      if (phase._tag === "Live")
        return { machine, commands: [{ _tag: "Settle", waiters: [message.reply], exit: "ready" }] }
      return phase._tag === "Stopped" || phase._tag === "Failed"
        ? beginStart(context, machine, [...machine.waiters, message.reply])
        : stay(wait(machine, message.reply))
    case "Restart":
      return onRestart(context, wait(machine, message.reply))
    case "Stop":
      return stop(context, machine)
    case "Connected":
      return onConnected(context, machine, message.id, message.error)
    case "StartupTimeout":
      return onStartupTimeout(context, machine, message.id)
    case "Ended":
      if (phase._tag !== "Live" || phase.session !== message.id) return stay(machine)
      return ended(context, machine, message.error)
    case "BackoffElapsed":
      return phase._tag === "Backoff" && phase.timer === message.id ? reconnect(machine, []) : stay(machine)
    case "Probed":
      if (phase._tag !== "Live" || phase.session !== message.id) return stay(machine)
      return onProbed(context, machine, phase, message.error)
    case "Stable":
      return phase._tag === "Live" && phase.session === message.id && machine.attempt !== 0
        ? stay({ ...machine, attempt: 0 })
        : stay(machine)
    case "ToolCount":
      return phase._tag === "Live" && phase.session === message.id
        ? stay({ ...machine, toolCount: message.count, toolsVersion: machine.toolsVersion + 1 })
        : stay(machine)
  }
}

const stay = (machine: Machine): Step => ({ machine, commands: [] })

const wait = (machine: Machine, reply: Reply): Machine => ({ ...machine, waiters: [...machine.waiters, reply] })

const notStarted = (context: Context, message: string, cause?: LifecycleError.LifecycleError) =>
  new LifecycleError.NotStarted({ toolset: context.name, message: `${context.name}: ${message}`, cause })

/** The commands that close whatever the phase holds. */
const release = (phase: Phase, error: LifecycleError.NotStarted): ReadonlyArray<Command> => {
  switch (phase._tag) {
    case "Stopped":
      return phase.parked === undefined ? [] : [{ _tag: "Discard", id: phase.parked.id }]
    case "Failed":
      return []
    case "Starting":
    case "Reconnecting":
      return [{ _tag: "Discard", id: phase.connect }]
    case "Live":
      return [{ _tag: "EndLive", error }]
    case "Backoff":
      return [{ _tag: "CancelBackoff", id: phase.timer }]
  }
}

/** Stopped/Failed → Starting: a fresh start, adopting a parked connect if there is one. */
const beginStart = (context: Context, machine: Machine, waiters: ReadonlyArray<Reply>): Step => {
  const parked = machine.phase._tag === "Stopped" ? machine.phase.parked : undefined
  if (parked?.done === true)
    return goLive({ ...machine, restarts: 0, attempt: 0, error: undefined, waiters }, parked.id)
  const connect = parked?.id ?? machine.nextId + 1
  const retry = !context.policy.required && context.policy.restart !== "never"
  return {
    machine: {
      ...machine,
      phase: { _tag: "Starting", connect, retry },
      restarts: 0,
      attempt: 0,
      error: undefined,
      waiters,
      nextId: Math.max(connect, machine.nextId)
    },
    commands: [parked === undefined ? { _tag: "Connect", id: connect } : { _tag: "ArmStartup", id: connect }]
  }
}

/** A connect's session becomes the live one; waiters are released after the state is Ready. */
const goLive = (machine: Machine, id: number): Step => ({
  machine: {
    ...machine,
    phase: { _tag: "Live", session: id, probeFailures: 0 },
    error: undefined,
    toolsVersion: machine.toolsVersion + 1,
    toolCount: undefined,
    waiters: []
  },
  // Only an episode with restarts has a step to reset: a first start arms no `reset_after` timer.
  commands: [{ _tag: "GoLive", id, stable: machine.attempt > 0 }, ...settle(machine, "ready")]
})

const settle = (machine: Machine, exit: "ready" | LifecycleError.LifecycleError): ReadonlyArray<Command> =>
  machine.waiters.length === 0 ? [] : [{ _tag: "Settle", waiters: machine.waiters, exit }]

/** Enters a terminal state and fails everyone waiting for Ready. */
const terminal = (
  context: Context,
  machine: Machine,
  phase: Phase,
  error: LifecycleError.LifecycleError | undefined,
  reason: string,
  before: ReadonlyArray<Command>
): Step => {
  const failure = error ?? notStarted(context, reason)
  const warn: ReadonlyArray<Command> =
    phase._tag === "Failed" ? [{ _tag: "Warn", message: `${context.name} failed: ${error?.message ?? reason}` }] : []
  return {
    machine: {
      ...machine,
      phase,
      error,
      waiters: [],
      attempt: phase._tag === "Stopped" ? 0 : machine.attempt
    },
    commands: [...before, ...settle(machine, failure), ...warn]
  }
}

const stop = (context: Context, machine: Machine): Step => ({
  machine: { ...machine, phase: { _tag: "Stopped", parked: undefined }, error: undefined, attempt: 0, waiters: [] },
  commands: [
    ...release(machine.phase, notStarted(context, "stopped while the request was in flight")),
    ...settle(machine, notStarted(context, "stopped"))
  ]
})

const onRestart = (context: Context, machine: Machine): Step => {
  const phase = machine.phase
  switch (phase._tag) {
    case "Stopped":
    case "Failed":
      return beginStart(context, machine, machine.waiters)
    case "Starting":
    case "Reconnecting":
      return stay(machine)
    case "Backoff":
      return reconnect(machine, [{ _tag: "CancelBackoff", id: phase.timer }])
    case "Live":
      return reconnect({ ...machine, attempt: 0, error: undefined }, [
        { _tag: "EndLive", error: notStarted(context, "restarted while the request was in flight") }
      ])
  }
}

/** One reconnect of the episode: it counts against the budget whether or not it succeeds. */
const reconnect = (machine: Machine, before: ReadonlyArray<Command>): Step => {
  const id = machine.nextId + 1
  return {
    machine: {
      ...machine,
      nextId: id,
      phase: { _tag: "Reconnecting", connect: id },
      attempt: machine.attempt + 1,
      restarts: machine.restarts + 1
    },
    commands: [...before, { _tag: "Connect", id }]
  }
}

/**
 * After a session ended or a reconnect failed: back off and reconnect, or go to Failed when the
 * error is permanent, the policy says never, or the budget is spent.
 */
const scheduleReconnect = (
  context: Context,
  machine: Machine,
  error: LifecycleError.LifecycleError | undefined,
  before: ReadonlyArray<Command>
): Step => {
  const { policy } = context
  const failed: Phase = { _tag: "Failed" }
  if (error !== undefined && LifecycleError.isPermanent(error)) {
    return terminal(context, machine, failed, error, "failed", before)
  }
  if (policy.restart === "never") {
    return terminal(context, machine, failed, error, "session ended (restart: never)", before)
  }
  const last = error ?? machine.error
  if (!Policy.hasBudget(policy, machine.attempt)) {
    return terminal(context, machine, failed, last, `gave up after ${machine.attempt} restarts`, before)
  }
  const id = machine.nextId + 1
  return {
    machine: { ...machine, nextId: id, phase: { _tag: "Backoff", timer: id }, error: last },
    commands: [...before, { _tag: "Backoff", id, attempt: machine.attempt }]
  }
}

/** The error requests in flight on a session that ended get: a crash, with its cause. */
const crashed = (context: Context, error: LifecycleError.LifecycleError | undefined) =>
  new LifecycleError.ServerCrashed({
    toolset: context.name,
    message: `${context.name}: session ended while the request was in flight${error ? `: ${error.message}` : ""}`,
    cause: error,
    ...(error?._tag === "ServerCrashed"
      ? {
          ...(error.exitCode === undefined ? {} : { exitCode: error.exitCode }),
          ...(error.signal === undefined ? {} : { signal: error.signal }),
          ...(error.stderr === undefined ? {} : { stderr: error.stderr })
        }
      : {})
  })

const ended = (context: Context, machine: Machine, error: LifecycleError.LifecycleError | undefined): Step => {
  const before: ReadonlyArray<Command> = [{ _tag: "EndLive", error: crashed(context, error) }]
  if (error === undefined && context.policy.restart !== "always") {
    return terminal(
      context,
      machine,
      { _tag: "Failed" },
      undefined,
      `session closed cleanly (restart: ${context.policy.restart})`,
      before
    )
  }
  return scheduleReconnect(context, machine, error, before)
}

const onConnected = (
  context: Context,
  machine: Machine,
  id: number,
  error: LifecycleError.LifecycleError | undefined
): Step => {
  const phase = machine.phase
  if (phase._tag === "Stopped" && phase.parked?.id === id) {
    // A late connect that finished while Stopped: kept for the next start, or let go if it failed.
    return error === undefined
      ? stay({ ...machine, phase: { _tag: "Stopped", parked: { id, done: true } } })
      : { machine: { ...machine, phase: { _tag: "Stopped", parked: undefined } }, commands: [{ _tag: "Discard", id }] }
  }
  if ((phase._tag !== "Starting" && phase._tag !== "Reconnecting") || phase.connect !== id) return stay(machine)
  if (error === undefined) return goLive(machine, id)
  return connectFailed(context, machine, error, [{ _tag: "Discard", id }])
}

const connectFailed = (
  context: Context,
  machine: Machine,
  error: LifecycleError.LifecycleError,
  before: ReadonlyArray<Command>
): Step => {
  const phase = machine.phase
  if (phase._tag !== "Starting") return scheduleReconnect(context, machine, error, before)
  if (!phase.retry || LifecycleError.isPermanent(error)) {
    return terminal(context, machine, { _tag: "Stopped", parked: undefined }, error, "start failed", before)
  }
  // An optional toolset: the caller learns of the failure now, and the Supervisor keeps trying by
  // the policy — a phase that `stop` ends, not a retry loop outside it.
  const next = scheduleReconnect(context, { ...machine, waiters: [] }, error, before)
  return { machine: next.machine, commands: [...settle(machine, error), ...next.commands] }
}

const onStartupTimeout = (context: Context, machine: Machine, id: number): Step => {
  const phase = machine.phase
  if ((phase._tag !== "Starting" && phase._tag !== "Reconnecting") || phase.connect !== id) return stay(machine)
  const error = context.initTimeout()
  if (phase._tag === "Starting" && !phase.retry) {
    // The first start keeps its connect running, so that a later start adopts it instead of
    // opening a second one.
    return terminal(context, machine, { _tag: "Stopped", parked: { id, done: false } }, error, "start timed out", [])
  }
  // A connect that hangs while the Supervisor retries is abandoned and counts as a failed attempt.
  return connectFailed(context, machine, error, [{ _tag: "Discard", id }])
}

const onProbed = (
  context: Context,
  machine: Machine,
  phase: Extract<Phase, { _tag: "Live" }>,
  error: LifecycleError.LifecycleError | undefined
): Step => {
  const health = context.policy.health
  if (error === undefined) {
    return phase.probeFailures === 0
      ? stay(machine)
      : stay({ ...machine, phase: { ...phase, probeFailures: 0 }, error: undefined })
  }
  const failures = phase.probeFailures + 1
  if (failures < (health?.failures ?? 1)) {
    return stay({ ...machine, phase: { ...phase, probeFailures: failures }, error })
  }
  const before: ReadonlyArray<Command> = [
    { _tag: "Warn", message: `${context.name}: ${failures} health probes failed in a row, restarting` },
    { _tag: "EndLive", error: crashed(context, error) }
  ]
  if (context.policy.restart === "never" || !Policy.hasBudget(context.policy, machine.attempt)) {
    return terminal(context, machine, { _tag: "Failed" }, error, "health probes failed", before)
  }
  return reconnect({ ...machine, error }, before)
}
