import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import {
  cliArgs,
  everything,
  isAlive,
  mcpEntry,
  root,
  runCli,
  Session,
  tsProject,
  tsServer,
  until,
  writeConfig,
  yaml
} from "./helpers.ts"

const realServers = () =>
  writeConfig(
    yaml([
      [
        "      - type: mcp",
        "        name: everything",
        `        command: "${process.execPath}"`,
        `        args: ["${everything}", "stdio"]`,
        "        lifecycle: { backoff: { initial: 200ms, max: 1s } }"
      ],
      [
        "      - type: lsp",
        `        command: "${tsServer}"`,
        '        args: ["--stdio"]',
        `        working_dir: "${tsProject}"`,
        '        file_types: [".ts"]',
        "        lifecycle: { backoff: { initial: 200ms, max: 1s } }"
      ]
    ])
  )

const status = (toolset: string, state: string) => (line: { readonly [key: string]: unknown }) =>
  line.type === "status" && line.toolset === toolset && line.state === state

describe("toolvisor run --json", () => {
  it("status lines reach Ready for a real MCP and a real LSP server; restart, SIGKILL and SIGTERM behave", async () => {
    const session = new Session(["run", realServers(), "--json"])
    try {
      const mcpReady = await session.waitFor(status("everything", "Ready"))
      await session.waitFor(status("typescript-language-server", "Ready"))
      await session.waitFor((l) => l.type === "tools" && l.complete === true)
      const firstPid = mcpReady.pid
      assert.isNumber(firstPid)

      const mark = session.lines.length
      session.send({ cmd: "restart", toolset: "everything" })
      await session.waitFor(status("everything", "Restarting"), mark)
      const restarted = await session.waitFor(status("everything", "Ready"), mark)
      assert.notStrictEqual(restarted.pid, firstPid)
      await session.waitFor((l) => l.type === "result" && l.cmd === "restart", mark)

      const killMark = session.lines.length
      process.kill(Number(restarted.pid), "SIGKILL")
      await session.waitFor(status("everything", "Restarting"), killMark)
      const back = await session.waitFor(status("everything", "Ready"), killMark)

      const callMark = session.lines.length
      session.send({ cmd: "call", tool: "everything_echo", args: { message: "via stdin" } })
      const answer = await session.waitFor((l) => l.type === "result" && l.cmd === "call", callMark)
      assert.include(JSON.stringify(answer.result), "via stdin")
      session.send({ cmd: "nope" })
      await session.waitFor((l) => l.type === "error" && l.cmd === "nope", callMark)

      const board = await (async () => {
        const mark2 = session.lines.length
        session.send({ cmd: "status" })
        return session.waitFor((l) => l.type === "result" && l.cmd === "status", mark2)
      })()
      const pids =
        JSON.stringify(board.toolsets)
          .match(/"pid":(\d+)/g)
          ?.map((m) => Number(m.slice(6))) ?? []
      assert.isAtLeast(pids.length, 2)
      assert.include(pids, Number(back.pid))

      session.child.kill("SIGTERM")
      assert.strictEqual(await session.exited(), 0)
      for (const pid of pids) assert.isFalse(isAlive(pid), `pid ${pid} outlived the CLI`)
      for (const line of session.lines) assert.doesNotThrow(() => JSON.parse(line), `not JSON on stdout: ${line}`)
    } finally {
      session.child.kill("SIGKILL")
    }
  })
})

