import * as NodeChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Owner from "../src/Owner.ts"
import * as Procfs from "../src/Procfs.ts"
import * as ServerProcess from "../src/ServerProcess.ts"
import { awaitMarked, goneOwner, group, stubborn, until } from "./processes.ts"

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
  })

  it.live.runIf(Procfs.available)("every server carries this process's mark, whatever its spec's env says", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const proc = yield* ServerProcess.spawn("marked", {
        command: "sleep",
        args: ["1000"],
        env: { [Owner.envKey]: "1/1", [Owner.serverKey]: "0" },
        grace: { stdin: "10 millis", term: "10 millis" }
      }).pipe(Scope.provide(scope))
      assert.strictEqual(Procfs.environ(proc.pid)?.get(Owner.envKey), Owner.encode(self))
      assert.match(Procfs.environ(proc.pid)?.get(Owner.serverKey) ?? "", /^[1-9]\d*$/)
      const [marked] = Owner.scan().filter((m) => m.pid === proc.pid)
      assert.deepStrictEqual(marked?.owner, self)
      assert.strictEqual(marked?.pgid, proc.pid)
      yield* Scope.close(scope, Exit.void)
    })
  )
})

/**
 * A server (bash, then `sleep`) whose child calls `setsid`, as a daemon does, and ignores SIGTERM:
 * it leaves the server's process group and session. Returns the server and the escapee's pid once
 * it runs; the escapee is killed when the test's scope closes, whatever the test did.
 */
const escaping = (toolset: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const server = yield* ServerProcess.spawn(toolset, {
      command: "bash",
      args: ["-c", `setsid sh -c "trap '' TERM; exec sleep 1000" </dev/null >/dev/null 2>&1 & exec sleep 1000`],
      grace: { stdin: "100 millis", term: "100 millis" }
    }).pipe(Scope.provide(scope))
    const marks = Procfs.environ(server.pid)
    const [mark, number] = [marks?.get(Owner.envKey), marks?.get(Owner.serverKey)]
    // The owner's mark as well as the number: another test worker's servers are numbered from 1 too.
    const find = () =>
      Owner.scan().find(
        (m) =>
          m.env.get(Owner.envKey) === mark &&
          m.env.get(Owner.serverKey) === number &&
          m.pgid === m.pid &&
          m.pid !== server.pid
      )
    yield* until(() => find() !== undefined)
    const escapee = find()?.pid ?? 0
    yield* Effect.addFinalizer(() => Effect.sync(() => Procfs.isAlive(escapee) && process.kill(escapee, "SIGKILL")))
    return { server, escapee, close: Scope.close(scope, Exit.void) }
  })

describe.runIf(Procfs.available)("escaped descendants", () => {
  it.live("closing a server ends what left its group with setsid, and only that server's", () =>
    Effect.gen(function* () {
      const first = yield* escaping("first")
      const second = yield* escaping("second")
      assert.notStrictEqual(Procfs.stat(first.escapee)?.pgrp, first.server.pid, "the escapee left the server's group")
      yield* first.close
      assert.isFalse(Procfs.isAlive(first.escapee), "gone once the close returns")
      assert.isTrue(Procfs.isAlive(second.escapee), "another server's escapee stays")
      yield* second.close
      assert.isFalse(Procfs.isAlive(second.escapee))
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
