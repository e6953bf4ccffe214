/**
 * `toolvisor serve` as a host (Claude Desktop, Cursor, VS Code) runs it: the installed bin over
 * stdio, where stdout carries nothing but JSON-RPC whatever the toolsets and the logs do; and
 * `--http` with a port it cannot use, which fails at once with one line and starts nothing.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { cliArgs, isAlive, mcpEntry, root, runCli, writeConfig, yaml } from "./helpers.ts"

const freshDir = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-serve-"))

/** A config whose one toolset writes its pid to `pidFile` when (if ever) it starts. */
const watched = (pidFile: string) =>
  writeConfig(yaml([mcpEntry("fx", [`        env: { FIXTURE_PID_FILE: "${pidFile}" }`])]))

/** `serve` on `config` over stdio, spoken to line by line: what it answered to an id, and what it wrote. */
const rawServe = (config: string) => {
  const child = NodeChildProcess.spawn(process.execPath, cliArgs(["serve", config]), {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const lines = () =>
    stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l))
  const send = (message: { readonly [key: string]: unknown }) =>
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`)
  const answer = async (id: number) => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const found = lines().find((m) => m.id === id)
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`no answer to ${id}; stdout:\n${stdout}\nstderr:\n${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  /** Initializes the session, then calls `tool` until its toolset is Ready and answers it. */
  const ready = async (tool: string) => {
    send({
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
    })
    await answer(1)
    send({ method: "notifications/initialized" })
    // Until the toolset is Ready the call may fail (as an isError result): ask until it answers.
    let echoed = ""
    for (let id = 10; id < 200 && !echoed.includes("through the gateway"); id++) {
      send({ id, method: "tools/call", params: { name: tool, arguments: { message: "through the gateway" } } })
      echoed = JSON.stringify(await answer(id))
      if (!echoed.includes("through the gateway")) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.include(echoed, "through the gateway")
  }
  return { child, send, answer, ready, exited, lines, output: () => ({ stdout, stderr }) }
}

describe("toolvisor serve over stdio", () => {
  it("writes nothing but JSON-RPC on stdout, with noisy servers, warnings and errors around", async () => {
    const config = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        ...mcpEntry("fx", ["        env: { FIXTURE_MODE: noisy }"]),
        "      - type: mcp",
        "        name: gone",
        "        command: /nonexistent/toolvisor-no-such-server",
        "        lifecycle: { profile: best-effort }",
        "      - type: script",
        "        shell: { hello: { cmd: echo hi } }"
      ].join("\n")
    )
    const { child, send, answer, ready, exited, output } = rawServe(config)
    try {
      await ready("fx_echo")
      send({ id: 2, method: "tools/call", params: { name: "fx_noise", arguments: {} } })
      assert.include(JSON.stringify(await answer(2)), "after noise")
      send({ id: 3, method: "tools/list" })
      assert.include(JSON.stringify(await answer(3)), "fx_echo")
      send({ id: 4, method: "no/such/method" })
      assert.property(await answer(4), "error")
      child.stdin.end()
      assert.strictEqual(await exited, 0, output().stderr)
    } finally {
      child.kill("SIGKILL")
    }
    const { stdout, stderr } = output()
    for (const line of stdout.split("\n").filter((l) => l !== "")) {
      const message = JSON.parse(line)
      assert.strictEqual(message.jsonrpc, "2.0", `not JSON-RPC on stdout: ${line}`)
    }
    // The logs were there, on stderr, one format: the skipped toolset and the one that did not start.
    assert.match(stderr, /^\d\d:\d\d:\d\d\.\d{3} WARN .*script/m)
    assert.match(stderr, /^\d\d:\d\d:\d\d\.\d{3} WARN optional toolset did not start: .*gone/m)
    assert.notInclude(stderr, "fiber=")
  })

  it("a request past 16 MiB, one nested too deep and a malformed one are each answered with an error, and the session goes on", async () => {
    const { child, send, answer, ready, exited, lines, output } = rawServe(writeConfig(yaml([mcpEntry("fx")])))
    try {
      await ready("fx_echo")
      // Nothing came before the answer to initialize (the toolset's Ready made its tools change).
      assert.strictEqual(lines()[0]?.id, 1)
      const call = (id: number, args: string) =>
        child.stdin.write(
          `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"fx_echo","arguments":${args}}}\n`
        )
      call(2, `{"message":"${"x".repeat(17 * 1024 * 1024)}"}`)
      call(3, `{"message":"deep","x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`)
      child.stdin.write(`{"jsonrpc":"2.0","id":4,"method":5}\n`)
      const [huge, deep, malformed] = await Promise.all([answer(2), answer(3), answer(4)])
      assert.strictEqual(huge.error?.code, -32600)
      assert.match(huge.error?.message, /over the limit of 16 MiB; it was not handled/)
      assert.strictEqual(deep.error?.code, -32600)
      assert.include(deep.error?.message, "nested deeper than 64 levels")
      assert.deepStrictEqual(malformed.error, {
        code: -32600,
        message: "not a valid JSON-RPC request; it was not handled"
      })
      send({ id: 5, method: "tools/call", params: { name: "fx_echo", arguments: { message: "still here" } } })
      assert.include(JSON.stringify(await answer(5)), "still here")
      child.stdin.end()
      assert.strictEqual(await exited, 0, output().stderr)
    } finally {
      child.kill("SIGKILL")
    }
    assert.match(output().stderr, /WARN dropped a message from the client: it is 1\d\.\d MiB, over the limit of 16 MiB/)
  })

  const initialize = {
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
  }
  const sleep = (id: number, ms: number) => ({
    id,
    method: "tools/call",
    params: { name: "fx_sleep", arguments: { ms } }
  })

  it("requests written at once with initialize, stdin closed behind them: each answered once, initialize first, then it exits", async () => {
    const { child, exited, lines, output } = rawServe(writeConfig(yaml([mcpEntry("fx")])))
    try {
      const messages = [
        initialize,
        { method: "notifications/initialized" },
        ...Array.from({ length: 200 }, (_, i) => sleep(i + 1, 100)),
        { id: 201, method: "tools/list" }
      ]
      child.stdin.end(messages.map((m) => `${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`).join(""))
      assert.strictEqual(await exited, 0, output().stderr)
    } finally {
      child.kill("SIGKILL")
    }
    const written = lines()
    // Nothing before the answer to initialize, which waited for the toolset to start.
    assert.strictEqual(written[0]?.id, 0, JSON.stringify(written[0]))
    const answered = written.filter((m) => m.id !== undefined).map((m) => m.id)
    assert.deepStrictEqual(
      [...answered].sort((a, b) => a - b),
      Array.from({ length: 202 }, (_, i) => i)
    )
    assert.include(JSON.stringify(written.find((m) => m.id === 200)), "slept 100")
    // Told what it waits for once per change, not once per waiting request.
    assert.isAtMost(written.filter((m) => m.method === "notifications/message").length, 3)
  })

  it("stopped by SIGTERM with calls in flight: each is answered with an error saying so before it exits", async () => {
    const { child, send, answer, ready, exited, lines, output } = rawServe(writeConfig(yaml([mcpEntry("fx")])))
    try {
      await ready("fx_echo")
      const ids = Array.from({ length: 50 }, (_, i) => 1000 + i)
      for (const id of ids) send(sleep(id, 30_000))
      // Every call reached the server: its answer is all that is missing.
      send({ id: 999, method: "tools/call", params: { name: "fx_echo", arguments: { message: "behind them" } } })
      await answer(999)
      child.kill("SIGTERM")
      assert.strictEqual(await exited, 0, output().stderr)
      const answers = lines().filter((m) => ids.includes(m.id))
      assert.deepStrictEqual(answers.map((m) => m.id).sort(), ids)
      for (const m of answers) {
        assert.strictEqual(m.error?.code, -32603)
        assert.include(m.error?.message, "Toolvisor is stopping: the request was not finished")
      }
    } finally {
      child.kill("SIGKILL")
    }
  })
})

