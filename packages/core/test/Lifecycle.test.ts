import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Lifecycle from "../src/Lifecycle.ts"
import * as LifecycleError from "../src/LifecycleError.ts"
import * as Phase from "../src/Phase.ts"
import type * as State from "../src/State.ts"
import { auth, crash, policy, refused } from "./fakes.ts"

/**
 * Walks every row of the transition table in Lifecycle.ts's header: one case per row, from a machine
 * in the row's phase, the row's message, to the row's state and the commands that matter.
 */
const context = (overrides: Parameters<typeof policy>[0] = {}): Phase.Context => ({
  name: "t",
  policy: policy(overrides),
  initTimeout: () => new LifecycleError.InitTimeout({ toolset: "t", message: "t: timed out", afterMillis: 5000 })
})

const at = (phase: Phase.Phase, fields: Partial<Phase.Machine> = {}): Phase.Machine => ({
  ...Phase.initial,
  nextId: 10,
  phase,
  ...fields
})

const live: Phase.Phase = { _tag: "Live", session: 3, probeFailures: 0 }

interface Row {
  readonly row: string
  readonly context?: Phase.Context
  readonly from: Phase.Machine
  readonly message: Phase.Message
  readonly to: State.State
  readonly commands: ReadonlyArray<Phase.Command["_tag"]>
  readonly check?: (machine: Phase.Machine) => void
}

