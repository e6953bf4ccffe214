import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Owner, Procfs } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import { everything, mcpEntry, root, Session, writeConfig, yaml } from "./helpers.ts"

/** A server that keeps running when its stdin closes and ignores SIGTERM, as some real ones do. */
const stubbornServer = NodePath.join(root, "packages/cluster/test/fixtures/journal-server.mjs")

const config = () =>
  writeConfig(
    yaml([
      [
        "      - type: mcp",
        "        name: everything",
        `        command: "${process.execPath}"`,
        `        args: ["${everything}", "stdio"]`
      ],
      mcpEntry("fixture"),
      [
        "      - type: mcp",
        "        name: stubborn",
        `        command: "${process.execPath}"`,
        `        args: ["${stubbornServer}"]`,
        '        env: { IGNORE_EOF: "1" }'
      ]
    ])
  )

const names = ["everything", "fixture", "stubborn"]

const ready = (toolset: string) => (line: { readonly [key: string]: unknown }) =>
  line.type === "status" && line.toolset === toolset && line.state === "Ready"

/** The pid of each toolset's server once all are Ready, in `names` order. */
const serverPids = (session: Session) =>
  Promise.all(names.map((name) => session.waitFor(ready(name)).then((line) => Number(line.pid))))

/** Polls `done` every 20 ms until it holds or `within` ms have passed; returns whether it held. */
const poll = async (done: () => boolean, within: number) => {
  const deadline = Date.now() + within
  while (!done()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

describe.runIf(Procfs.available)("toolvisor after a SIGKILL", () => {
  it("the next start leaves none of the servers the killed one ran, a stopped one included", async () => {
    const sessions: Array<Session> = []
    try {
      const first = new Session(["run", config(), "--json"])
      sessions.push(first)
      const pids = await serverPids(first)
      const cli = first.child.pid ?? 0
      const owner = Owner.encode({ pid: cli, startTime: Procfs.stat(cli)?.startTime ?? 0 })
      for (const pid of pids) {
        assert.strictEqual(Procfs.stat(pid)?.pgrp, pid, "each server leads its own process group")
        assert.strictEqual(Procfs.environ(pid)?.get(Owner.envKey), owner, "each server carries the CLI's mark")
      }
      const [, fixture = 0, stubborn = 0] = pids
      process.kill(-fixture, "SIGSTOP")

      first.child.kill("SIGKILL")
      await first.exited()
      // No finalizer ran: a stopped server cannot see its stdin close, a stubborn one ignores it.
      assert.isTrue(Procfs.isAlive(fixture), "the stopped server outlives the killed CLI")
      assert.isTrue(Procfs.isAlive(stubborn), "the server that ignores stdin EOF outlives the killed CLI")

      const second = new Session(["run", config(), "--json"])
      sessions.push(second)
      const gone = await poll(() => !pids.some(Procfs.groupAlive), 30_000)
      assert.isTrue(gone, `left over: ${pids.filter(Procfs.groupAlive).join(", ")}\n${second.stderr}`)
      const fresh = await serverPids(second)
      assert.isEmpty(fresh.filter((pid) => pids.includes(pid)))

      second.child.kill("SIGTERM")
      assert.strictEqual(await second.exited(), 0)
      assert.isEmpty(fresh.filter(Procfs.groupAlive), "no server outlives a CLI that was stopped")
    } finally {
      // Whatever happened, no CLI of this test and no server one of them started is left.
      for (const session of sessions) {
        session.child.kill("SIGKILL")
        await session.exited()
      }
      await Effect.runPromise(
        Owner.sweep("left by this test's CLIs", (m) => sessions.some((s) => s.child.pid === m.owner.pid))
      )
    }
  })
})
