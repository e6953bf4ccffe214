/**
 * The Supervisor's rules: one pure function from a machine and a message to the next machine and
 * the commands to run, in order (`phase.ts` holds the data), and the table of every transition it
 * can make. The table is data, not prose: each step `transition` returns names the row it took
 * (`Step.rule`), and `Transitions.test.ts` checks, over every phase, message and policy it can
 * generate, that the function only ever moves as the row it names says — and walks every row.
 *
 * A message about work that is no longer current (an old connect, a cancelled timer, an ended
 * session) names an id the phase no longer holds, and is ignored (row `ignored`).
 */
import * as LifecycleError from "../LifecycleError.ts"
import * as Policy from "../Policy.ts"
import type * as Phase from "./phase.ts"

/**
 * Where a machine stands, finer than its `State`: a parked connect and the two halves of
 * Restarting lead to different rows.
 */
export type View =
  | "Stopped"
  /** A first start timed out; its connect runs on, for the next start to adopt. */
  | "Stopped, parked"
  /** That connect finished: its session waits, alive, for the next start. */
  | "Stopped, parked (connected)"
  | "Starting"
  | "Ready"
  | "Degraded"
  | "Restarting (backoff)"
  | "Restarting (reconnecting)"
  | "Failed"

export const viewOf = (machine: Phase.Machine): View => {
  const phase = machine.phase
  switch (phase._tag) {
    case "Stopped":
      return phase.parked === undefined
        ? "Stopped"
        : phase.parked.done
          ? "Stopped, parked (connected)"
          : "Stopped, parked"
    case "Live":
      return phase.probeFailures > 0 ? "Degraded" : "Ready"
    case "Backoff":
      return "Restarting (backoff)"
    case "Reconnecting":
      return "Restarting (reconnecting)"
    case "Starting":
    case "Failed":
      return phase._tag
  }
}

/** One row: from one of `from`, on one of `on`, when `when` holds, the machine moves to `to`. */
export interface Row {
  readonly from: ReadonlyArray<View> | "any"
  readonly on: ReadonlyArray<Phase.Message["_tag"]> | "any"
  readonly when: string
  /** `"unchanged"`: the view stays (counters, waiters or the tool count may change). */
  readonly to: View | "unchanged"
}

const row = (from: Row["from"], on: Row["on"], to: Row["to"], when: string): Row => ({ from, on, to, when })

const live: ReadonlyArray<View> = ["Ready", "Degraded"]
const connecting: ReadonlyArray<View> = ["Starting", "Restarting (reconnecting)"]
const backoff: View = "Restarting (backoff)"
const reconnecting: View = "Restarting (reconnecting)"
const parked: View = "Stopped, parked"
const parkedConnected: View = "Stopped, parked (connected)"
/** Where a connect or a session can fail: a connect in flight, or the live session. */
const failing: ReadonlyArray<View> = ["Starting", reconnecting, "Ready", "Degraded"]
const starts: Row["on"] = ["Start", "Restart"]

/**
 * The transition table: every transition `transition` can make, one row each. "The budget"
 * is `max_restarts` reconnects per episode; a forced restart starts a new episode.
 */
