/**
 * `run --json` as a script drives it: commands answered concurrently with their ids (a status or a
 * restart at once, however many calls are in flight or waiting), a tools line only when the catalog
 * changes, the end of stdin ending the run, a signal answering every command still unanswered, and
 * a hostile line (nested too deep, or too long) refused at once with a typed error that keeps its
 * id while the run goes on. And as a service runs it (systemd, `docker run` without `-i`): stdin on
 * /dev/null is no command and no end — the run serves its status until SIGTERM.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Predicate from "effect/Predicate"
import { cliArgs, freePort, isAlive, mcpEntry, root, Session, until, writeConfig, yaml } from "./helpers.ts"

const ready = (toolset: string) => (line: { readonly [key: string]: unknown }) =>
  line.type === "status" && line.toolset === toolset && line.state === "Ready"

/** A config whose one server, fx, records each call it receives; `served` counts them. */
const counted = () => {
  const calls = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-calls-")), "calls")
  const config = writeConfig(yaml([mcpEntry("fx", [`        env: { FIXTURE_CALLS_FILE: "${calls}" }`])]))
  const served = () => (NodeFs.existsSync(calls) ? NodeFs.readFileSync(calls, "utf8").split("\n").length - 1 : 0)
  return { config, served }
}

/**
 * `run --json` sent `count` calls with 1 MB answers, its stdout not read; `served` counts the
 * calls the server has received.
 */
const unread = (count: number) => {
  const { config, served } = counted()
  const child = NodeChildProcess.spawn(process.execPath, cliArgs(["run", config, "--json"]), {
    stdio: ["pipe", "pipe", "ignore"]
  })
  for (let id = 0; id < count; id++) {
    child.stdin.write(`${JSON.stringify({ cmd: "call", tool: "fx_big", args: { bytes: 1_000_000 }, id })}\n`)
  }
  return { child, served }
}

/** Settles once the child has exited and its stdout and stderr are read to their end; call it before the end. */
const closed = (child: NodeChildProcess.ChildProcess) =>
  new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))

const isAnswer = (line: { readonly [key: string]: unknown }) => line.type === "result" || line.type === "error"

