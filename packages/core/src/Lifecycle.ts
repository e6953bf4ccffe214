/**
 * The Supervisor's rules: one pure function from a machine and a message to the next machine and
 * the commands to run, in order (`Phase.ts` holds the data). A message about work that is no
 * longer current (an old connect, a cancelled timer, an ended session) names an id the phase no
 * longer holds, and is ignored here.
 *
 * The transition table of DESIGN.md, row by row (`Lifecycle.test.ts` walks every row):
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
import * as LifecycleError from "./LifecycleError.ts"
import type * as Phase from "./Phase.ts"
import * as Policy from "./Policy.ts"

/** The pure transition: the next machine and the commands to run, in order. */
export const transition = (context: Phase.Context, machine: Phase.Machine, message: Phase.Message): Phase.Step => {
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

const stay = (machine: Phase.Machine): Phase.Step => ({ machine, commands: [] })

const wait = (machine: Phase.Machine, reply: Phase.Reply): Phase.Machine => ({
  ...machine,
  waiters: [...machine.waiters, reply]
})

/** The commands that close whatever the phase holds. */
const release = (phase: Phase.Phase, error: LifecycleError.NotStarted): ReadonlyArray<Phase.Command> => {
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
const beginStart = (
  context: Phase.Context,
  machine: Phase.Machine,
  waiters: ReadonlyArray<Phase.Reply>
): Phase.Step => {
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
const goLive = (machine: Phase.Machine, id: number): Phase.Step => ({
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

const settle = (machine: Phase.Machine, exit: "ready" | LifecycleError.LifecycleError): ReadonlyArray<Phase.Command> =>
  machine.waiters.length === 0 ? [] : [{ _tag: "Settle", waiters: machine.waiters, exit }]

/** Enters a terminal state and fails everyone waiting for Ready. */
const terminal = (
  context: Phase.Context,
  machine: Phase.Machine,
  phase: Phase.Phase,
  error: LifecycleError.LifecycleError | undefined,
  reason: string,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
  const failure = error ?? LifecycleError.notStarted(context.name, reason)
  const warn: ReadonlyArray<Phase.Command> =
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

const stop = (context: Phase.Context, machine: Phase.Machine): Phase.Step => ({
  machine: { ...machine, phase: { _tag: "Stopped", parked: undefined }, error: undefined, attempt: 0, waiters: [] },
  commands: [
    ...release(machine.phase, LifecycleError.notStarted(context.name, "stopped while the request was in flight")),
    ...settle(machine, LifecycleError.notStarted(context.name, "stopped"))
  ]
})

const onRestart = (context: Phase.Context, machine: Phase.Machine): Phase.Step => {
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
        { _tag: "EndLive", error: LifecycleError.notStarted(context.name, "restarted while the request was in flight") }
      ])
  }
}

/** One reconnect of the episode: it counts against the budget whether or not it succeeds. */
const reconnect = (machine: Phase.Machine, before: ReadonlyArray<Phase.Command>): Phase.Step => {
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
  context: Phase.Context,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError | undefined,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
  const { policy } = context
  const failed: Phase.Phase = { _tag: "Failed" }
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

const ended = (
  context: Phase.Context,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
  const before: ReadonlyArray<Phase.Command> = [
    { _tag: "EndLive", error: LifecycleError.crashedInFlight(context.name, error) }
  ]
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
  context: Phase.Context,
  machine: Phase.Machine,
  id: number,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
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
  context: Phase.Context,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
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

const onStartupTimeout = (context: Phase.Context, machine: Phase.Machine, id: number): Phase.Step => {
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
  context: Phase.Context,
  machine: Phase.Machine,
  phase: Extract<Phase.Phase, { _tag: "Live" }>,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
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
  const before: ReadonlyArray<Phase.Command> = [
    { _tag: "Warn", message: `${context.name}: ${failures} health probes failed in a row, restarting` },
    { _tag: "EndLive", error: LifecycleError.crashedInFlight(context.name, error) }
  ]
  if (context.policy.restart === "never" || !Policy.hasBudget(context.policy, machine.attempt)) {
    return terminal(context, machine, { _tag: "Failed" }, error, "health probes failed", before)
  }
  return reconnect({ ...machine, error }, before)
}
