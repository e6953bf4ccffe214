import * as ChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Owner, ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Orphans from "../src/Orphans.ts"
import { journalServer } from "./helpers.ts"

/** A server that ignores stdin EOF and SIGTERM, marked as runner `runner`'s in process `owner`, in a group of its own. */
const stubborn = (runner: string, owner: Owner.Owner) => {
  const child = ChildProcess.spawn(process.execPath, [journalServer], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    env: { ...process.env, IGNORE_EOF: "1", ...Orphans.mark(runner), [Owner.envKey]: Owner.encode(owner) }
  })
  child.stdin.end()
  return child.pid ?? 0
}

const waitMarked = (pid: number) =>
  Effect.sync(() => Orphans.scan().some((m) => m.pgid === pid)).pipe(
    Effect.repeat({ until: (found) => found, times: 100, schedule: undefined }),
    Effect.andThen(Effect.sleep("20 millis"))
  )

/** This test process, and a process that is gone (pid 999999 with a start time no process has). */
const live = Owner.self ?? { pid: process.pid, startTime: 0 }
const gone = { pid: 999999, startTime: 0 }

describe("orphan sweeps", () => {
  it.live("a runner coming back kills what its earlier life left, and nothing of other runners", () =>
    Effect.gen(function* () {
      const mine = stubborn("127.0.0.1:39001", gone)
      const other = stubborn("127.0.0.1:39002", live)
      yield* waitMarked(mine)
      yield* waitMarked(other)
      const killed = yield* Orphans.sweepEarlier("127.0.0.1:39001")
      assert.deepStrictEqual(killed, [mine])
      assert.isFalse(ServerProcess.isAlive(mine))
      assert.isTrue(ServerProcess.isAlive(other))
      process.kill(-other, "SIGKILL")
    })
  )

  it.live("what a dead runner left is killed; what a live runner started is not", () =>
    Effect.gen(function* () {
      const orphan = stubborn("127.0.0.1:39003", gone)
      const owned = stubborn("127.0.0.1:39004", live)
      yield* waitMarked(orphan)
      yield* waitMarked(owned)
      const killed = yield* Owner.sweepOrphans
      assert.include(killed, orphan)
      assert.notInclude(killed, owned)
      assert.isFalse(ServerProcess.isAlive(orphan))
      assert.isTrue(ServerProcess.isAlive(owned))
      // This process's own marks go on its way out.
      assert.deepStrictEqual(yield* Orphans.sweepOwn("127.0.0.1:39004"), [owned])
      assert.isFalse(ServerProcess.isAlive(owned))
    })
  )
})