describe("toolvisor one-shot commands", () => {
  const good = () => writeConfig(yaml([mcpEntry("fx")]))

  it("a call cut short by SIGINT or SIGTERM exits 130 or 143 and says so", async () => {
    for (const [signal, code] of [
      ["SIGINT", 130],
      ["SIGTERM", 143]
    ] as const) {
      const calls = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cut-")), "calls")
      const config = writeConfig(yaml([mcpEntry("fx", ["        env:", `          FIXTURE_CALLS_FILE: "${calls}"`])]))
      const child = NodeChildProcess.spawn(process.execPath, cliArgs(["call", config, "fx_sleep", '{"ms":60000}']), {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      const exited = new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)))
      await until(() => NodeFs.existsSync(calls) && NodeFs.readFileSync(calls, "utf8").includes("sleep"), 30_000)
      child.kill(signal)
      // It exited 0 with nothing said: `toolvisor call … && next` went on as if the call had finished.
      assert.strictEqual(await exited, code, stderr)
      assert.include(stderr, `WARN interrupted by ${signal} before the command finished`)
    }
  })

  it("status exits 0 when every required toolset is Ready, 1 when one is not", async () => {
    const ok = await runCli(["status", good(), "--json"])
    assert.strictEqual(ok.code, 0, ok.stderr)
    const board: unknown = JSON.parse(ok.stdout)
    assert.include(JSON.stringify(board), '"state":"Ready"')
    const broken = writeConfig(
      yaml([
        mcpEntry("fx"),
        [
          "      - type: mcp",
          "        name: gone",
          "        command: toolvisor-no-such-server",
          "        lifecycle: { profile: strict }"
        ]
      ])
    )
    const down = await runCli(["status", broken])
    assert.strictEqual(down.code, 1)
    assert.include(down.stdout, "gone")
    assert.include(down.stderr, "gone")
  })

  it("tools lists the catalog; call prints a result, and exits 1 when the tool reports an error", async () => {
    const config = good()
    const tools = await runCli(["tools", config, "--json"])
    assert.strictEqual(tools.code, 0, tools.stderr)
    assert.include(tools.stdout, "fx_echo")
    const call = await runCli(["call", config, "fx_echo", '{"message":"hello"}'])
    assert.strictEqual(call.code, 0, call.stderr)
    assert.strictEqual(call.stdout.trim(), "hello")
    const failing = await runCli(["call", config, "fx_fail"])
    assert.strictEqual(failing.code, 1)
    assert.include(failing.stdout, "it went wrong")
    const unknown = await runCli(["call", config, "fx_ecko", "{}"])
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.stderr, "fx_echo")
  })

  it("output to a pipe read slower than it is written arrives whole before the CLI exits", async () => {
    const bytes = 2_000_000
    const child = NodeChildProcess.spawn(
      process.execPath,
      cliArgs(["call", good(), "fx_big", JSON.stringify({ bytes }), "--json"]),
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    // A reader that takes its time with each chunk, as a pager or a busy consumer does: the CLI
    // exited with what the pipe did not hold yet still queued, and the reader got a part of it.
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      child.stdout.pause()
      setTimeout(() => child.stdout.resume(), 20)
    })
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
    assert.strictEqual(code, 0)
    const printed = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    assert.strictEqual(printed.content[0].text.length, bytes)
  })

  it("tools marks what the model is offered only through a search (defer), in text and --json", async () => {
    const config = writeConfig(yaml([mcpEntry("fx", ["        defer: [echo]"])]))
    const text = await runCli(["tools", config])
    assert.strictEqual(text.code, 0, text.stderr)
    const line = (name: string) => text.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? ""
    assert.match(line("fx_echo"), /\bfx \(deferred\)/)
    assert.notInclude(line("fx_fail"), "deferred")
    const json = await runCli(["tools", config, "--json"])
    const tools: ReadonlyArray<{ readonly name: string; readonly deferred?: boolean }> = JSON.parse(json.stdout).tools
    assert.isTrue(tools.find((t) => t.name === "fx_echo")?.deferred)
    assert.isUndefined(tools.find((t) => t.name === "fx_fail")?.deferred)
  })

  it("validate: exit 0 for a good config, exit 2 with every problem as path: message for a broken one", async () => {
    const ok = await runCli(["validate", good()])
    assert.strictEqual(ok.code, 0, ok.stderr)
    const broken = writeConfig(
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: mcp",
        "        comand: x",
        "      - type: lsp",
        "        lifecycle: { backoff: { jitter: 2 } }"
      ].join("\n")
    )
    const bad = await runCli(["validate", broken])
    assert.strictEqual(bad.code, 2)
    // The problems are validate's result: on stdout, one a line.
    assert.include(bad.stdout, "\n  agents.root.toolsets[0]")
    assert.include(bad.stdout, "\n  agents.root.toolsets[1]")
    assert.include(bad.stdout, "jitter")
    assert.notInclude(bad.stdout + bad.stderr, "    at ")
  })

  it("schema prints the config's JSON Schema", async () => {
    const result = await runCli(["schema"])
    assert.strictEqual(result.code, 0)
    const schema: unknown = JSON.parse(result.stdout)
    assert.include(JSON.stringify(schema), "lifecycle")
  })

  it("usage errors exit 2 with one clear line: an unknown flag, bad JSON arguments, a missing file", async () => {
    const flag = await runCli(["status", "--bogus"])
    assert.strictEqual(flag.code, 2)
    // The help comes with the error, on stderr: stdout is where `serve` speaks MCP.
    assert.strictEqual(flag.stdout, "")
    assert.include(flag.stderr, "USAGE")
    const port = await runCli(["serve", "--http", "abc"])
    assert.strictEqual(port.code, 2)
    assert.strictEqual(port.stdout, "")
    assert.include(port.stderr, 'Invalid value for flag --http: "abc"')
    const json = await runCli(["call", "fx_echo", "{not json"])
    assert.strictEqual(json.code, 2)
    assert.include(json.stderr, "ARGS_JSON")
    const missing = await runCli(["validate", "/nonexistent/agent.yaml"])
    assert.strictEqual(missing.code, 2)
    assert.include(missing.stdout, "File not found: /nonexistent/agent.yaml")
  })

  it("--help on a command shows its usage and examples; --version prints the version", async () => {
    const help = await runCli(["call", "--help"])
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "ARGS_JSON")
    const version = await runCli(["--version"])
    assert.include(version.stdout, "0.1.0")
  })
})