export const table = {
  startLive: row(live, ["Start"], "unchanged", "answered at once"),
  start: row(["Stopped", "Failed"], starts, "Starting", "a fresh connect; counters reset"),
  startAdopt: row([parked], starts, "Starting", "adopts the parked connect, under a new startup deadline"),
  startAdoptConnected: row([parkedConnected], starts, "Ready", "adopts the parked session: a live one only"),
  startWait: row(["Starting", backoff, reconnecting], ["Start"], "unchanged", "waits for Ready or a terminal state"),
  restartJoin: row(connecting, ["Restart"], "unchanged", "shares the connect in flight"),
  restartBackoff: row([backoff], ["Restart"], reconnecting, "the wait cut short; the crash budget not charged"),
  restartLive: row(live, ["Restart"], reconnecting, "bypasses the policy; the crash budget not charged"),
  stop: row("any", ["Stop"], "Stopped", "everything in flight closed, waiters fail"),
  connected: row(connecting, ["Connected"], "Ready", "ok; waiters answered once Ready"),
  startFailed: row(["Starting"], ["Connected"], "Stopped", "fails: required, restart: never, or permanent"),
  startTimedOut: row(["Starting"], ["StartupTimeout"], parked, "required or restart: never; the connect runs on"),
  backoff: row(failing, ["Connected", "StartupTimeout", "Ended"], backoff, "failed (†), transient, budget left"),
  giveUp: row(failing, ["Connected", "StartupTimeout", "Ended"], "Failed", "failed (†), budget spent"),
  permanent: row(failing.slice(1), ["Connected", "Ended"], "Failed", "a permanent error; budget untouched"),
  never: row(failing.slice(1), ["Connected", "StartupTimeout", "Ended"], "Failed", "failed (†), restart: never"),
  endedCleanly: row(live, ["Ended"], "Failed", "closed cleanly, restart is not always"),
  elapsed: row([backoff], ["BackoffElapsed"], reconnecting, "restarts += 1, attempt += 1"),
  parkedConnected: row([parked], ["Connected"], parkedConnected, "ok: kept, alive, for the next start"),
  parkedFailed: row([parked], ["Connected"], "Stopped", "fails: let go"),
  parkedEnded: row([parkedConnected], ["Ended"], "Stopped", "the parked session ended: let go, never adopted"),
  probeOk: row(["Ready"], ["Probed"], "unchanged", "ok"),
  probeRecovered: row(["Degraded"], ["Probed"], "Ready", "ok: the error cleared"),
  probeFailed: row(live, ["Probed"], "Degraded", "fails, fewer than health.failures in a row"),
  probeRestart: row(live, ["Probed"], reconnecting, "health.failures in a row (‡), budget left: a restart"),
  probeGiveUp: row(live, ["Probed"], "Failed", "health.failures in a row (‡), restart: never or budget spent"),
  stable: row(live, ["Stable"], "unchanged", "Ready lasted reset_after: attempt back to 0"),
  toolCount: row(live, ["ToolCount"], "unchanged", "the session re-listed its tools: toolsVersion += 1"),
  spawned: row(
    [...connecting, parked],
    ["Spawned"],
    "unchanged",
    "the connect's server process is up: its pid is shown"
  ),
  defect: row("any", ["Defect"], "Failed", "everything held released; waiters fail with the defect"),
  ignored: row("any", "any", "unchanged", "about superseded work: an id the phase no longer holds")
} satisfies Record<string, Row>

/*
 * † A connect failed or timed out (from Starting: optional toolsets only, which retry; a first
 *   start with `max_restarts: 0` gives up at once), or the session ended with an error, or
 *   cleanly under `restart: always`.
 * ‡ From Ready directly when `health.failures` is 1: such a toolset is never Degraded.
 */

/** The name of a row of `table`. */
export type Rule = keyof typeof table

