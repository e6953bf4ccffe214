import * as NodeOs from "node:os"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Redaction from "../src/Redaction.ts"
import * as ServerProcess from "../src/ServerProcess.ts"

const node = process.execPath

/** Short grace periods keep the tests quick; the ladder is the same. */
const grace = { stdin: "300 millis", term: "300 millis" } as const

/** Reads stdout until `count` lines have arrived. */
const readLines = (proc: ServerProcess.ServerProcess, count: number) =>
  Effect.callback<ReadonlyArray<string>>((resume) => {
    let text = ""
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8")
      const lines = text.split("\n").filter((l) => l !== "")
      if (lines.length >= count) {
        proc.stdout.off("data", onData)
        resume(Effect.succeed(lines))
      }
    }
    proc.stdout.on("data", onData)
  })

/** Spawns in a fresh scope the test closes itself, returning the process and how long close took. */
const spawned = (spec: ServerProcess.Spec) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const proc = yield* ServerProcess.spawn("test", { grace, ...spec }).pipe(Scope.provide(scope))
    const close = Effect.gen(function* () {
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      return Date.now() - started
    })
    return { proc, close }
  })

describe("ServerProcess", () => {
  it.live("a server that exits on stdin EOF is closed by ending stdin, quickly", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"]
      })
      assert.isTrue(ServerProcess.isAlive(proc.pid))
      const took = yield* close
      assert.isFalse(ServerProcess.isAlive(proc.pid))
      assert.isBelow(took, 300)
    })
  )

  it.live("a process that ignores stdin EOF and SIGTERM is killed with SIGKILL", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('up')"]
      })
      yield* readLines(proc, 1)
      const took = yield* close
      assert.isFalse(ServerProcess.isAlive(proc.pid))
      assert.isFalse(ServerProcess.groupAlive(proc.pid))
      assert.isAtLeast(took, 550)
    })
  )

  it.live("no process of the group survives close: a grandchild that ignores SIGTERM is killed too", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: "bash",
        args: ["-c", "trap '' TERM; sleep 1000 & echo $!; wait"]
      })
      const [grandchild] = yield* readLines(proc, 1)
      const pid = Number(grandchild)
      assert.isTrue(ServerProcess.isAlive(pid))
      yield* close
      assert.isFalse(ServerProcess.isAlive(pid))
      assert.isFalse(ServerProcess.isAlive(proc.pid))
      assert.isFalse(ServerProcess.groupAlive(proc.pid))
    })
  )

  it.live("a grandchild left behind after its parent exited is killed on close", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: "bash",
        args: ["-c", "sleep 1000 & echo $!; exit 0"]
      })
      const [grandchild] = yield* readLines(proc, 1)
      yield* proc.established
      yield* proc.exited
      assert.isTrue(ServerProcess.isAlive(Number(grandchild)))
      yield* close
      assert.isFalse(ServerProcess.isAlive(Number(grandchild)))
    })
  )

  it.live("a missing binary fails to spawn with ServerUnavailable (ENOENT)", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.scoped(ServerProcess.spawn("test", { command: "toolvisor-no-such-binary-xyz" }))
      )
      assert.strictEqual(error._tag, "ServerUnavailable")
      assert.include(error.message, "toolvisor-no-such-binary-xyz")
      assert.include(error.message, "not found in any folder on PATH")
      assert.strictEqual(error.toolset, "test")
    })
  )

  it.live("an env-wrapped missing binary exits at once: ServerUnavailable with the stderr tail, not Ready", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({ command: "env", args: ["toolvisor-no-such-binary-xyz"] })
      const error = yield* Effect.flip(proc.whileRunning(Effect.never))
      assert.strictEqual(error._tag, "ServerUnavailable")
      assert.strictEqual(error.exitCode, 127)
      assert.match(error.stderr?.join("\n") ?? "", /toolvisor-no-such-binary-xyz/)
      assert.include(error.message, "before it was ready")
      yield* close
    })
  )

  it.live("a later unexpected exit is ServerCrashed with the exit code", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.stdin.once('data', () => { console.error('fatal: out of cheese'); process.exit(3) })"]
      })
      yield* proc.established
      proc.stdin.write("go\n")
      const error = yield* Effect.flip(proc.exited)
      assert.strictEqual(error._tag, "ServerCrashed")
      assert.strictEqual(error.exitCode, 3)
      assert.include(error.message, "out of cheese")
      yield* close
    })
  )

  it.live("a crash by signal reports the signal; hasExited turns true with exited", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({ command: node, args: ["-e", "setInterval(() => {}, 1000)"] })
      yield* proc.established
      assert.isFalse(proc.hasExited())
      process.kill(proc.pid, "SIGKILL")
      const error = yield* Effect.flip(proc.exited)
      assert.isTrue(proc.hasExited())
      assert.strictEqual(error._tag, "ServerCrashed")
      assert.strictEqual(error.signal, "SIGKILL")
      yield* close
    })
  )

  it.live("a clean exit after the handshake completes `exited` successfully", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.stdin.once('data', () => process.exit(0))"]
      })
      yield* proc.established
      proc.stdin.write("bye\n")
      yield* proc.exited
      yield* close
    })
  )

  it.live("stderr keeps only the last lines", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "for (let i = 1; i <= 120; i++) console.error('line ' + i); process.exit(1)"],
        stderrLines: 50
      })
      const error = yield* Effect.flip(proc.exited)
      assert.strictEqual(error.stderr?.length, 50)
      assert.strictEqual(error.stderr?.[0], "line 71")
      assert.strictEqual(error.stderr?.[49], "line 120")
      yield* close
    })
  )

  it.live("a 20 MiB stderr line and a flood after it leave a tail of short lines and a short message", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: [
          "-e",
          `const x = "x".repeat(1 << 20)
          for (let i = 0; i < 20; i++) process.stderr.write(x)
          process.stderr.write("\\n" + "é".repeat(3000) + "\\n")
          for (let i = 0; i < 2000; i++) process.stderr.write("y".repeat(5000) + "\\n")
          process.stderr.write("fatal: the real reason\\n" + "z".repeat(1 << 20))
          process.exitCode = 1`
        ],
        stderrLines: 50
      })
      const error = yield* Effect.flip(proc.exited)
      const stderr = error.stderr ?? []
      assert.strictEqual(stderr.length, 50)
      for (const line of stderr) assert.isAtMost(Buffer.byteLength(line), ServerProcess.maxStderrLineBytes + 40)
      assert.strictEqual(stderr.at(-2), "fatal: the real reason")
      assert.match(stderr.at(-1) ?? "", /^z{1000}… \(1047576 more bytes\)$/)
      assert.include(error.message, "fatal: the real reason")
      assert.isBelow(error.message.length, 2_000)
      yield* close
    })
  )

  it.live("the stderr tail is masked before it is cut: a secret the cut falls in shows no part of itself", () =>
    Effect.gen(function* () {
      const secret = "Zx9kQ2mP7vL4nR8tY1wE"
      const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\n-----END PRIVATE KEY-----\n"
      const { proc, close } = yield* spawned({
        command: node,
        args: [
          "-e",
          `process.stderr.write("x".repeat(981) + process.env.SECRET + "\\n")
          process.stderr.write("fatal: could not authenticate with " + process.env.PEM)
          process.exit(1)`
        ],
        env: { SECRET: secret, PEM: pem }
      }).pipe(Effect.provideService(Redaction.Current, Redaction.make([secret, pem])))
      const error = yield* Effect.flip(proc.exited)
      const shown = [...(error.stderr ?? []), ...proc.stderrTail(), error.message].join("\n")
      assert.notInclude(shown, secret.slice(0, 8))
      assert.notInclude(shown, "MIIEvQIBADANBgkq")
      assert.include(error.message, "fatal: could not authenticate with ***")
      yield* close
    })
  )

  it.live("a server that floods stderr is read at most 8 MiB a second: it blocks on its own writes", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: [
          "-e",
          `const fs = require("fs"), block = Buffer.alloc(1 << 16, 121), until = Date.now() + 2000
          let written = 0
          while (Date.now() < until) written += fs.writeSync(2, block)
          console.log(written)`
        ]
      })
      const [written] = yield* readLines(proc, 1)
      // Two seconds and a partial third of reading, plus what the pipe holds; unread, it is gigabytes.
      assert.isBelow(Number(written), 4 * ServerProcess.stderrBytesPerSecond)
      assert.isAbove(Number(written), ServerProcess.stderrBytesPerSecond)
      yield* close
    })
  )

  it.live("a character split between two reads of stderr is decoded whole", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: [
          "-e",
          `const bytes = Buffer.from("Error: naïve café\\n")
          process.stderr.write(bytes.subarray(0, 10), () => setTimeout(() => { process.stderr.write(bytes.subarray(10)); process.exitCode = 1 }, 50))`
        ]
      })
      const error = yield* Effect.flip(proc.exited)
      assert.deepStrictEqual(error.stderr, ["Error: naïve café"])
      yield* close
    })
  )

  it.live("Toolvisor's own variables are not inherited; the spec's env passes, its TOOLVISOR_* ones too", () =>
    Effect.gen(function* () {
      const own = ["TOOLVISOR_HTTP_TOKEN", "TOOLVISOR_CLUSTER_KEY", "TOOLVISOR_STATE_DIR", "TOOLVISOR_INPUT_API_KEY"]
      const saved = own.map((name) => [name, process.env[name]] as const)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const [name, value] of saved) {
            if (value === undefined) delete process.env[name]
            else process.env[name] = value
          }
        })
      )
      for (const name of own) process.env[name] = `secret-of-${name}`
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "console.log(JSON.stringify(process.env))"],
        env: { TOOLVISOR_INPUT_API_KEY: "asked-for" }
      })
      const [line] = yield* readLines(proc, 1)
      const env: Record<string, string> = JSON.parse(line ?? "{}")
      assert.deepStrictEqual(
        Object.keys(env)
          .filter((name) => name.startsWith("TOOLVISOR_"))
          .sort(),
        ["TOOLVISOR_INPUT_API_KEY", "TOOLVISOR_OWNER", "TOOLVISOR_SERVER"]
      )
      assert.strictEqual(env.TOOLVISOR_INPUT_API_KEY, "asked-for")
      assert.strictEqual(env.PATH, process.env.PATH)
      yield* close
    })
  )

  it.live("a process that closes its stdout and stays alive ends the session with ServerCrashed", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "require('fs').closeSync(1); console.error('stdout is gone'); setInterval(() => {}, 1000)"]
      })
      proc.stdout.resume()
      yield* proc.established
      const error = yield* Effect.flip(proc.ended)
      assert.strictEqual(error._tag, "ServerCrashed")
      assert.include(error.message, "closed its stdout but kept running")
      assert.deepStrictEqual(error.stderr, ["stdout is gone"])
      assert.isTrue(ServerProcess.isAlive(proc.pid))
      yield* close
      assert.isFalse(ServerProcess.isAlive(proc.pid))
    })
  )

  it.live("a process that exits ends the session with its exit, not as a closed stdout", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.stdin.once('data', () => { console.error('fatal: bye'); process.exit(4) })"]
      })
      proc.stdout.resume()
      yield* proc.established
      proc.stdin.write("go\n")
      const error = yield* Effect.flip(proc.ended)
      assert.strictEqual(error.exitCode, 4)
      assert.include(error.message, "fatal: bye")
      yield* close
    })
  )

  it.live("args, env and cwd reach the process, and its pid is exposed", () =>
    Effect.gen(function* () {
      const cwd = NodeOs.tmpdir()
      const { proc, close } = yield* spawned({
        command: node,
        args: [
          "-e",
          "console.log(process.argv[1]); console.log(process.env.TOOLVISOR_TEST); console.log(process.cwd()); console.log(process.pid)",
          "an arg"
        ],
        env: { TOOLVISOR_TEST: "from-env" },
        cwd
      })
      const lines = yield* readLines(proc, 4)
      assert.deepStrictEqual(lines, ["an arg", "from-env", cwd, String(proc.pid)])
      yield* close
    })
  )

  it.live("messages are redacted: a token on the command line does not leak", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({
        command: node,
        args: ["-e", "process.exit(2)", "--token=s3cr3t-value"]
      })
      const error = yield* Effect.flip(proc.exited)
      assert.notInclude(error.message, "s3cr3t-value")
      yield* close
    })
  )

  it.live("writing to a dead server does not crash the host", () =>
    Effect.gen(function* () {
      const { proc, close } = yield* spawned({ command: node, args: ["-e", "process.exit(0)"] })
      yield* Effect.flip(proc.exited)
      proc.stdin.write("anyone there?\n")
      yield* close
    })
  )
})

