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
    const child = NodeChildProcess.spawn(process.execPath, cliArgs(["serve", config]), {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    const send = (message: { readonly [key: string]: unknown }) =>
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`)
    const answer = async (id: number) => {
      const deadline = Date.now() + 30_000
      for (;;) {
        const found = stdout
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l))
          .find((m) => m.id === id)
        if (found !== undefined) return found
        if (Date.now() > deadline) throw new Error(`no answer to ${id}; stdout:\n${stdout}\nstderr:\n${stderr}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    try {
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
        send({ id, method: "tools/call", params: { name: "fx_echo", arguments: { message: "through the gateway" } } })
        echoed = JSON.stringify(await answer(id))
        if (!echoed.includes("through the gateway")) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.include(echoed, "through the gateway")
      send({ id: 2, method: "tools/call", params: { name: "fx_noise", arguments: {} } })
      assert.include(JSON.stringify(await answer(2)), "after noise")
      send({ id: 3, method: "tools/list" })
      assert.include(JSON.stringify(await answer(3)), "fx_echo")
      send({ id: 4, method: "no/such/method" })
      assert.property(await answer(4), "error")
      child.stdin.end()
      assert.strictEqual(await exited, 0, stderr)
    } finally {
      child.kill("SIGKILL")
    }
    for (const line of stdout.split("\n").filter((l) => l !== "")) {
      const message = JSON.parse(line)
      assert.strictEqual(message.jsonrpc, "2.0", `not JSON-RPC on stdout: ${line}`)
    }
    // The logs were there, on stderr, one format: the skipped toolset and the one that did not start.
    assert.match(stderr, /^\d\d:\d\d:\d\d\.\d{3} WARN .*script/m)
    assert.match(stderr, /^\d\d:\d\d:\d\d\.\d{3} WARN optional toolset did not start: .*gone/m)
    assert.notInclude(stderr, "fiber=")
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
