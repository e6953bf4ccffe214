import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import type * as NodeStream from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Procfs from "../src/internal/procfs.ts"
import * as Watchdog from "../src/internal/watchdog.ts"
import * as Owner from "../src/Owner.ts"
import { awaitMarked, group, liveOwner, stubborn, until } from "./processes.ts"

/** The mark's variable in these tests: no Toolvisor on this host sweeps what carries it, so only the watchdog can. */
const key = "TOOLVISOR_WATCHDOG_TEST_OWNER"

/**
 * A directory whose `grep` has no `-z` (as some minimal systems' grep has not): first in PATH, it
 * makes the watchdog read each environment with `tr | grep` instead of one `grep -z`. Removed with
 * the test's scope.
 */
const grepWithoutZ = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-grep-"))
    const real = NodeChildProcess.execFileSync("sh", ["-c", "command -v grep"], { encoding: "utf8" }).trim()
    const script = `#!/bin/sh\nfor a in "$@"; do case $a in -*z*) exit 2 ;; esac; done\nexec ${real} "$@"\n`
    NodeFs.writeFileSync(NodePath.join(dir, "grep"), script, { mode: 0o755 })
    return dir
  }),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * The watchdog script for `owner`, as `Watchdog.start` runs it but with its stderr kept, and with
 * `path` first in PATH. Its pipe ends (and the script with it) when the test's scope closes.
 */
const watchdog = (owner: string, path?: string) =>
  Effect.acquireRelease(
    Effect.callback<{
      readonly child: NodeChildProcess.ChildProcessByStdio<NodeStream.Writable, null, NodeStream.Readable>
      readonly stderr: () => string
      readonly closed: Effect.Effect<number | null>
    }>((resume) => {
      const env = path === undefined ? process.env : { ...process.env, PATH: `${path}:${process.env.PATH}` }
      const child = NodeChildProcess.spawn(Watchdog.shell, Watchdog.args({ key, owner, graceMillis: 300 }), {
        env,
        stdio: ["pipe", "ignore", "pipe"]
      })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      const closed = new Promise<number | null>((resolve) => child.once("close", resolve))
      child.once("spawn", () =>
        resume(Effect.succeed({ child, stderr: () => stderr, closed: Effect.promise(() => closed) }))
      )
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

/** The arguments of a process, from /proc. */
const cmdline = (pid: number) => {
  try {
    return NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1)
  } catch {
    return []
  }
}

/** This process's watchdogs: its children that run as `toolvisor-watchdog`. */
const watchdogs = () =>
  Procfs.pids().filter((pid) => Procfs.stat(pid)?.ppid === process.pid && cmdline(pid)[0] === "toolvisor-watchdog")

/** Resident memory of a process in kB, from /proc/<pid>/status. */
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])

describe.runIf(Procfs.available)("the watchdog", () => {
  for (const [reader, withoutZ] of [
    ["one grep -z", false],
    ["tr | grep each, without grep -z", true]
  ] as const) {
    it.live(`once its owner is gone it ends the owner's groups, a stopped one too, and nothing else (${reader})`, () =>
      Effect.gen(function* () {
        const owner = yield* liveOwner
        const stopped = yield* stubborn(owner.mark, key)
        const deaf = yield* stubborn(owner.mark, key)
        const othersOwner = yield* liveOwner
        const others = yield* stubborn(othersOwner.mark, key)
        // A mark that only starts like the owner's, and one a newline inside another value tries to forge.
        const lookalike = yield* stubborn(`${owner.mark}0`, key)
        const forged = yield* group("sleep 1000 & wait", { FORGED: `x\n${key}=${owner.mark}` })
        const unmarked = yield* group("sleep 1000 & wait", {})
        // A marked process in a group that an unmarked one leads: the leader is not the owner's to end.
        const foreignLed = yield* group(`${key}=${owner.mark} sleep 1000 & wait`, {})
        for (const pgid of [stopped, deaf, others, lookalike]) yield* awaitMarked(pgid, 2, key)
        yield* awaitMarked(foreignLed, 1, key)
        yield* awaitMarked(forged, 2, "FORGED")
        process.kill(-stopped, "SIGSTOP")
        const { child, stderr, closed } = yield* watchdog(owner.mark, withoutZ ? yield* grepWithoutZ : undefined)

        yield* owner.kill
        const started = Date.now()
        child.stdin.end()
        assert.strictEqual(yield* closed, 0)
        const took = Date.now() - started
        assert.isFalse(Procfs.groupAlive(stopped), "the stopped group is gone")
        assert.isFalse(Procfs.groupAlive(deaf), "the group that ignores SIGTERM is gone")
        for (const pgid of [others, lookalike, forged, unmarked, foreignLed]) {
          assert.isTrue(Procfs.groupAlive(pgid), `${pgid} is left alone`)
        }
        assert.match(stderr(), new RegExp(`pid ${owner.pid} is gone; .*:(?=.* ${stopped}\\b)(?=.* ${deaf}\\b)`))
        assert.isBelow(took, 3000)
      })
    )
  }

  it.live("an owner that still runs when the pipe ends keeps its servers; the watchdog exits", () =>
    Effect.gen(function* () {
      const owner = yield* liveOwner
      const server = yield* stubborn(owner.mark, key)
      yield* awaitMarked(server, 2, key)
      const { child, stderr, closed } = yield* watchdog(owner.mark)
      child.stdin.end()
      assert.strictEqual(yield* closed, 0)
      assert.isTrue(Procfs.groupAlive(server))
      assert.strictEqual(stderr(), "")
    })
  )

  it.live("the first claim starts one watchdog for this process: a session of its own, unmarked, small", () =>
    Effect.gen(function* () {
      const mark = Owner.encode(Owner.self ?? { pid: 0, startTime: 0 })
      // As when this process is itself a server of another Toolvisor: the watchdog must not inherit those marks.
      yield* Effect.acquireRelease(
        Effect.sync(() => Object.assign(process.env, { [Owner.envKey]: "1/2", [Owner.serverKey]: "7" })),
        () =>
          Effect.sync(() => {
            delete process.env[Owner.envKey]
            delete process.env[Owner.serverKey]
          })
      )
      const first = yield* Owner.claim
      const second = yield* Owner.claim
      assert.notStrictEqual(first.server, second.server)
      assert.deepStrictEqual(first.env, { [Owner.envKey]: mark, [Owner.serverKey]: first.server })
      const [pid, ...more] = watchdogs()
      // Never `process.kill(0)` below: that is this test's own process group.
      if (pid === undefined) return assert.fail("no watchdog")
      assert.isEmpty(more, "one watchdog, however many servers")
      assert.strictEqual(Procfs.stat(pid)?.pgrp, pid, "it leads its own group")
      assert.deepStrictEqual(cmdline(pid).slice(-3), [Owner.envKey, mark, "5"])
      const env = Procfs.environ(pid)
      assert.isFalse(env?.has(Owner.envKey) || env?.has(Owner.serverKey), "it carries no mark")
      assert.isBelow(rss(pid), 8 * 1024, "resident kB")

      // One that was killed is replaced at the next claim.
      process.kill(pid, "SIGKILL")
      yield* until(() => Procfs.stat(pid) === undefined)
      yield* Owner.claim
      const [replacement] = watchdogs()
      assert.isDefined(replacement)
      assert.notStrictEqual(replacement, pid)
    })
  )
})
