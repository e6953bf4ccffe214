import * as NodeChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Owner from "../src/Owner.ts"
import * as Procfs from "../src/Procfs.ts"
import * as ServerProcess from "../src/ServerProcess.ts"

/**
 * Runs `script` under bash, leading a process group of its own, with `env` added; the group is
 * killed when the test's scope closes, whatever the test did. Returns once bash has started.
 */
const group = (script: string, env: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      const child = NodeChildProcess.spawn("bash", ["-c", script], {
        detached: true,
        stdio: "ignore",
        env: { ...process.env, ...env }
      })
      child.once("spawn", () => resume(Effect.succeed(child.pid ?? 0)))
    }),
    (pgid) =>
      Effect.sync(() => {
        try {
          process.kill(-pgid, "SIGKILL")
        } catch {
          // Swept already.
        }
      })
  )

/** A server that ignores stdin EOF and SIGTERM, with a grandchild, marked as `owner`'s. */
const stubborn = (owner: string) => group("trap '' TERM; sleep 1000 & wait", { [Owner.envKey]: owner })

/** Waits until the scan sees every member of the group the test started. */
const awaitMarked = (pgid: number, members: number) =>
  Effect.sync(() => Owner.scan().filter((m) => m.pgid === pgid).length).pipe(
    Effect.repeat({ until: (seen) => seen >= members, schedule: Schedule.spaced("10 millis"), times: 500 })
  )

/** An owner that existed and is gone: a process that ran, with its start time, then was killed. */
const goneOwner = Effect.gen(function* () {
  const pid = yield* Effect.callback<number>((resume) => {
    const child = NodeChildProcess.spawn("sleep", ["1000"], { stdio: "ignore" })
    child.once("spawn", () => resume(Effect.succeed(child.pid ?? 0)))
  })
  const startTime = Procfs.stat(pid)?.startTime ?? 0
  process.kill(pid, "SIGKILL")
  yield* Effect.sync(() => Procfs.isAlive(pid)).pipe(
    Effect.repeat({ until: (alive) => !alive, schedule: Schedule.spaced("10 millis"), times: 500 })
  )
  return Owner.encode({ pid, startTime })
})

const self = Owner.self ?? { pid: process.pid, startTime: 0 }

/** Whether this machine lets an unprivileged process make a pid namespace (containers often do not). */
const canUnshare = NodeChildProcess.spawnSync("unshare", ["-Urpf", "true"]).status === 0

describe("owner marks", () => {
  it("encode and decode are inverse; anything else is not a mark", () => {
    const owner = { pid: 4242, startTime: 987654321 }
    assert.strictEqual(Owner.encode(owner), "4242/987654321")
    assert.deepStrictEqual(Owner.decode(Owner.encode(owner)), owner)
    for (const bad of ["", "4242", "4242/", "/1", "a/b", "1/2/3", " 1/2", "1.5/2", "127.0.0.1:39001/999999"]) {
      assert.isUndefined(Owner.decode(bad), bad)
    }
  })

  it.runIf(Procfs.available)("this process is a live owner; its pid with another start time is not", () => {
    assert.strictEqual(Owner.self?.pid, process.pid)
    assert.isTrue(Owner.isAlive(self))
    assert.isFalse(Owner.isAlive({ ...self, startTime: self.startTime + 1 }))
    assert.deepStrictEqual(Owner.mark, { [Owner.envKey]: Owner.encode(self) })
  })

  it.live.runIf(Procfs.available)("every server carries this process's mark, whatever its spec's env says", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const proc = yield* ServerProcess.spawn("marked", {
        command: "sleep",
        args: ["1000"],
        env: { [Owner.envKey]: "1/1" },
        grace: { stdin: "10 millis", term: "10 millis" }
      }).pipe(Scope.provide(scope))
      assert.strictEqual(Procfs.environ(proc.pid)?.get(Owner.envKey), Owner.encode(self))
      const [marked] = Owner.scan().filter((m) => m.pid === proc.pid)
      assert.deepStrictEqual(marked?.owner, self)
      assert.strictEqual(marked?.pgid, proc.pid)
      yield* Scope.close(scope, Exit.void)
    })
  )
})

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