describe("toolvisor serve", () => {
  it("an MCP client over stdio lists every tool and calls MCP and LSP tools through the supervised toolsets", async () => {
    const config = yaml([
      mcpEntry("fx"),
      [
        "      - type: lsp",
        "        name: ts",
        `        command: "${tsServer}"`,
        '        args: ["--stdio"]',
        `        working_dir: "${tsProject}"`
      ]
    ])
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", writeConfig(config)]),
      cwd: root,
      stderr: "pipe"
    })
    const client = new Client({ name: "cli-test", version: "1.0.0" })
    await client.connect(transport)
    try {
      let names: Array<string> = []
      // The SDK client validates every listed tool, so a listing it accepts is a valid one.
      const ready = () => names.includes("fx_echo") && names.includes("ts_lsp_workspace")
      for (let i = 0; i < 120 && !ready(); i++) {
        names = (await client.listTools()).tools.map((t) => t.name)
        if (!ready()) await new Promise((resolve) => setTimeout(resolve, 250))
      }
      assert.includeMembers(names, ["fx_echo", "ts_lsp_workspace", "ts_lsp_hover"])
      const result = await client.callTool({ name: "fx_echo", arguments: { message: "served" } })
      assert.include(JSON.stringify(result.content), "served")
      const hover = await client.callTool({
        name: "ts_lsp_hover",
        arguments: { file: "src/main.ts", line: 3, character: 23 }
      })
      assert.isNotTrue(hover.isError)
      // Answered by the server (the signature itself waits for the project to load: see the lsp tests).
      assert.include(JSON.stringify(hover.content), "add")
      const pid = transport.pid
      await client.close()
      // Closing stdin ends the session: the CLI stops its toolsets and exits on its own.
      const deadline = Date.now() + 10_000
      while (pid !== null && isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      assert.isFalse(pid !== null && isAlive(pid), "serve outlived its client")
    } finally {
      await client.close()
    }
  })
})

/** Removes the colour escapes (ESC [ … m) of the live table. */
const stripColours = (text: string) =>
  text
    .split(String.fromCharCode(27))
    .map((part, i) => (i === 0 ? part : part.replace(/^\[[0-9;]*m/, "")))
    .join("")

describe("toolvisor run on a terminal", () => {
  it("draws the live table, and quit stops everything and exits", async () => {
    const config = writeConfig(yaml([mcpEntry("fx")]))
    // `script` gives the CLI a pseudo-terminal, as a person's terminal would.
    const command = [process.execPath, ...cliArgs(["run", config])].map((a) => `'${a}'`).join(" ")
    const child = NodeChildProcess.spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: root,
      env: { ...process.env, COLUMNS: "120", LINES: "30" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let screen = ""
    child.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    const deadline = Date.now() + 60_000
    while (!/fx\s+mcp-stdio\s+.*Ready/.test(screen) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    assert.match(screen, /TOOLSET\s+KIND/)
    assert.match(screen, /fx\s+mcp-stdio\s+.*Ready/)
    const pid = Number(/fx\s+mcp-stdio\s+\S*\s*\S*Ready\S*\s+\d+\s+\d+\s+(\d+)/.exec(stripColours(screen))?.[1])
    child.stdin.write("quit\r")
    assert.strictEqual(await exited, 0)
    if (Number.isFinite(pid)) assert.isFalse(isAlive(pid))
  })
})