const rows = (reply: Phase.Reply): ReadonlyArray<Row> => [
  {
    row: "Stopped + Start → Starting with a fresh connect",
    from: at({ _tag: "Stopped", parked: undefined }),
    message: { _tag: "Start", reply },
    to: "Starting",
    commands: ["Connect"]
  },
  {
    row: "Stopped (parked connect in flight) + Start → Starting, adopting it",
    from: at({ _tag: "Stopped", parked: { id: 4, done: false } }),
    message: { _tag: "Start", reply },
    to: "Starting",
    commands: ["ArmStartup"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Starting", connect: 4, retry: true })
  },
  {
    row: "Stopped (parked connect done) + Start → Ready at once",
    from: at({ _tag: "Stopped", parked: { id: 4, done: true } }),
    message: { _tag: "Start", reply },
    to: "Ready",
    commands: ["GoLive", "Settle"]
  },
  {
    row: "Starting + Connected ok → Ready, waiters released",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: undefined },
    to: "Ready",
    commands: ["GoLive", "Settle"]
  },
  {
    row: "Starting + Connected fails, no retry (required) → Stopped, error to the caller",
    from: at({ _tag: "Starting", connect: 4, retry: false }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Stopped",
    commands: ["Discard", "Settle"],
    check: (m) => assert.strictEqual(m.error?._tag, "ServerUnavailable")
  },
  {
    row: "Starting + Connected fails, retry (optional) → Restarting (backoff), error to the caller",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Restarting",
    commands: ["Settle", "Discard", "Backoff"],
    check: (m) => assert.strictEqual(m.waiters.length, 0)
  },
  {
    row: "Starting + Connected fails with a permanent error, even with retry → Stopped",
    from: at({ _tag: "Starting", connect: 4, retry: true }),
    message: { _tag: "Connected", id: 4, error: auth() },
    to: "Stopped",
    commands: ["Discard"]
  },
  {
    row: "Starting + StartupTimeout, no retry → Stopped, the connect parked",
    from: at({ _tag: "Starting", connect: 4, retry: false }, { waiters: [reply] }),
    message: { _tag: "StartupTimeout", id: 4 },
    to: "Stopped",
    commands: ["Settle"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Stopped", parked: { id: 4, done: false } })
  },
  {
    row: "Starting + StartupTimeout, retry → Restarting, the connect discarded",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "StartupTimeout", id: 4 },
    to: "Restarting",
    commands: ["Settle", "Discard", "Backoff"],
    check: (m) => assert.strictEqual(m.error?._tag, "InitTimeout")
  },
  {
    row: "Live + Ended with an error, budget left → Restarting, crash recorded with its cause",
    from: at(live),
    message: { _tag: "Ended", id: 3, error: crash("killed") },
    to: "Restarting",
    commands: ["EndLive", "Backoff"],
    check: (m) => assert.strictEqual(m.error?.message, "killed")
  },
  {
    row: "Live + Ended cleanly, on_failure → Failed",
    from: at(live),
    message: { _tag: "Ended", id: 3, error: undefined },
    to: "Failed",
    commands: ["EndLive", "Warn"]
  },
  {
    row: "Live + Ended cleanly, always → Restarting",
    context: context({ restart: "always" }),
    from: at(live),
    message: { _tag: "Ended", id: 3, error: undefined },
    to: "Restarting",
    commands: ["EndLive", "Backoff"]
  },
  {
    row: "Live + Ended with a permanent error → Failed, budget untouched",
    from: at(live, { attempt: 1 }),
    message: { _tag: "Ended", id: 3, error: auth() },
    to: "Failed",
    commands: ["EndLive", "Warn"],
    check: (m) => assert.strictEqual(m.attempt, 1)
  },
  {
    row: "Backoff + BackoffElapsed → Restarting (reconnecting), restarts += 1",
    from: at({ _tag: "Backoff", timer: 7 }, { restarts: 2, attempt: 2 }),
    message: { _tag: "BackoffElapsed", id: 7 },
    to: "Restarting",
    commands: ["Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt], [3, 3])
  },
  {
    row: "Reconnecting + Connected ok → Ready, error cleared",
    from: at({ _tag: "Reconnecting", connect: 8 }, { error: crash() }),
    message: { _tag: "Connected", id: 8, error: undefined },
    to: "Ready",
    commands: ["GoLive"],
    check: (m) => assert.isUndefined(m.error)
  },
  {
    row: "Reconnecting + Connected fails, budget left → Restarting, next delay",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 1 }),
    message: { _tag: "Connected", id: 8, error: refused() },
    to: "Restarting",
    commands: ["Discard", "Backoff"]
  },
  {
    row: "Reconnecting + StartupTimeout, budget left → Restarting",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 1 }),
    message: { _tag: "StartupTimeout", id: 8 },
    to: "Restarting",
    commands: ["Discard", "Backoff"]
  },
  {
    row: "Reconnecting + Connected fails, budget spent → Failed, last error kept",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 5 }),
    message: { _tag: "Connected", id: 8, error: refused() },
    to: "Failed",
    commands: ["Discard", "Warn"],
    check: (m) => assert.strictEqual(m.error?._tag, "ServerUnavailable")
  },
  {
    row: "Reconnecting + Connected fails permanently → Failed",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Connected", id: 8, error: auth() },
    to: "Failed",
    commands: ["Discard", "Warn"]
  },
  {
    row: "Live + Stable → the episode's attempt resets",
    from: at(live, { attempt: 3 }),
    message: { _tag: "Stable", id: 3 },
    to: "Ready",
    commands: [],
    check: (m) => assert.strictEqual(m.attempt, 0)
  },
  {
    row: "Ready + Probed fails → Degraded",
    context: context({ health: { interval: "1s", failures: 3 } }),
    from: at(live),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Degraded",
    commands: []
  },
  {
    row: "Degraded + Probed ok → Ready",
    context: context({ health: { interval: "1s", failures: 3 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }, { error: crash("probe") }),
    message: { _tag: "Probed", id: 3, error: undefined },
    to: "Ready",
    commands: [],
    check: (m) => assert.isUndefined(m.error)
  },
  {
    row: "Degraded + health.failures probe failures in a row → Restarting, counted",
    context: context({ health: { interval: "1s", failures: 2 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Restarting",
    commands: ["Warn", "EndLive", "Connect"],
    check: (m) => assert.strictEqual(m.restarts, 1)
  },
  {
    row: "Live + Restart → Restarting at once, bypassing the policy",
    context: context({ restart: "never" }),
    from: at(live),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: ["EndLive", "Connect"]
  },
  {
    row: "Backoff + Restart → the wait cut short",
    from: at({ _tag: "Backoff", timer: 7 }),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: ["CancelBackoff", "Connect"]
  },
  {
    row: "Reconnecting + Restart → shares the connect in flight",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: []
  },
  {
    row: "Failed + Restart → Starting afresh",
    from: at({ _tag: "Failed" }, { restarts: 5, attempt: 5, error: crash() }),
    message: { _tag: "Restart", reply },
    to: "Starting",
    commands: ["Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt, m.error], [0, 0, undefined])
  },
  {
    row: "Backoff (first-start retry) + Stop → Stopped, the timer cancelled",
    from: at({ _tag: "Backoff", timer: 7 }, { error: refused() }),
    message: { _tag: "Stop" },
    to: "Stopped",
    commands: ["CancelBackoff"]
  },
  {
    row: "Live + Stop → Stopped, the session closed",
    from: at(live),
    message: { _tag: "Stop" },
    to: "Stopped",
    commands: ["EndLive"]
  },
  {
    row: "a report about superseded work is ignored",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Ended", id: 3, error: crash() },
    to: "Restarting",
    commands: []
  }
]

describe("Lifecycle.transition", () => {
  it.effect("walks every row of the transition table", () =>
    Effect.gen(function* () {
      const reply = yield* Deferred.make<void, LifecycleError.LifecycleError>()
      for (const row of rows(reply)) {
        const step = Lifecycle.transition(row.context ?? context(), row.from, row.message)
        assert.strictEqual(Phase.stateOf(step.machine), row.to, row.row)
        assert.deepStrictEqual(
          step.commands.map((c) => c._tag),
          row.commands,
          row.row
        )
        row.check?.(step.machine)
      }
    })
  )
})
