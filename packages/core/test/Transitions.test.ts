import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Phase from "../src/internal/phase.ts"
import * as Transitions from "../src/internal/transitions.ts"
import * as LifecycleError from "../src/LifecycleError.ts"
import type * as State from "../src/State.ts"
import { auth, crash, policy, refused } from "./fakes.ts"

/**
 * The transition table is `Transitions.table`. Two walks: hand-written cases, one or more per row,
 * from a machine in the row's phase, the row's message, to the row's state and the commands that
 * matter; and every phase × message × policy the generator below can build, each step checked
 * against the row it names — so a transition the table does not list fails, and a row no input
 * reaches fails too.
 */
const settings = (overrides: Parameters<typeof policy>[0] = {}): Phase.Settings => ({
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
  readonly rule: Transitions.Rule
  readonly settings?: Phase.Settings
  readonly from: Phase.Machine
  readonly message: Phase.Message
  readonly to: State.State
  readonly commands: ReadonlyArray<Phase.Command["_tag"]>
  readonly check?: (machine: Phase.Machine) => void
}

const rows = (reply: Phase.Reply): ReadonlyArray<Row> => [
  {
    row: "Stopped + Start → Starting with a fresh connect",
    rule: "start",
    from: at({ _tag: "Stopped", parked: undefined }),
    message: { _tag: "Start", reply },
    to: "Starting",
    commands: ["Connect"]
  },
  {
    row: "Stopped (parked connect in flight) + Start → Starting, adopting it",
    rule: "startAdopt",
    from: at({ _tag: "Stopped", parked: { id: 4, done: false } }),
    message: { _tag: "Start", reply },
    to: "Starting",
    commands: ["ArmStartup"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Starting", connect: 4, retry: true })
  },
  {
    row: "Stopped (parked connect done) + Start → Ready at once",
    rule: "startAdoptConnected",
    from: at({ _tag: "Stopped", parked: { id: 4, done: true } }),
    message: { _tag: "Start", reply },
    to: "Ready",
    commands: ["GoLive", "Settle"]
  },
  {
    row: "Starting + Connected ok → Ready, waiters released",
    rule: "connected",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: undefined },
    to: "Ready",
    commands: ["GoLive", "Settle"]
  },
  {
    row: "Starting + Connected fails, no retry (required) → Stopped, error to the caller",
    rule: "startFailed",
    from: at({ _tag: "Starting", connect: 4, retry: false }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Stopped",
    commands: ["Discard", "Settle"],
    check: (m) => assert.strictEqual(m.error?._tag, "ServerUnavailable")
  },
  {
    row: "Starting + Connected fails, retry (optional) → Restarting (backoff), error to the caller",
    rule: "backoff",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Restarting",
    commands: ["Settle", "Discard", "Backoff"],
    check: (m) => assert.strictEqual(m.waiters.length, 0)
  },
  {
    row: "Starting + Connected fails with a permanent error, even with retry → Stopped",
    rule: "startFailed",
    from: at({ _tag: "Starting", connect: 4, retry: true }),
    message: { _tag: "Connected", id: 4, error: auth() },
    to: "Stopped",
    commands: ["Discard"]
  },
  {
    row: "Starting + StartupTimeout, no retry → Stopped, the connect parked",
    rule: "startTimedOut",
    from: at({ _tag: "Starting", connect: 4, retry: false }, { waiters: [reply] }),
    message: { _tag: "StartupTimeout", id: 4 },
    to: "Stopped",
    commands: ["Settle"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Stopped", parked: { id: 4, done: false } })
  },
  {
    row: "Starting + StartupTimeout, retry → Restarting, the connect discarded",
    rule: "backoff",
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "StartupTimeout", id: 4 },
    to: "Restarting",
    commands: ["Settle", "Discard", "Backoff"],
    check: (m) => assert.strictEqual(m.error?._tag, "InitTimeout")
  },
  {
    row: "Live + Ended with an error, budget left → Restarting, crash recorded with its cause",
    rule: "backoff",
    from: at(live),
    message: { _tag: "Ended", id: 3, error: crash("killed") },
    to: "Restarting",
    commands: ["EndLive", "Backoff"],
    check: (m) => assert.strictEqual(m.error?.message, "killed")
  },
  {
    row: "Live + Ended cleanly, on_failure → Failed, the clean close recorded as its error",
    rule: "endedCleanly",
    from: at(live),
    message: { _tag: "Ended", id: 3, error: undefined },
    to: "Failed",
    commands: ["EndLive", "Warn"],
    check: (m) => {
      assert.strictEqual(m.error?._tag, "ServerCrashed")
      assert.match(m.error?.message ?? "", /ended its session by itself \(a clean close\); restart: on_failure/)
    }
  },
  {
    row: "Live + Ended cleanly, always → Restarting",
    rule: "backoff",
    settings: settings({ restart: "always" }),
    from: at(live),
    message: { _tag: "Ended", id: 3, error: undefined },
    to: "Restarting",
    commands: ["EndLive", "Backoff"]
  },
  {
    row: "Live + Ended with a permanent error → Failed, budget untouched",
    rule: "permanent",
    from: at(live, { attempt: 1 }),
    message: { _tag: "Ended", id: 3, error: auth() },
    to: "Failed",
    commands: ["EndLive", "Warn"],
    check: (m) => assert.strictEqual(m.attempt, 1)
  },
  {
    row: "Backoff + BackoffElapsed → Restarting (reconnecting), restarts += 1",
    rule: "elapsed",
    from: at({ _tag: "Backoff", timer: 7 }, { restarts: 2, attempt: 2 }),
    message: { _tag: "BackoffElapsed", id: 7 },
    to: "Restarting",
    commands: ["Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt], [3, 3])
  },
  {
    row: "Reconnecting + Connected ok → Ready, error cleared",
    rule: "connected",
    from: at({ _tag: "Reconnecting", connect: 8 }, { error: crash() }),
    message: { _tag: "Connected", id: 8, error: undefined },
    to: "Ready",
    commands: ["GoLive"],
    check: (m) => assert.isUndefined(m.error)
  },
  {
    row: "Reconnecting + Connected fails, budget left → Restarting, next delay",
    rule: "backoff",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 1 }),
    message: { _tag: "Connected", id: 8, error: refused() },
    to: "Restarting",
    commands: ["Discard", "Backoff"]
  },
  {
    row: "Reconnecting + StartupTimeout, budget left → Restarting",
    rule: "backoff",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 1 }),
    message: { _tag: "StartupTimeout", id: 8 },
    to: "Restarting",
    commands: ["Discard", "Backoff"]
  },
  {
    row: "Reconnecting + Connected fails, budget spent → Failed, last error kept",
    rule: "giveUp",
    from: at({ _tag: "Reconnecting", connect: 8 }, { attempt: 5 }),
    message: { _tag: "Connected", id: 8, error: refused() },
    to: "Failed",
    commands: ["Discard", "Warn"],
    check: (m) => assert.strictEqual(m.error?._tag, "ServerUnavailable")
  },
  {
    row: "Reconnecting + Connected fails permanently → Failed",
    rule: "permanent",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Connected", id: 8, error: auth() },
    to: "Failed",
    commands: ["Discard", "Warn"]
  },
  {
    row: "Live + Stable → the episode's attempt resets",
    rule: "stable",
    from: at(live, { attempt: 3 }),
    message: { _tag: "Stable", id: 3 },
    to: "Ready",
    commands: [],
    check: (m) => assert.strictEqual(m.attempt, 0)
  },
  {
    row: "Ready + Probed fails → Degraded",
    rule: "probeFailed",
    settings: settings({ health: { interval: "1s", failures: 3 } }),
    from: at(live),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Degraded",
    commands: []
  },
  {
    row: "Degraded + Probed ok → Ready",
    rule: "probeRecovered",
    settings: settings({ health: { interval: "1s", failures: 3 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }, { error: crash("probe") }),
    message: { _tag: "Probed", id: 3, error: undefined },
    to: "Ready",
    commands: [],
    check: (m) => assert.isUndefined(m.error)
  },
  {
    row: "Degraded + health.failures probe failures in a row → Restarting, counted",
    rule: "probeRestart",
    settings: settings({ health: { interval: "1s", failures: 2 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Restarting",
    commands: ["Warn", "EndLive", "Connect"],
    check: (m) => assert.strictEqual(m.restarts, 1)
  },
  {
    row: "Live + Restart → Restarting at once, bypassing the policy and the crash budget",
    rule: "restartLive",
    settings: settings({ restart: "never" }),
    from: at(live, { restarts: 2, attempt: 2 }),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: ["EndLive", "Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt], [3, 0])
  },
  {
    row: "Backoff + Restart → the wait cut short, the crash budget not charged",
    rule: "restartBackoff",
    from: at({ _tag: "Backoff", timer: 7 }, { restarts: 1, attempt: 1 }),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: ["CancelBackoff", "Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt], [2, 0])
  },
  {
    row: "Reconnecting + Restart → shares the connect in flight",
    rule: "restartJoin",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Restart", reply },
    to: "Restarting",
    commands: []
  },
  {
    row: "Failed + Restart → Starting afresh",
    rule: "start",
    from: at({ _tag: "Failed" }, { restarts: 5, attempt: 5, error: crash() }),
    message: { _tag: "Restart", reply },
    to: "Starting",
    commands: ["Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt, m.error], [0, 0, undefined])
  },
  {
    row: "Backoff (first-start retry) + Stop → Stopped, the timer cancelled",
    rule: "stop",
    from: at({ _tag: "Backoff", timer: 7 }, { error: refused() }),
    message: { _tag: "Stop" },
    to: "Stopped",
    commands: ["CancelBackoff"]
  },
  {
    row: "Live + Stop → Stopped, the session closed",
    rule: "stop",
    from: at(live),
    message: { _tag: "Stop" },
    to: "Stopped",
    commands: ["EndLive"]
  },
  {
    row: "Ready + Start → answered at once",
    rule: "startLive",
    from: at(live),
    message: { _tag: "Start", reply },
    to: "Ready",
    commands: ["Settle"]
  },
  {
    row: "Restarting + Start → the caller waits",
    rule: "startWait",
    from: at({ _tag: "Backoff", timer: 7 }),
    message: { _tag: "Start", reply },
    to: "Restarting",
    commands: [],
    check: (m) => assert.deepStrictEqual(m.waiters, [reply])
  },
  {
    row: "Failed + Start → Starting afresh",
    rule: "start",
    from: at({ _tag: "Failed" }, { restarts: 5, attempt: 5, error: crash() }),
    message: { _tag: "Start", reply },
    to: "Starting",
    commands: ["Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt, m.error], [0, 0, undefined])
  },
  {
    row: "Stopped (parked) + Connected ok → Stopped, the session kept for the next start",
    rule: "parkedConnected",
    from: at({ _tag: "Stopped", parked: { id: 4, done: false } }),
    message: { _tag: "Connected", id: 4, error: undefined },
    to: "Stopped",
    commands: [],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Stopped", parked: { id: 4, done: true } })
  },
  {
    row: "Stopped (parked) + Connected fails → Stopped, the connect let go",
    rule: "parkedFailed",
    from: at({ _tag: "Stopped", parked: { id: 4, done: false } }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Stopped",
    commands: ["Discard"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Stopped", parked: undefined })
  },
  {
    row: "Stopped (parked, connected) + Ended → Stopped, the dead session let go, never adopted",
    rule: "parkedEnded",
    from: at({ _tag: "Stopped", parked: { id: 4, done: true } }),
    message: { _tag: "Ended", id: 4, error: crash() },
    to: "Stopped",
    commands: ["Discard"],
    check: (m) => assert.deepStrictEqual(m.phase, { _tag: "Stopped", parked: undefined })
  },
  {
    row: "optional first start with max_restarts: 0 + Connected fails → Failed, error to the caller",
    rule: "giveUp",
    settings: settings({ max_restarts: 0 }),
    from: at({ _tag: "Starting", connect: 4, retry: true }, { waiters: [reply] }),
    message: { _tag: "Connected", id: 4, error: refused() },
    to: "Failed",
    commands: ["Settle", "Discard", "Warn"]
  },
  {
    row: "Live + Ended with an error, budget spent → Failed",
    rule: "giveUp",
    settings: settings({ max_restarts: 2 }),
    from: at(live, { attempt: 2 }),
    message: { _tag: "Ended", id: 3, error: crash() },
    to: "Failed",
    commands: ["EndLive", "Warn"]
  },
  {
    row: "Live + Ended with an error, restart: never → Failed",
    rule: "never",
    settings: settings({ restart: "never" }),
    from: at(live),
    message: { _tag: "Ended", id: 3, error: crash() },
    to: "Failed",
    commands: ["EndLive", "Warn"]
  },
  {
    row: "Reconnecting (a forced restart) + Connected fails, restart: never → Failed",
    rule: "never",
    settings: settings({ restart: "never" }),
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Connected", id: 8, error: refused() },
    to: "Failed",
    commands: ["Discard", "Warn"]
  },
  {
    row: "Ready + Probed fails with health.failures: 1 → Restarting at once, never Degraded",
    rule: "probeRestart",
    settings: settings({ health: { interval: "1s", failures: 1 } }),
    from: at(live),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Restarting",
    commands: ["Warn", "EndLive", "Connect"],
    check: (m) => assert.deepStrictEqual([m.restarts, m.attempt], [1, 1])
  },
  {
    row: "Degraded + health.failures probe failures, restart: never → Failed",
    rule: "probeGiveUp",
    settings: settings({ restart: "never", health: { interval: "1s", failures: 2 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Failed",
    commands: ["EndLive", "Warn"]
  },
  {
    row: "Degraded + health.failures probe failures, budget spent → Failed",
    rule: "probeGiveUp",
    settings: settings({ max_restarts: 1, health: { interval: "1s", failures: 2 } }),
    from: at({ _tag: "Live", session: 3, probeFailures: 1 }, { attempt: 1 }),
    message: { _tag: "Probed", id: 3, error: crash("probe") },
    to: "Failed",
    commands: ["EndLive", "Warn"]
  },
  {
    row: "Ready + Probed ok → unchanged",
    rule: "probeOk",
    settings: settings({ health: { interval: "1s" } }),
    from: at(live),
    message: { _tag: "Probed", id: 3, error: undefined },
    to: "Ready",
    commands: []
  },
  {
    row: "Live + ToolCount → the count kept, toolsVersion bumped",
    rule: "toolCount",
    from: at(live, { toolsVersion: 2 }),
    message: { _tag: "ToolCount", id: 3, count: 11 },
    to: "Ready",
    commands: [],
    check: (m) => assert.deepStrictEqual([m.toolCount, m.toolsVersion], [11, 3])
  },
  {
    row: "Restarting (reconnecting) + Spawned for its connect → unchanged (the snapshot shows the pid)",
    rule: "spawned",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Spawned", id: 8 },
    to: "Restarting",
    commands: []
  },
  {
    row: "Stopped (parked) + Spawned for the parked connect → unchanged (its process is shown)",
    rule: "spawned",
    from: at({ _tag: "Stopped", parked: { id: 4, done: false } }),
    message: { _tag: "Spawned", id: 4 },
    to: "Stopped",
    commands: []
  },
  {
    row: "Live + Spawned of a connect it no longer holds → ignored",
    rule: "ignored",
    from: at(live),
    message: { _tag: "Spawned", id: 2 },
    to: "Ready",
    commands: []
  },
  {
    row: "Live + Defect → Failed, everything released, waiters fail with the defect",
    rule: "defect",
    from: at(live, { waiters: [reply] }),
    message: { _tag: "Defect", error: LifecycleError.notStarted("t", "supervisor defect") },
    to: "Failed",
    commands: ["ReleaseAll", "Settle", "Warn"],
    check: (m) => assert.strictEqual(m.error?._tag, "NotStarted")
  },
  {
    row: "a report about superseded work is ignored",
    rule: "ignored",
    from: at({ _tag: "Reconnecting", connect: 8 }),
    message: { _tag: "Ended", id: 3, error: crash() },
    to: "Restarting",
    commands: []
  }
]

describe("Transitions.transition", () => {
  it.effect("walks every row of the transition table", () =>
    Effect.gen(function* () {
      const reply = yield* Deferred.make<void, LifecycleError.LifecycleError>()
      for (const row of rows(reply)) {
        const step = Transitions.transition(row.settings ?? settings(), row.from, row.message)
        assert.strictEqual(step.rule, row.rule, row.row)
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

/** Every phase the generator starts from, with the ids its messages name (3: live, 4: a connect…). */
const phases: ReadonlyArray<Phase.Phase> = [
  { _tag: "Stopped", parked: undefined },
  { _tag: "Stopped", parked: { id: 4, done: false } },
  { _tag: "Stopped", parked: { id: 4, done: true } },
  { _tag: "Failed" },
  { _tag: "Starting", connect: 4, retry: true },
  { _tag: "Starting", connect: 4, retry: false },
  { _tag: "Live", session: 3, probeFailures: 0 },
  { _tag: "Live", session: 3, probeFailures: 1 },
  { _tag: "Backoff", timer: 7 },
  { _tag: "Reconnecting", connect: 8 }
]

const policies: ReadonlyArray<Parameters<typeof policy>[0]> = ["never", "on_failure", "always"].flatMap((restart) =>
  [true, false].flatMap((required) =>
    [0, 2].flatMap((max_restarts) =>
      [undefined, 1, 2].map((failures) => ({
        restart: restart as "never" | "on_failure" | "always",
        required,
        max_restarts,
        ...(failures === undefined ? {} : { health: { interval: "1s", failures } })
      }))
    )
  )
)

const messages = (reply: Phase.Reply): ReadonlyArray<Phase.Message> => {
  const errors = [undefined, refused(), auth()]
  return [
    { _tag: "Start", reply },
    { _tag: "Restart", reply },
    { _tag: "Stop" },
    { _tag: "Defect", error: LifecycleError.notStarted("t", "supervisor defect") },
    ...[3, 4, 7, 8].flatMap(
      (id): ReadonlyArray<Phase.Message> => [
        ...errors.map((error) => ({ _tag: "Connected", id, error }) as const),
        ...errors.map((error) => ({ _tag: "Ended", id, error }) as const),
        ...errors.map((error) => ({ _tag: "Probed", id, error }) as const),
        { _tag: "StartupTimeout", id },
        { _tag: "BackoffElapsed", id },
        { _tag: "Stable", id },
        { _tag: "ToolCount", id, count: 2 },
        { _tag: "Spawned", id }
      ]
    )
  ]
}

const listed = (list: ReadonlyArray<string> | "any", item: string) => list === "any" || list.includes(item)

describe("Transitions.table", () => {
  it.effect("every transition the function makes is the row it names, and every row is reached", () =>
    Effect.gen(function* () {
      const reply = yield* Deferred.make<void, LifecycleError.LifecycleError>()
      const waiting = yield* Deferred.make<void, LifecycleError.LifecycleError>()
      const reached = new Set<Transitions.Rule>()
      for (const overrides of policies) {
        const ctx = settings(overrides)
        const retry = !ctx.policy.required && ctx.policy.restart !== "never"
        // A first start retries exactly when its policy allows it: no other Starting exists.
        for (const phase of phases.filter((p) => p._tag !== "Starting" || p.retry === retry)) {
          for (const attempt of [0, 2]) {
            const from = at(phase, { attempt, waiters: [waiting] })
            for (const message of messages(reply)) {
              const step = Transitions.transition(ctx, from, message)
              const row: Transitions.Row = Transitions.table[step.rule]
              const before = Transitions.viewOf(from)
              const after = Transitions.viewOf(step.machine)
              const where = `${before} + ${message._tag} ${JSON.stringify(overrides)} attempt ${attempt} → ${after} (${step.rule})`
              reached.add(step.rule)
              assert.isTrue(listed(row.from, before), `not from this view: ${where}`)
              assert.isTrue(listed(row.on, message._tag), `not on this message: ${where}`)
              assert.strictEqual(after, row.to === "unchanged" ? before : row.to, where)
              if (step.rule === "ignored") assert.strictEqual(step.machine, from, where)
              // Nobody is stranded: every caller waits on, or is answered by, this step.
              const settled = step.commands.flatMap((c) => (c._tag === "Settle" ? c.waiters : []))
              const owed = "reply" in message ? [waiting, message.reply] : [waiting]
              for (const caller of owed) {
                assert.isTrue(step.machine.waiters.includes(caller) || settled.includes(caller), `stranded: ${where}`)
              }
              // The log tells the truth: "restarting" only when it restarts.
              for (const command of step.commands) {
                if (command._tag === "Warn" && command.message.includes("restarting")) {
                  assert.strictEqual(after, "Restarting (reconnecting)", where)
                }
              }
            }
          }
        }
      }
      assert.deepStrictEqual(Array.from(reached).sort(), Object.keys(Transitions.table).sort())
    })
  )
})
