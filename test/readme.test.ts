/**
 * The README's code is the code in `examples/`: every TypeScript and JSON block is marked with
 * the file it shows and must equal it (the files are type-checked with the rest), and here each
 * one runs as a reader would run it — the host snippets start the gateway as the host would and
 * call a tool through it; the Effect programs run against real servers; the tour's commands on
 * the examples it ships run as written, from a fresh checkout's root.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Everything from "./support/Everything.ts"

const root = NodePath.resolve(import.meta.dirname, "..")
const bin = NodePath.join(root, "node_modules/.bin")

/** The README's fenced blocks of `lang`, each with the file its marker names (or undefined). */
const blocks = (lang: string) => {
  const readme = NodeFs.readFileSync(NodePath.join(root, "README.md"), "utf8")
  const found: Array<{ readonly file: string | undefined; readonly code: string }> = []
  const fence = new RegExp(`(?:<!-- file: (\\S+) -->\\n)?\`\`\`${lang}\\n([\\s\\S]*?)\`\`\`\\n`, "g")
  for (const match of readme.matchAll(fence)) found.push({ file: match[1], code: match[2] ?? "" })
  return found
}

/**
 * The tour's `npx toolvisor COMMAND …` lines for `commands`, each with the words a shell makes of
 * it (bare or single-quoted words: all the tour writes), without its comment.
 */
const tour = (
  commands: ReadonlyArray<string>
): ReadonlyArray<{ readonly line: string; readonly words: ReadonlyArray<string> }> => {
  const readme = NodeFs.readFileSync(NodePath.join(root, "README.md"), "utf8")
  const block = /## A 30-second tour\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? ""
  return block.split("\n").flatMap((text) => {
    const line = text.replace(/\s+#.*$/, "")
    const words = Array.from(line.matchAll(/'([^']*)'|(\S+)/g), (m) => m[1] ?? m[2] ?? "")
    const [npx, toolvisor, command = ""] = words
    return npx === "npx" && toolvisor === "toolvisor" && commands.includes(command)
      ? [{ line, words: words.slice(2) }]
      : []
  })
}

/** Runs the bundled CLI as `npx toolvisor` does: from the checkout's root, its bins first on PATH. */
const runTour = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = NodeChildProcess.spawn(
      process.execPath,
      [NodePath.join(root, "apps/cli/bin/toolvisor.js"), ...args],
      {
        cwd: root,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        stdio: ["ignore", "pipe", "pipe"]
      }
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/**
 * Starts a tour line that runs until stopped (`npm start`, `run --json`, `serve --http`) from the
 * checkout's root, and resolves once its output matches `ready`; `stop` ends it with SIGTERM and
 * resolves with its exit code. Its stdin is a pipe, closed by `endInput`. It leads a process group
 * of its own, and `stop` signals the group: `npm start` does not pass SIGTERM on through its shell.
 */
const startTour = (command: string, args: ReadonlyArray<string>, ready: RegExp) => {
  const child = NodeChildProcess.spawn(command, args, {
    cwd: root,
    env: { ...process.env, PATH: `${bin}:${NodePath.dirname(process.execPath)}:${process.env.PATH}` },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true
  })
  let output = ""
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
  const seen = new Promise<string>((resolve, reject) => {
    const look = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (ready.test(output)) resolve(output)
    }
    child.stdout.on("data", look)
    child.stderr.on("data", look)
    void exited.then((code) =>
      reject(new Error(`${command} ${args.join(" ")} ended (${code}) before ${ready}:\n${output}`))
    )
  })
  return {
    seen,
    output: () => output,
    endInput: () => child.stdin.end(),
    exited,
    stop: () => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM")
      return exited
    }
  }
}

