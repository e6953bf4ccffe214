import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Owner } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Effect from "effect/Effect"
import { everythingEntry, mcpEntry, root, Session, writeConfig, yaml } from "./helpers.ts"

/** A server that keeps running when its stdin closes and ignores SIGTERM, as some real ones do. */
const stubbornServer = NodePath.join(root, "packages/cluster/test/fixtures/journal-server.mjs")
/** A server whose descendant leaves its process group with setsid and ignores SIGTERM. */
const escapingServer = NodePath.join(import.meta.dirname, "fixtures/escaping-server.mjs")

const config = () =>
  writeConfig(
    yaml([
      everythingEntry("everything"),
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
const serverPids = (session: Session, toolsets: ReadonlyArray<string> = names) =>
  Promise.all(toolsets.map((name) => session.waitFor(ready(name)).then((line) => Number(line.pid))))

/** Polls `done` every 20 ms until it holds or `within` ms have passed; returns whether it held. */
const poll = async (done: () => boolean, within: number) => {
  const deadline = Date.now() + within
  while (!done()) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return true
}

/** The watchdog of a CLI: its child that runs as `toolvisor-watchdog`. */
const watchdogOf = (cli: number) =>
  Procfs.pids().find((pid) => {
    if (Procfs.stat(pid)?.ppid !== cli) return false
    try {
      return NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("toolvisor-watchdog\0")
    } catch {
      return false
    }
  })

/**
 * Runs `body` with the CLI sessions it opens; whatever happened, no CLI of it and no server one
 * of them started is left afterwards.
 */
const withSessions = async (body: (open: (args: ReadonlyArray<string>) => Session) => Promise<void>) => {
  const sessions: Array<Session> = []
  try {
    await body((args) => {
      const session = new Session(args)
      sessions.push(session)
      return session
    })
  } finally {
    for (const session of sessions) {
      session.child.kill("SIGKILL")
      await session.exited()
    }
    await Effect.runPromise(
      Owner.sweep("left by this test's CLIs", (m) => sessions.some((s) => s.child.pid === m.owner.pid))
    )
  }
}

describe.runIf(Procfs.available)("toolvisor after a SIGKILL", () => {
  it("its watchdog ends every server within 3 s, a stopped one and one that ignores EOF, with nothing started", () =>
    withSessions(async (open) => {
      const session = open(["run", config(), "--json"])
      const pids = await serverPids(session)
      const cli = session.child.pid ?? 0
      const watchdog = watchdogOf(cli)
      if (watchdog === undefined) return assert.fail("the CLI runs no watchdog")
      const [, fixture = 0, stubborn = 0] = pids
      process.kill(-fixture, "SIGSTOP")

      session.child.kill("SIGKILL")
      await session.exited()
      const gone = await poll(() => !pids.some(Procfs.groupAlive), 3000)
      assert.isTrue(
        gone,
        `left over: ${pids.filter(Procfs.groupAlive).join(", ")} (stopped ${fixture}, deaf ${stubborn})`
      )
      assert.isTrue(await poll(() => !Procfs.isAlive(watchdog), 3000), "the watchdog exits")
      // The watchdog ended them, not the periodic sweep of some other Toolvisor on this host: it says so.
      const said = new RegExp(
        `toolvisor-watchdog: the Toolvisor with pid ${cli} is gone; .*:(?=.* ${fixture}\\b)(?=.* ${stubborn}\\b)`
      )
      await poll(() => said.test(session.stderr), 3000)
      assert.match(session.stderr, said)
    }))

  it("the next start leaves none of the servers the killed one ran when its watchdog was killed too", () =>
    withSessions(async (open) => {
      const first = open(["run", config(), "--json"])
      const pids = await serverPids(first)
      const cli = first.child.pid ?? 0
      const owner = Owner.encode({ pid: cli, startTime: Procfs.stat(cli)?.startTime ?? 0 })
      for (const pid of pids) {
        assert.strictEqual(Procfs.stat(pid)?.pgrp, pid, "each server leads its own process group")
        assert.strictEqual(Procfs.environ(pid)?.get(Owner.envKey), owner, "each server carries the CLI's mark")
      }
      const [, fixture = 0, stubborn = 0] = pids
      process.kill(-fixture, "SIGSTOP")

      const watchdog = watchdogOf(cli)
      // Never `process.kill(0)`: that is this test's own process group.
      if (watchdog === undefined) return assert.fail("the CLI runs no watchdog")
      process.kill(watchdog, "SIGKILL")
      first.child.kill("SIGKILL")
      await first.exited()
      // No finalizer ran and no watchdog is left: a stopped server cannot see its stdin close, a stubborn one ignores it.
      assert.isTrue(Procfs.isAlive(fixture), "the stopped server outlives the killed CLI")
      assert.isTrue(Procfs.isAlive(stubborn), "the server that ignores stdin EOF outlives the killed CLI")

      const second = open(["run", config(), "--json"])
      const gone = await poll(() => !pids.some(Procfs.groupAlive), 30_000)
      assert.isTrue(gone, `left over: ${pids.filter(Procfs.groupAlive).join(", ")}\n${second.stderr}`)
      const fresh = await serverPids(second)
      assert.isEmpty(fresh.filter((pid) => pids.includes(pid)))

      second.child.kill("SIGTERM")
      assert.strictEqual(await second.exited(), 0)
      assert.isEmpty(fresh.filter(Procfs.groupAlive), "no server outlives a CLI that was stopped")
    }))
})

describe.runIf(Procfs.available)("a server's descendant that calls setsid", () => {
  const entry = (name: string) => [
    "      - type: mcp",
    `        name: ${name}`,
    `        command: "${process.execPath}"`,
    `        args: ["${escapingServer}"]`
  ]

  /** The pid of the escaped descendant of `toolset`'s current server, as the server reports it. */
  const escapee = async (session: Session, toolset: string) => {
    const id = `${toolset}-${session.lines.length}`
    const from = session.lines.length
    session.send({ cmd: "call", tool: `${toolset}_escapee`, id })
    const answer = await session.waitFor((l) => l.type === "result" && l.id === id, from)
    return Number(/"text":"(\d+)"/.exec(JSON.stringify(answer.result))?.[1])
  }

  it("ends with its server at a restart (another toolset's stays) and at a SIGTERM of the CLI", () =>
    withSessions(async (open) => {
      const session = open(["run", writeConfig(yaml([entry("escaping"), entry("bystander")])), "--json"])
      const [server = 0] = await serverPids(session, ["escaping", "bystander"])
      const first = await escapee(session, "escaping")
      const bystander = await escapee(session, "bystander")
      assert.isTrue(Procfs.isAlive(first) && Procfs.isAlive(bystander))
      assert.notStrictEqual(Procfs.stat(first)?.pgrp, server, "it left the server's process group")

      const from = session.lines.length
      session.send({ cmd: "restart", toolset: "escaping", id: "restart" })
      await session.waitFor((l) => l.type === "result" && l.id === "restart", from)
      assert.isTrue(await poll(() => !Procfs.isAlive(first), 30_000), "the old server's escapee is gone")
      assert.isTrue(Procfs.isAlive(bystander), "another toolset's escapee stays")
      const second = await escapee(session, "escaping")
      assert.notStrictEqual(second, first)
      assert.isTrue(Procfs.isAlive(second))

      session.child.kill("SIGTERM")
      assert.strictEqual(await session.exited(), 0)
      // Gone when the CLI has exited: its toolsets' close ended them, not its watchdog, which acts only after.
      assert.isFalse(Procfs.isAlive(second), "the new server's escapee is gone")
      assert.isFalse(Procfs.isAlive(bystander), "the bystander's escapee is gone")
    }))
})