describe("toolvisor run --json", () => {
  it("answers a status while a slow call is in flight, each answer with its command's id", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 3000 }, id: "slow" })
      session.send({ cmd: "status", id: 7 })
      session.send({ cmd: "restart", toolset: "nope", id: "bad" })
      await session.waitFor((l) => l.type === "result" && l.id === 7, mark)
      await session.waitFor((l) => l.type === "error" && l.id === "bad" && l.tag === "UnknownToolset", mark)
      assert.isUndefined(
        session.json().find((l) => l.id === "slow"),
        "the status waited for the call"
      )
      const call = await session.waitFor((l) => l.type === "result" && l.id === "slow", mark)
      assert.include(JSON.stringify(call.result), "slept 3000")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("prints the catalog when it changes, never a listing of toolsets that were not started yet", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("a"), mcpEntry("b")])), "--json"])
    try {
      await session.waitFor((l) => l.type === "tools" && l.complete === true)
      const tools = session.json().filter((l) => l.type === "tools")
      assert.isAtMost(tools.length, 2)
      for (const line of tools) assert.notInclude(JSON.stringify(line.missing), '"Stopped"')
      const mark = session.lines.length
      session.send({ cmd: "call", tool: "a_add_tool", id: 1 })
      const changed = await session.waitFor((l) => l.type === "tools", mark)
      assert.include(JSON.stringify(changed.tools), "a_dynamic_1")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("a catalog changing many times a second is printed at most four times a second, the last change always", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("a")])), "--json"])
    try {
      await session.waitFor((l) => l.type === "tools" && l.complete === true)
      const mark = session.lines.length
      const began = Date.now()
      // A tool added every 20 ms for two seconds: the catalog changes as often as the toolset relists.
      const added = 100
      for (let id = 1; id <= added; id++) {
        session.send({ cmd: "call", tool: "a_add_tool", id })
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      await session.waitFor((l) => l.type === "result" && l.id === added, mark)
      await session.waitFor((l) => l.type === "tools" && JSON.stringify(l.tools).includes(`"a_dynamic_${added}"`), mark)
      const printed = session.lines.slice(mark).filter((line) => line.includes('"type":"tools"')).length
      assert.isAtMost(printed, Math.ceil((Date.now() - began) / 250) + 2, "one line per 250 ms at most")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("the end of stdin ends the run after the last answer, and no server outlives it", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      const up = await session.waitFor(ready("fx"))
      session.send({ cmd: "call", tool: "fx_echo", args: { message: "last words" }, id: 1 })
      session.child.stdin.end()
      assert.strictEqual(await session.exited(), 0, session.stderr)
      assert.include(JSON.stringify(session.json().find((l) => l.id === 1)), "last words")
      assert.isFalse(isAlive(Number(up.pid)))
      assert.include(session.stderr, "stdin closed: the run ends")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("a reader that is behind holds the commands back: no more than 64 answered at once, none lost", async () => {
    const count = 200
    const { child, served } = unread(count)
    try {
      child.stdin.end()
      // Nothing reads stdout yet. Before, every command ran and its 1 MB answer queued in the CLI.
      await until(() => served() >= 64)
      const settled = Date.now() + 500
      while (Date.now() < settled) {
        assert.strictEqual(served(), 64)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      let text = ""
      child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")))
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
      assert.strictEqual(code, 0)
      const answered = text
        .split("\n")
        .filter((line) => line.startsWith('{"type":"result"'))
        .map((line) => JSON.parse(line).id)
      assert.sameMembers(
        answered,
        Array.from({ length: count }, (_, id) => id)
      )
      assert.strictEqual(served(), count)
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("a status sent behind 64 calls that hold every place is answered at once", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      for (let id = 0; id < 64; id++) session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 60_000 }, id })
      session.send({ cmd: "status", id: "behind" })
      // Every command took a place: the status waited for a 60 s call to end.
      const answer = await session.waitFor((l) => l.type === "result" && l.id === "behind", 0, 15_000)
      assert.isArray(answer.toolsets)
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("a status and a restart sent behind 65 calls, the last one waiting for a place, are answered at once", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      for (let id = 0; id < 65; id++) session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 60_000 }, id })
      session.send({ cmd: "status", id: "behind" })
      session.send({ cmd: "restart", toolset: "fx", id: "unstick" })
      // Before, stdin was not read past the 65th call: both waited for a 60 s call to end.
      const status = await session.waitFor((l) => l.type === "result" && l.id === "behind", mark, 15_000)
      assert.isArray(status.toolsets)
      const restart = await session.waitFor((l) => isAnswer(l) && l.id === "unstick", mark, 30_000)
      assert.strictEqual(restart.type, "result", JSON.stringify(restart))
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("a full waiting room stops the reading: a status behind 64 calls in flight and 1,001 waiting waits for a call to end", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      for (let id = 0; id < 64 + 1001; id++) session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 3000 }, id })
      session.send({ cmd: "status", id: "behind" })
      await session.waitFor((l) => l.type === "result" && l.id === "behind", mark)
      // Without a bound on the waiting calls, the status was read and answered before any call ended.
      const answers = session.json().slice(mark).filter(isAnswer)
      const status = answers.findIndex((l) => l.id === "behind")
      assert.isAbove(status, 0, "the status was answered before any call")
      assert.isTrue(answers.slice(0, status).every((l) => l.type === "result" && l.cmd === "call"))
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    it(`${signal} answers every call first: Interrupted for the 64 in flight, NotSent for those still waiting`, async () => {
      const { config, served } = counted()
      const session = new Session(["run", config, "--json"])
      try {
        await session.waitFor(ready("fx"))
        const mark = session.lines.length
        for (let id = 0; id < 66; id++) session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 60_000 }, id })
        await until(() => served() >= 64)
        const exited = closed(session.child)
        session.child.kill(signal)
        assert.strictEqual(await exited, 0, session.stderr)
        // Before, the process exited with no answer for any of them.
        const answers = session.json().slice(mark).filter(isAnswer)
        assert.sameMembers(
          answers.map((l) => l.id),
          Array.from({ length: 66 }, (_, id) => id),
          "exactly one answer per call"
        )
        for (const line of answers) {
          assert.strictEqual(line.type, "error")
          assert.strictEqual(line.cmd, "call")
          const sent = Number(line.id) < 64
          assert.strictEqual(line.tag, sent ? "Interrupted" : "NotSent", JSON.stringify(line))
          assert.include(String(line.message), "shutting down")
          assert.include(String(line.message), sent ? "may have run" : "did not run")
        }
      } finally {
        session.child.kill("SIGKILL")
      }
    })
  }

  it("a signal after the reader has closed stdout still ends the run cleanly, its last answers dropped", async () => {
    const { config, served } = counted()
    const session = new Session(["run", config, "--json"])
    try {
      await session.waitFor(ready("fx"))
      for (let id = 0; id < 3; id++) session.send({ cmd: "call", tool: "fx_sleep", args: { ms: 60_000 }, id })
      await until(() => served() >= 3)
      session.child.stdout.destroy()
      const exited = closed(session.child)
      session.child.kill("SIGTERM")
      // The answers written at shutdown met EPIPE: unhandled, it crashed the exit with a stack trace.
      assert.strictEqual(await exited, 0, session.stderr)
      assert.notInclude(session.stderr, "EPIPE")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("a malformed command keeps its id when one can be read, and a byte-order mark is no error", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      const write = (line: string) => session.child.stdin.write(`${line}\n`)
      write('{"cmd":5,"id":1}')
      write('{"id":2}')
      write('{"cmd":"status","id":"cut"')
      write(`{"cmd":"status","deep":${"[".repeat(100)}${"]".repeat(100)},"id":{"n":[24]}}`)
      write('\uFEFF{"cmd":"status","id":"bom"}')
      write("[1]")
      session.send({ cmd: "status", id: "last" })
      await session.waitFor((l) => l.id === "last", mark)
      const answers = session.json().slice(mark).filter(isAnswer)
      const answerTo = (id: unknown) => answers.filter((l) => JSON.stringify(l.id) === JSON.stringify(id))
      // Before, each error line but the last had no id, and the mark made the status "not JSON".
      for (const [id, tag] of [
        [1, "BadCommand"],
        [2, "BadCommand"],
        ["cut", "BadCommand"],
        [{ n: [24] }, "TooDeep"]
      ] as const) {
        const [line, ...more] = answerTo(id)
        assert.strictEqual(line?.tag, tag, `${JSON.stringify(id)}: ${JSON.stringify(answers)}`)
        assert.strictEqual(line?.cmd, null)
        assert.lengthOf(more, 0)
      }
      assert.strictEqual(answerTo("bom")[0]?.type, "result", JSON.stringify(answers))
      const anonymous = answers.filter((l) => !("id" in l))
      assert.lengthOf(anonymous, 1, JSON.stringify(answers))
      assert.strictEqual(anonymous[0]?.tag, "BadCommand")
    } finally {
      session.child.kill("SIGKILL")
    }
  })

  it("SIGTERM ends the run promptly while its output waits for a reader that is not reading", async () => {
    const { child, served } = unread(100)
    try {
      await until(() => served() >= 64)
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      const signalled = Date.now()
      child.kill("SIGTERM")
      // The exit waited for stdout to drain, with nobody reading: for ever, until a second signal.
      assert.strictEqual(await exited, 0)
      assert.isBelow(Date.now() - signalled, 15_000)
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("refuses a command nested too deep or too long with a typed error line that keeps its id, and keeps answering", async () => {
    const session = new Session(["run", writeConfig(yaml([mcpEntry("fx")])), "--json"])
    try {
      await session.waitFor(ready("fx"))
      const mark = session.lines.length
      const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`
      session.child.stdin.write(`{"cmd":"call","tool":"fx_echo","args":{"message":"x","deep":${deep}},"id":"deep"}\n`)
      const tooDeep = await session.waitFor((l) => l.type === "error", mark)
      assert.strictEqual(tooDeep.tag, "TooDeep")
      assert.include(String(tooDeep.message), "64")
      // The id is found by a scan of the line's top level, past what made it too deep or too long.
      assert.strictEqual(tooDeep.id, "deep")
      const long = `{"cmd":"status","pad":"${"x".repeat(16 * 1024 * 1024)}","id":"long"}`
      session.child.stdin.write(`${long}\n`)
      const tooLarge = await session.waitFor((l) => l.type === "error" && l.tag === "TooLarge", mark)
      assert.include(String(tooLarge.message), String(long.length))
      assert.strictEqual(tooLarge.id, "long")
      session.send({ cmd: "status", id: "after" })
      await session.waitFor((l) => l.type === "result" && l.id === "after", mark)
    } finally {
      session.child.kill("SIGKILL")
    }
  }, 120_000)

  it("with stdin on /dev/null and --http, runs as a service: answers /status until SIGTERM, then stops its servers", async () => {
    const port = await freePort()
    const child = NodeChildProcess.spawn(
      process.execPath,
      cliArgs(["run", writeConfig(yaml([mcpEntry("fx")])), "--json", "--http", String(port)]),
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      let pid: number | null = null
      await until(async () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}:\n${stdout}\n${stderr}`)
        const rows: unknown = await fetch(`http://127.0.0.1:${port}/status`).then(
          (response) => response.json(),
          () => []
        )
        const row: unknown = Array.isArray(rows) ? rows[0] : undefined
        pid =
          Predicate.hasProperty(row, "state") && row.state === "Ready" && Predicate.hasProperty(row, "pid")
            ? Number(row.pid)
            : null
        return pid !== null
      }, 60_000)
      assert.include(stderr, "stdin carries no commands (/dev/null): running until SIGTERM")
      // Ready and answering long after a closed stdin would have ended the run: still there.
      await until(() => stdout.includes('"state":"Ready"'))
      assert.isNull(child.exitCode)
      child.kill("SIGTERM")
      assert.strictEqual(await exited, 0, stderr)
      assert.isFalse(isAlive(Number(pid)))
    } finally {
      child.kill("SIGKILL")
    }
  }, 120_000)
})