/** The pure transition: the next machine and the commands to run, in order, and the row taken. */
export const transition = (settings: Phase.Settings, machine: Phase.Machine, message: Phase.Message): Phase.Step => {
  const phase = machine.phase
  switch (message._tag) {
    case "Start":
      if (phase._tag === "Live") {
        return { machine, commands: [{ _tag: "Settle", waiters: [message.reply], exit: "ready" }], rule: "startLive" }
      }
      return phase._tag === "Stopped" || phase._tag === "Failed"
        ? beginStart(settings, machine, [...machine.waiters, message.reply])
        : stay(wait(machine, message.reply), "startWait")
    case "Restart":
      return onRestart(settings, wait(machine, message.reply))
    case "Stop":
      return stop(settings, machine)
    case "Connected":
      return onConnected(settings, machine, message.id, message.error)
    case "StartupTimeout":
      return onStartupTimeout(settings, machine, message.id)
    case "Ended":
      if (phase._tag === "Stopped" && phase.parked?.id === message.id && phase.parked.done) {
        return {
          machine: { ...machine, phase: { _tag: "Stopped", parked: undefined } },
          commands: [{ _tag: "Discard", id: message.id }],
          rule: "parkedEnded"
        }
      }
      if (phase._tag !== "Live" || phase.session !== message.id) return ignore(machine)
      return ended(settings, machine, message.error)
    case "BackoffElapsed":
      return phase._tag === "Backoff" && phase.timer === message.id
        ? reconnect({ ...machine, attempt: machine.attempt + 1 }, [], "elapsed")
        : ignore(machine)
    case "Probed":
      if (phase._tag !== "Live" || phase.session !== message.id) return ignore(machine)
      return onProbed(settings, machine, phase, message.error)
    case "Stable":
      if (phase._tag !== "Live" || phase.session !== message.id) return ignore(machine)
      return stay(machine.attempt === 0 ? machine : { ...machine, attempt: 0 }, "stable")
    case "ToolCount":
      return phase._tag === "Live" && phase.session === message.id
        ? stay({ ...machine, toolCount: message.count, toolsVersion: machine.toolsVersion + 1 }, "toolCount")
        : ignore(machine)
    case "Spawned": {
      const connect =
        phase._tag === "Starting" || phase._tag === "Reconnecting"
          ? phase.connect
          : phase._tag === "Stopped" && phase.parked?.done === false
            ? phase.parked.id
            : undefined
      return connect === message.id ? stay(machine, "spawned") : ignore(machine)
    }
    case "Defect":
      return terminal(settings, machine, { _tag: "Failed" }, message.error, "a defect", "defect", [
        { _tag: "ReleaseAll", error: message.error }
      ])
  }
}

const stay = (machine: Phase.Machine, rule: Rule): Phase.Step => ({ machine, commands: [], rule })

const ignore = (machine: Phase.Machine): Phase.Step => ({ machine, commands: [], rule: "ignored" })

const wait = (machine: Phase.Machine, reply: Phase.Reply): Phase.Machine => ({
  ...machine,
  waiters: [...machine.waiters, reply]
})

/** The commands that close whatever the phase holds. */
const release = (
  phase: Phase.Phase,
  error: LifecycleError.ServerCrashed | LifecycleError.NotStarted
): ReadonlyArray<Phase.Command> => {
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
  settings: Phase.Settings,
  machine: Phase.Machine,
  waiters: ReadonlyArray<Phase.Reply>
): Phase.Step => {
  const parked = machine.phase._tag === "Stopped" ? machine.phase.parked : undefined
  if (parked?.done === true) {
    return goLive({ ...machine, restarts: 0, attempt: 0, error: undefined, waiters }, parked.id, "startAdoptConnected")
  }
  const connect = parked?.id ?? machine.nextId + 1
  const retry = !settings.policy.required && settings.policy.restart !== "never"
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
    commands: [parked === undefined ? { _tag: "Connect", id: connect } : { _tag: "ArmStartup", id: connect }],
    rule: parked === undefined ? "start" : "startAdopt"
  }
}

/** A connect's session becomes the live one; waiters are released after the state is Ready. */
const goLive = (machine: Phase.Machine, id: number, rule: Rule): Phase.Step => ({
  machine: {
    ...machine,
    phase: { _tag: "Live", session: id, probeFailures: 0 },
    error: undefined,
    toolsVersion: machine.toolsVersion + 1,
    toolCount: undefined,
    waiters: []
  },
  // Only an episode with restarts has a step to reset: a first start arms no `reset_after` timer.
  commands: [{ _tag: "GoLive", id, stable: machine.attempt > 0 }, ...settle(machine, "ready")],
  rule
})

const settle = (machine: Phase.Machine, exit: "ready" | LifecycleError.LifecycleError): ReadonlyArray<Phase.Command> =>
  machine.waiters.length === 0 ? [] : [{ _tag: "Settle", waiters: machine.waiters, exit }]

/** Enters a terminal state and fails everyone waiting for Ready. */
const terminal = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  phase: Phase.Phase,
  error: LifecycleError.LifecycleError | undefined,
  reason: string,
  rule: Rule,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
  const failure = error ?? LifecycleError.notStarted(settings.name, reason)
  const message =
    error === undefined ? `${settings.name} failed: ${reason}` : `${settings.name} failed (${reason}): ${error.message}`
  const warn: ReadonlyArray<Phase.Command> = phase._tag === "Failed" ? [{ _tag: "Warn", message }] : []
  return {
    machine: {
      ...machine,
      phase,
      error,
      waiters: [],
      attempt: phase._tag === "Stopped" ? 0 : machine.attempt
    },
    commands: [...before, ...settle(machine, failure), ...warn],
    rule
  }
}