describe("ServerProcess.meaningfulLine", () => {
  it("quotes the error, not the runtime's trailing banner or stack", () => {
    const lines = [
      "starting up",
      "Error: listen EADDRINUSE: address already in use :::3001",
      "    at Server.setupListenHandle (node:net:1908:16)",
      "",
      "Node.js v22.23.3"
    ]
    assert.strictEqual(ServerProcess.meaningfulLine(lines), "Error: listen EADDRINUSE: address already in use :::3001")
  })

  it("quotes what npm could not install, not its advice or the path of its log", () => {
    const lines = [
      "npm error code E404",
      "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-filesytem - Not found",
      "npm error 404",
      "npm error 404  '@modelcontextprotocol/server-filesytem@*' is not in this registry.",
      "npm error 404",
      "npm error 404 Note that you can also install from a",
      "npm error 404 tarball, folder, http url, or git url.",
      "npm error A complete log of this run can be found in: /root/.npm/_logs/2026-11-27T12_00_00_000Z-debug-0.log"
    ]
    assert.strictEqual(
      ServerProcess.meaningfulLine(lines),
      "npm error 404  '@modelcontextprotocol/server-filesytem@*' is not in this registry."
    )
  })

  it("takes the last line that is not noise when nothing looks like an error", () => {
    assert.strictEqual(ServerProcess.meaningfulLine(["hello", "bye", "", "Node.js v22.1.0"]), "bye")
    assert.isUndefined(ServerProcess.meaningfulLine(["", "Node.js v22.1.0"]))
  })
})
