import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Procfs from "../src/internal/procfs.ts"
import * as Owner from "../src/Owner.ts"
import * as ServerProcess from "../src/ServerProcess.ts"
import { until } from "./processes.ts"

const self = Owner.self ?? { pid: process.pid, startTime: 0 }

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