/** A config of one server-everything toolset: its tools are `everything_*`, as the README calls them. */
const agentConfig = () =>
  Everything.writeConfig(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-readme-")))

/** Runs an example with the Node that runs the tests, on the workspace's sources. */
const runExample = (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = NodeChildProcess.spawn(
      process.execPath,
      ["--conditions=@toolvisor/source", NodePath.join(root, file), ...args],
      { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("README", () => {
  it("every TypeScript and JSON block is a file of the repository, word for word", () => {
    const all = [...blocks("ts"), ...blocks("json")]
    assert.isAtLeast(all.length, 6)
    for (const block of all) {
      assert.isDefined(block.file, `a block without a <!-- file: … --> marker:\n${block.code}`)
      const text = NodeFs.readFileSync(NodePath.join(root, block.file ?? ""), "utf8")
      assert.strictEqual(block.code, text, `README differs from ${block.file}`)
    }
  })

  it("each host snippet starts the gateway as the host would, and a tool answers through it", async () => {
    const config = agentConfig()
    const hosts = blocks("json").map((b) => b.file ?? "")
    assert.sameMembers(
      hosts.map((h) => NodePath.basename(h)),
      ["claude-desktop.json", "cursor.json", "vscode.json", "claude-code.json"]
    )
    for (const host of hosts) {
      const parsed = JSON.parse(NodeFs.readFileSync(NodePath.join(root, host), "utf8"))
      const server = (parsed.mcpServers ?? parsed.servers).toolvisor
      const args: Array<string> = server.args.map((a: string) => (a === "/absolute/path/to/agent.yaml" ? config : a))
      // As after `npm i -g toolvisor`: the bin on PATH; hosts start servers from a folder of their own.
      const transport = new StdioClientTransport({
        command: server.command,
        args,
        cwd: NodeOs.tmpdir(),
        env: { PATH: `${bin}:${process.env.PATH}` },
        stderr: "pipe"
      })
      const client = new Client({ name: NodePath.basename(host, ".json"), version: "1.0.0" })
      await client.connect(transport)
      try {
        let text = ""
        for (let i = 0; i < 100 && !text.includes("Echo: hi"); i++) {
          const result = await client.callTool({ name: "everything_echo", arguments: { message: "hi" } })
          text = JSON.stringify(result.content)
          if (!text.includes("Echo: hi")) await new Promise((resolve) => setTimeout(resolve, 100))
        }
        assert.include(text, "Echo: hi", host)
      } finally {
        await client.close()
      }
    }
  })

  it("the Effect API example runs to its end: tools, a call, the board", async () => {
    const result = await runExample("examples/effect-api.ts", [agentConfig()])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, "Echo: hi")
    assert.include(result.stdout, "everything: Ready")
  })

  it("the observability example sends its spans to a collector and prints the metrics", async () => {
    let traces = 0
    const collector = NodeHttp.createServer((req, res) => {
      if (req.url === "/v1/traces") traces += 1
      req.resume()
      req.on("end", () => res.end("{}"))
    })
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
    const address = collector.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    try {
      const result = await runExample("examples/observability.ts", [agentConfig()], {
        OTLP_TRACES_URL: `http://127.0.0.1:${port}/v1/traces`
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.include(result.stdout, 'toolvisor_tool_call_duration_ms_count{toolset="everything"} 1')
      assert.isAtLeast(traces, 1)
    } finally {
      collector.close()
    }
  })
  it("the tour's describe, call and validate lines run as written on the files it names", async () => {
    const lines = tour(["describe", "call", "validate"])
    assert.sameMembers(
      lines.map(({ words }) => words.slice(0, 2).join(" ")),
      [
        "describe examples/agent.yaml",
        "call examples/agent.yaml",
        "validate examples/.vscode/mcp.json",
        "validate examples/.mcp.json"
      ]
    )
    for (const { line, words } of lines) {
      assert.notMatch(line, /[<>|;&$`]/, "a line that runs as the words it holds")
      const result = await runTour(words)
      assert.strictEqual(result.code, 0, `${line}\n${result.stdout}\n${result.stderr}`)
      assert.notInclude(result.stderr, "the config comes first", line)
    }
  }, 180_000)
  it("the tour's other lines run as written: npm start, status, tools, run --json, serve --http, schema", async () => {
    const lines = tour(["status", "tools", "run", "serve", "schema"])
    assert.sameMembers(
      lines.map(({ words }) => words.slice(0, 2).join(" ")),
      [
        "status examples/agent.yaml",
        "tools examples/agent.yaml",
        "run examples/agent.yaml",
        "serve examples/agent.yaml",
        "schema >"
      ]
    )
    const words = (command: string) => lines.find((l) => l.words[0] === command)?.words ?? []

    const status = await runTour(words("status"))
    assert.strictEqual(status.code, 0, status.stderr)
    assert.match(status.stdout, /everything\s+mcp-stdio\s+Ready/)

    const tools = await runTour(words("tools"))
    assert.strictEqual(tools.code, 0, tools.stderr)
    const listed: { readonly tools: ReadonlyArray<{ readonly name: string }> } = JSON.parse(tools.stdout)
    const names = listed.tools.map((t) => t.name)
    assert.include(names, "everything_echo")

    // `schema > agent.schema.json`: what the shell would write is a JSON Schema.
    const schema = await runTour(words("schema").slice(0, 1))
    assert.strictEqual(schema.code, 0, schema.stderr)
    assert.property(JSON.parse(schema.stdout), "$schema")

    // `run --json`: JSON lines out, commands in; it ends with its stdin.
    const run = startTour(
      process.execPath,
      [NodePath.join(root, "apps/cli/bin/toolvisor.js"), ...words("run")],
      /"state":"Ready"/
    )
    await run.seen
    run.endInput()
    assert.strictEqual(await run.exited, 0, run.output())

    // `serve --http 8808`: an MCP client lists and calls a tool over streamable HTTP.
    const serve = startTour(
      process.execPath,
      [NodePath.join(root, "apps/cli/bin/toolvisor.js"), ...words("serve")],
      /serving MCP at (\S+)/
    )
    const url = /serving MCP at (\S+)/.exec(await serve.seen)?.[1] ?? ""
    const client = new Client({ name: "tour", version: "1.0.0" })
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)))
      const echo = await client.callTool({ name: "everything_echo", arguments: { message: "toured" } })
      assert.include(JSON.stringify(echo.content), "Echo: toured")
    } finally {
      await client.close()
    }
    assert.strictEqual(await serve.stop(), 0, serve.output())

    // `npm start`: the live view (plain lines without a terminal) until it is stopped.
    const start = startTour(
      "npm",
      ["start"],
      /^(?=[\s\S]*everything Starting → Ready)(?=[\s\S]*typescript-language-server Starting → Ready)/
    )
    await start.seen
    await start.stop()
  }, 240_000)
})