/**
 * What a request in flight on a session that `stop` or `restart` ended fails with: it reached the
 * server, so it may have run — never "not started", which says it did not.
 */
const endedInFlight = (name: string, by: "stopped" | "restarted") =>
  new LifecycleError.ServerCrashed({
    toolset: name,
    message: `${name}: ${by} while the request was in flight; it reached the server, so it may have run`
  })

const stop = (settings: Phase.Settings, machine: Phase.Machine): Phase.Step => ({
  machine: { ...machine, phase: { _tag: "Stopped", parked: undefined }, error: undefined, attempt: 0, waiters: [] },
  commands: [
    ...release(machine.phase, endedInFlight(settings.name, "stopped")),
    ...settle(machine, LifecycleError.notStarted(settings.name, "stopped"))
  ],
  rule: "stop"
})

/**
 * A forced restart starts a new episode: the reconnect counts in `restarts`, but not against the
 * crash budget (`attempt` stays 0), so the next real crash is the first of its episode.
 */
const onRestart = (settings: Phase.Settings, machine: Phase.Machine): Phase.Step => {
  const phase = machine.phase
  switch (phase._tag) {
    case "Stopped":
    case "Failed":
      return beginStart(settings, machine, machine.waiters)
    case "Starting":
    case "Reconnecting":
      return stay(machine, "restartJoin")
    case "Backoff":
      return reconnect({ ...machine, attempt: 0 }, [{ _tag: "CancelBackoff", id: phase.timer }], "restartBackoff")
    case "Live":
      return reconnect(
        { ...machine, attempt: 0, error: undefined },
        [
          {
            _tag: "EndLive",
            error: endedInFlight(settings.name, "restarted")
          }
        ],
        "restartLive"
      )
  }
}

/** A reconnect: `restarts` counts it; the caller has moved `attempt` when the budget pays for it. */
const reconnect = (machine: Phase.Machine, before: ReadonlyArray<Phase.Command>, rule: Rule): Phase.Step => {
  const id = machine.nextId + 1
  return {
    machine: {
      ...machine,
      nextId: id,
      phase: { _tag: "Reconnecting", connect: id },
      restarts: machine.restarts + 1
    },
    commands: [...before, { _tag: "Connect", id }],
    rule
  }
}

/**
 * After a session ended or a reconnect failed: back off and reconnect, or go to Failed when the
 * error is permanent, the policy says never, or the budget is spent.
 */
const scheduleReconnect = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError | undefined,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
  const { policy } = settings
  const failed: Phase.Phase = { _tag: "Failed" }
  if (error !== undefined && LifecycleError.isPermanent(error)) {
    return terminal(settings, machine, failed, error, "a permanent error", "permanent", before)
  }
  if (policy.restart === "never") {
    return terminal(settings, machine, failed, error, "restart: never", "never", before)
  }
  const last = error ?? machine.error
  if (!Policy.hasBudget(policy, machine.attempt)) {
    return terminal(settings, machine, failed, last, `gave up after ${machine.attempt} restarts`, "giveUp", before)
  }
  const id = machine.nextId + 1
  return {
    machine: { ...machine, nextId: id, phase: { _tag: "Backoff", timer: id }, error: last },
    commands: [...before, { _tag: "Backoff", id, attempt: machine.attempt }],
    rule: "backoff"
  }
}

const ended = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
  const before: ReadonlyArray<Phase.Command> = [
    { _tag: "EndLive", error: LifecycleError.crashedInFlight(settings.name, error) }
  ]
  if (error === undefined && settings.policy.restart !== "always") {
    // Recorded as the toolset's error, so its status says why it is Failed and calls say why they fail.
    const closed = new LifecycleError.ServerCrashed({
      toolset: settings.name,
      message: `${settings.name}: the server ended its session by itself (a clean close); restart: ${settings.policy.restart} restarts only after a failure`
    })
    return terminal(settings, machine, { _tag: "Failed" }, closed, "not restarted", "endedCleanly", before)
  }
  return scheduleReconnect(settings, machine, error, before)
}

