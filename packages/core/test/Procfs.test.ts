import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Procfs from "../src/internal/procfs.ts"

/** Runs `command` as a child for the test's scope; the child is killed when the scope closes. */
const child = (command: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => NodeChildProcess.spawn(command, args, { stdio: "ignore", env: { ...process.env, ...env } })),
    (c) => Effect.sync(() => c.kill("SIGKILL"))
  ).pipe(
    Effect.flatMap((c) =>
      Effect.callback<number>((resume) => {
        c.once("spawn", () => resume(Effect.succeed(c.pid ?? 0)))
      })
    )
  )

describe.runIf(Procfs.available)("Procfs", () => {
  it("reads this process's stat fields", () => {
    const stat = Procfs.stat(process.pid)
    assert.isDefined(stat)
    assert.strictEqual(stat?.ppid, process.ppid)
    assert.isTrue(Number.isInteger(stat?.pgrp) && (stat?.pgrp ?? 0) > 0)
    assert.isAbove(stat?.startTime ?? 0, 0)
    assert.isAtLeast((stat?.utime ?? 0) + (stat?.stime ?? 0), 1)
    assert.include(["R", "S"], stat?.state)
  })

  it.live("reads the fields after a command name with spaces and parentheses in it", () =>
    Effect.gen(function* () {
      const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "procfs-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true })))
      const odd = NodePath.join(dir, "a) (b")
      NodeFs.copyFileSync("/bin/sleep", odd)
      NodeFs.chmodSync(odd, 0o755)
      const pid = yield* child(odd, ["1000"])
      const stat = Procfs.stat(pid)
      assert.strictEqual(stat?.ppid, process.pid)
      assert.strictEqual(stat?.pgrp, Procfs.stat(process.pid)?.pgrp)
      assert.isAtLeast(stat?.startTime ?? 0, Procfs.stat(process.pid)?.startTime ?? Number.POSITIVE_INFINITY)
    })
  )

  it.live("reads a process's environment, values with '=' in them included", () =>
    Effect.gen(function* () {
      const pid = yield* child("sleep", ["1000"], { PROCFS_TEST: "a=b=c" })
      const env = Procfs.environ(pid)
      assert.strictEqual(env?.get("PROCFS_TEST"), "a=b=c")
      assert.strictEqual(env?.get("PATH"), process.env.PATH)
    })
  )

  it.live("a killed process is not alive from the moment it is a zombie; a live group is", () =>
    Effect.gen(function* () {
      const pid = yield* child("sleep", ["1000"])
      assert.isTrue(Procfs.isAlive(pid))
      assert.include(Procfs.pids(), pid)
      process.kill(pid, "SIGKILL")
      yield* Effect.sync(() => Procfs.isAlive(pid)).pipe(
        Effect.repeat({ until: (alive) => !alive, schedule: Schedule.spaced("10 millis"), times: 500 })
      )
      assert.isFalse(Procfs.isAlive(pid))
      assert.isTrue(Procfs.groupAlive(Procfs.stat(process.pid)?.pgrp ?? 0))
    })
  )
})