describe("toolvisor serve --http", () => {
  it("an impossible port is a usage error in one line, before anything starts, from serve and run alike", async () => {
    for (const command of [["serve"], ["run", "--json"]]) {
      for (const port of ["99999", "70000", "-1"]) {
        const pidFile = NodePath.join(freshDir(), "pid")
        const result = await runCli([command[0] ?? "", watched(pidFile), ...command.slice(1), `--http=${port}`])
        assert.strictEqual(result.code, 2, result.stderr)
        assert.match(result.stderr.trim(), /^\d\d:\d\d:\d\d\.\d{3} ERROR --http: a port is 0 to 65535, got -?\d+$/)
        assert.isFalse(NodeFs.existsSync(pidFile), "a toolset started")
      }
    }
  })

  it("a port in use fails at once with the same one line and exit code from serve and run, and no toolset starts", async () => {
    const taken = NodeNet.createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    const address = taken.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    try {
      const lines: Array<string> = []
      for (const command of [["serve"], ["run", "--json"]]) {
        const pidFile = NodePath.join(freshDir(), "pid")
        const began = Date.now()
        const result = await runCli([command[0] ?? "", watched(pidFile), ...command.slice(1), "--http", String(port)])
        assert.strictEqual(result.code, 1, result.stderr)
        assert.match(
          result.stderr.trim(),
          /^\d\d:\d\d:\d\d\.\d{3} ERROR cannot listen on 127\.0\.0\.1:\d+: the port is already in use/
        )
        assert.strictEqual(result.stderr.trim().split("\n").length, 1, result.stderr)
        assert.notInclude(result.stderr, "EADDRINUSE")
        assert.isFalse(NodeFs.existsSync(pidFile), "a toolset started")
        assert.isBelow(Date.now() - began, 5_000)
        lines.push(result.stderr.trim().replace(/^\S+ /, ""))
      }
      assert.strictEqual(lines[0], lines[1])
    } finally {
      taken.close()
    }
  })

  /** Runs `serve` until its stderr says `until`, hands that stderr to `check`, then stops it with SIGTERM. */
  const served = async (args: ReadonlyArray<string>, until: string, check: (stderr: string) => void) => {
    const child = NodeChildProcess.spawn(process.execPath, cliArgs(["serve", ...args]), {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    try {
      const deadline = Date.now() + 30_000
      while (!stderr.includes(until) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      check(stderr)
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.on("exit", resolve))
      assert.isFalse(child.pid !== undefined && isAlive(child.pid))
    }
  }

  it("serves on a free port and says where, in the one log format", () =>
    served([watched(NodePath.join(freshDir(), "pid")), "--http", "0"], "serving MCP at", (stderr) => {
      assert.match(stderr, /^\d\d:\d\d:\d\d\.\d{3} INFO serving MCP at http:\/\/127\.0\.0\.1:\d+\/mcp$/m)
      // One agent: nothing to choose, nothing said.
      assert.notInclude(stderr, "serving agent")
    }))

  it("with several agents, says which one it serves and how to serve another", () => {
    const config = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        ...mcpEntry("fx"),
        "  reviewer:",
        "    toolsets:",
        ...mcpEntry("fy")
      ].join("\n")
    )
    return served([config], "serving MCP on stdio", (stderr) =>
      assert.include(
        stderr,
        "INFO serving agent root's tools; the config has 2 agents (root, reviewer): --agent NAME serves another"
      )
    )
  })
})
