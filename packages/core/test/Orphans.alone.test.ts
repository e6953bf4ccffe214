/**
 * Orphan sweeps: processes whose owner is gone are ended with their group. They need the host to
 * themselves — any Toolvisor running beside them (another test worker's) sweeps the same orphans —
 * so they run one file at a time in the soak project's step (`*.alone.test.ts`).
 */
import * as NodeChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Procfs from "../src/internal/procfs.ts"
import * as Owner from "../src/Owner.ts"
import { awaitMarked, goneOwner, group, stubborn } from "./processes.ts"

const self = Owner.self ?? { pid: process.pid, startTime: 0 }

/** Whether this machine lets an unprivileged process make a pid namespace (containers often do not). */
const canUnshare = NodeChildProcess.spawnSync("unshare", ["-Urpf", "true"]).status === 0

describe.runIf(Procfs.available)("orphan sweeps", () => {
  it.live("a stopped server whose owner is gone is killed with its whole group; a live owner's is not", () =>
    Effect.gen(function* () {
      const orphan = yield* stubborn(yield* goneOwner)
      const owned = yield* stubborn(Owner.encode(self))
      yield* awaitMarked(orphan, 2)
      yield* awaitMarked(owned, 2)
      process.kill(-orphan, "SIGSTOP")
      const killed = yield* Owner.sweepOrphans
      assert.include(killed, orphan)
      assert.notInclude(killed, owned)
      // Returned only once the group is gone: no member, stopped or not, is left.
      assert.isFalse(Procfs.groupAlive(orphan))
      assert.isTrue(Procfs.groupAlive(owned))
    })
  )

  it.live("a mark whose owner pid is alive but started at another time is an orphan's (a reused pid)", () =>
    Effect.gen(function* () {
      const recycled = yield* stubborn(Owner.encode({ pid: process.pid, startTime: self.startTime + 1 }))
      yield* awaitMarked(recycled, 2)
      assert.isTrue(Procfs.isAlive(process.pid))
      assert.include(yield* Owner.sweepOrphans, recycled)
      assert.isFalse(Procfs.groupAlive(recycled))
    })
  )

  it.live("a marked process in a group that an unmarked process leads is left alone", () =>
    Effect.gen(function* () {
      const owner = yield* goneOwner
      const leader = yield* group(`${Owner.envKey}=${owner} sleep 1000 & wait`, {})
      yield* awaitMarked(leader, 1)
      assert.notInclude(yield* Owner.sweepOrphans, leader)
      assert.isTrue(Procfs.groupAlive(leader))
    })
  )

  it.live.runIf(canUnshare)(
    "a marked process in another pid namespace is left alone: its mark names that namespace's pids",
    () =>
      Effect.gen(function* () {
        const owner = yield* goneOwner
        const unshare = yield* group(
          `exec unshare -Urpf --kill-child setsid env ${Owner.envKey}=${owner} sleep 1000`,
          {}
        )
        const inner = yield* Effect.sync(() =>
          Procfs.pids().find((pid) => {
            const stat = Procfs.stat(pid)
            return stat?.ppid === unshare && stat.pgrp === pid && Procfs.environ(pid)?.get(Owner.envKey) === owner
          })
        ).pipe(Effect.repeat({ until: (pid) => pid !== undefined, schedule: Schedule.spaced("10 millis"), times: 500 }))
        assert.isDefined(inner)
        assert.notStrictEqual(Procfs.pidNamespace(inner ?? 0), Procfs.pidNamespace(process.pid))
        assert.notInclude(yield* Owner.sweepOrphans, inner)
        assert.isTrue(Procfs.isAlive(inner ?? 0))
      })
  )

  it.live("guard sweeps at once, then keeps sweeping while its scope is open", () =>
    Effect.gen(function* () {
      const early = yield* stubborn(yield* goneOwner)
      yield* awaitMarked(early, 2)
      const scope = yield* Scope.make()
      yield* Owner.guard("100 millis").pipe(Scope.provide(scope))
      assert.isFalse(Procfs.groupAlive(early), "the first sweep is over before guard returns")
      const later = yield* stubborn(yield* goneOwner)
      yield* Effect.sync(() => Procfs.groupAlive(later)).pipe(
        Effect.repeat({ until: (alive) => !alive, schedule: Schedule.spaced("20 millis"), times: 250 })
      )
      assert.isFalse(Procfs.groupAlive(later))
      yield* Scope.close(scope, Exit.void)
    })
  )
})
