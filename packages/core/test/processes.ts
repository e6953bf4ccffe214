/**
 * Real processes for the owner-mark and watchdog tests: process groups marked as some owner's, and
 * owners that run or are gone. Each is tied to the test's scope, so a failing assertion leaks none.
 */
import * as NodeChildProcess from "node:child_process"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Owner from "../src/Owner.ts"
import * as Procfs from "../src/Procfs.ts"

/** Polls `done` every 10 ms until it holds (false after 5 s). */
export const until = (done: () => boolean) =>
  Effect.sync(done).pipe(Effect.repeat({ until: (held) => held, schedule: Schedule.spaced("10 millis"), times: 500 }))

/**
 * Runs `script` under bash, leading a process group of its own, with `env` added; the group is
 * killed when the test's scope closes, whatever the test did. Returns once bash has started.
 */
export const group = (script: string, env: Readonly<Record<string, string>>) =>
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

/** A server that ignores stdin EOF and SIGTERM, with a grandchild, marked in `key` as `owner`'s. */
export const stubborn = (owner: string, key = Owner.envKey) =>
  group("trap '' TERM; sleep 1000 & wait", { [key]: owner })

/** Waits until `members` live processes of the group carry a mark in `key`. */
export const awaitMarked = (pgid: number, members: number, key = Owner.envKey) =>
  until(
    () =>
      Procfs.pids().filter((pid) => {
        const stat = Procfs.stat(pid)
        return stat?.pgrp === pgid && stat.state !== "Z" && Procfs.environ(pid)?.has(key) === true
      }).length >= members
  )

/** An owner that runs until `kill`: a process of this test, with its mark. Killed with the scope anyway. */
export const liveOwner = Effect.gen(function* () {
  const pid = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      const child = NodeChildProcess.spawn("sleep", ["1000"], { stdio: "ignore" })
      child.once("spawn", () => resume(Effect.succeed(child.pid ?? 0)))
    }),
    (pid) => Effect.sync(() => Procfs.isAlive(pid) && process.kill(pid, "SIGKILL"))
  )
  const mark = Owner.encode({ pid, startTime: Procfs.stat(pid)?.startTime ?? 0 })
  const kill = Effect.sync(() => process.kill(pid, "SIGKILL")).pipe(Effect.andThen(until(() => !Procfs.isAlive(pid))))
  return { pid, mark, kill }
})

/** An owner that existed and is gone: a process that ran, with its start time, then was killed. */
export const goneOwner = Effect.gen(function* () {
  const owner = yield* liveOwner
  yield* owner.kill
  return owner.mark
})
