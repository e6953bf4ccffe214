import * as NodeChildProcess from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Owner } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as OrphanSweep from "../src/OrphanSweep.ts"

/**
 * A server left behind: a shell marks a process as its own, in a session of its own as servers
 * are, then exits. Returns the server's pid once it leads its group and its owner is gone; the
 * group is killed when the test's scope closes, whatever the test did.
 */
const leftBehind = Effect.acquireRelease(
  Effect.callback<number>((resume) => {
    const script = `start=$(cut -d' ' -f22 /proc/$$/stat); ${Owner.envKey}=$$/$start setsid sleep 1000 & echo $!`
    const owner = NodeChildProcess.spawn("bash", ["-c", script], { stdio: ["ignore", "pipe", "ignore"] })
    let out = ""
    owner.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
    owner.once("exit", () => resume(Effect.succeed(Number(out.trim()))))
  }),
  (pid) => Effect.sync(() => Procfs.groupAlive(pid) && process.kill(-pid, "SIGKILL"))
).pipe(
  Effect.tap((pid) =>
    Effect.sync(() => Procfs.stat(pid)?.pgrp === pid && Owner.scan().some((m) => m.pid === pid)).pipe(
      Effect.repeat({ until: (ready) => ready, schedule: Schedule.spaced("10 millis"), times: 500 })
    )
  )
)

describe.runIf(Procfs.available)("OrphanSweep", () => {
  it.live("the layer is built only once the stopped server a gone owner left is gone", () =>
    Effect.gen(function* () {
      const orphan = yield* leftBehind
      process.kill(orphan, "SIGSTOP")
      assert.isTrue(Procfs.isAlive(orphan))
      yield* Layer.build(OrphanSweep.layer)
      assert.isFalse(Procfs.groupAlive(orphan))
    })
  )
})