const onConnected = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  id: number,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
  const phase = machine.phase
  if (phase._tag === "Stopped" && phase.parked?.id === id && !phase.parked.done) {
    // A late connect that finished while Stopped: kept for the next start, or let go if it failed.
    return error === undefined
      ? stay({ ...machine, phase: { _tag: "Stopped", parked: { id, done: true } } }, "parkedConnected")
      : {
          machine: { ...machine, phase: { _tag: "Stopped", parked: undefined } },
          commands: [{ _tag: "Discard", id }],
          rule: "parkedFailed"
        }
  }
  if ((phase._tag !== "Starting" && phase._tag !== "Reconnecting") || phase.connect !== id) return ignore(machine)
  if (error === undefined) return goLive(machine, id, "connected")
  return connectFailed(settings, machine, error, [{ _tag: "Discard", id }])
}

const connectFailed = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  error: LifecycleError.LifecycleError,
  before: ReadonlyArray<Phase.Command>
): Phase.Step => {
  const phase = machine.phase
  if (phase._tag !== "Starting") return scheduleReconnect(settings, machine, error, before)
  if (!phase.retry || LifecycleError.isPermanent(error)) {
    return terminal(
      settings,
      machine,
      { _tag: "Stopped", parked: undefined },
      error,
      "start failed",
      "startFailed",
      before
    )
  }
  // An optional toolset: the caller learns of the failure now, and the Supervisor keeps trying by
  // the policy — a phase that `stop` ends, not a retry loop outside it.
  const next = scheduleReconnect(settings, { ...machine, waiters: [] }, error, before)
  return { ...next, commands: [...settle(machine, error), ...next.commands] }
}

const onStartupTimeout = (settings: Phase.Settings, machine: Phase.Machine, id: number): Phase.Step => {
  const phase = machine.phase
  if ((phase._tag !== "Starting" && phase._tag !== "Reconnecting") || phase.connect !== id) return ignore(machine)
  const error = settings.initTimeout()
  if (phase._tag === "Starting" && !phase.retry) {
    // The first start keeps its connect running, so that a later start adopts it instead of
    // opening a second one.
    const parked: Phase.Phase = { _tag: "Stopped", parked: { id, done: false } }
    return terminal(settings, machine, parked, error, "start timed out", "startTimedOut", [])
  }
  // A connect that hangs while the Supervisor retries is abandoned and counts as a failed attempt.
  return connectFailed(settings, machine, error, [{ _tag: "Discard", id }])
}

const onProbed = (
  settings: Phase.Settings,
  machine: Phase.Machine,
  phase: Extract<Phase.Phase, { readonly _tag: "Live" }>,
  error: LifecycleError.LifecycleError | undefined
): Phase.Step => {
  const { policy } = settings
  if (error === undefined) {
    return phase.probeFailures === 0
      ? stay(machine, "probeOk")
      : stay({ ...machine, phase: { ...phase, probeFailures: 0 }, error: undefined }, "probeRecovered")
  }
  const failures = phase.probeFailures + 1
  if (failures < (policy.health?.failures ?? 1)) {
    return stay({ ...machine, phase: { ...phase, probeFailures: failures }, error }, "probeFailed")
  }
  const endLive: Phase.Command = { _tag: "EndLive", error: LifecycleError.crashedInFlight(settings.name, error) }
  const failed = `${failures} health probes failed in a row`
  if (policy.restart === "never" || !Policy.hasBudget(policy, machine.attempt)) {
    const why = policy.restart === "never" ? "restart: never" : `gave up after ${machine.attempt} restarts`
    return terminal(settings, machine, { _tag: "Failed" }, error, `${failed} (${why})`, "probeGiveUp", [endLive])
  }
  return reconnect(
    { ...machine, error, attempt: machine.attempt + 1 },
    [{ _tag: "Warn", message: `${settings.name}: ${failed}, restarting` }, endLive],
    "probeRestart"
  )
}
