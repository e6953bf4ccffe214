import * as ChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Owner } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Orphans from "../src/internal/orphans.ts"
import { journalServer } from "./helpers.ts"

/**
 * A server that ignores stdin EOF and SIGTERM, marked as runner `runner`'s in process `owner`, in
 * a group of its own; returned once a sweep can see it, and killed with the test's scope whatever
 * the test did.
 */
const stubborn = (runner: string, owner: Owner.Owner) =>
  Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      const child = ChildProcess.spawn(process.execPath, [journalServer], {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"],
        env: { ...process.env, IGNORE_EOF: "1", ...Orphans.mark(runner), [Owner.envKey]: Owner.encode(owner) }
      })
      child.stdin.end()
      child.once("spawn", () => resume(Effect.succeed(child.pid ?? 0)))
    }),
    (pgid) => Effect.sync(() => Procfs.groupAlive(pgid) && process.kill(-pgid, "SIGKILL"))
  ).pipe(
    Effect.tap((pgid) =>
      Effect.sync(() => Orphans.scan().some((m) => m.pgid === pgid && m.runner === runner)).pipe(
        Effect.repeat({ until: (seen) => seen, schedule: Schedule.spaced("10 millis"), times: 500 })
      )
    )
  )

/** This test process, and a process that is gone (pid 999999 with a start time no process has). */
const live = Owner.self ?? { pid: process.pid, startTime: 0 }
const gone = { pid: 999999, startTime: 0 }

const id = "127.0.0.1:39001"
const other = "127.0.0.1:39002"

describe.runIf(Procfs.available)("a runner's orphan sweeps", () => {
  it.live(
    "a runner coming back ends what its earlier life left, and going ends what its own servers left, nothing of other runners",
    () =>
      Effect.gen(function* () {
        const earlier = yield* stubborn(id, gone)
        const others = yield* stubborn(other, live)
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(Orphans.layer(id), scope)
        // Gone once the runner's sweep layer is up, before the runner listens. Any Toolvisor on the
        // host may end it as well (its owner is gone: a concurrent test's sweep does what this one
        // does), so what is asserted is that it is gone, not who ended it.
        assert.isFalse(Procfs.groupAlive(earlier), "the earlier life's server outlived the runner's start")
        assert.isTrue(Procfs.groupAlive(others), "another runner's server was ended")

        // What this runner started and left is ended when it goes; only this process's sweep can
        // pick it, since its owner — this process — is alive.
        const own = yield* stubborn(id, live)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(Procfs.groupAlive(own), "what this runner left outlived it")
        assert.isTrue(Procfs.groupAlive(others), "another runner's server was ended")
      })
  )
})
