/**
 * `toolvisor serve` over stdio as a long-running host sees it, through the SDK client: a toolset
 * that failed to start until its restart budget was spent comes back when one of its tools is
 * called — the runtime's reprobe, run before the call — while one that crash-looped is not
 * restarted by calls (the restart budget holds); `toolvisor_status` tells the host why tools are
 * missing, with the last error masked and what brings the toolset back; `--no-status-tool`
 * leaves it out. A host initializing the moment it spawns `serve` hears the instructions of a
 * toolset that is up a few seconds later.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import * as Predicate from "effect/Predicate"
import { cliArgs, fixtureServer, isAlive, mcpEntry, root, until, writeConfig, yaml } from "./helpers.ts"

/** A tool result's content as text. */
const textOf = (result: unknown) => JSON.stringify(Predicate.hasProperty(result, "content") ? result.content : [])

/** `serve` on a config, with an SDK client connected to it over stdio. */
const serve = async (config: string, flags: ReadonlyArray<string> = []) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: cliArgs(["serve", config, ...flags]),
    cwd: root,
    stderr: "pipe"
  })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const client = new Client({ name: "serve-status-test", version: "1.0.0" })
  await client.connect(transport)
  const names = async () => (await client.listTools()).tools.map((t) => t.name)
  return { client, transport, names, stderr: () => stderr }
}

type Served = Awaited<ReturnType<typeof serve>>

/** Closes the client (the CLI then stops its toolsets and exits) and checks nothing is left. */
const close = async (served: Served) => {
  const pid = served.transport.pid
  await served.client.close()
  if (pid !== null) await until(() => !isAlive(pid), 15_000)
}

interface StatusRow {
  readonly toolset: string
  readonly state: string
  readonly tools: number | null
  readonly error: { readonly tag: string; readonly message: string } | null
  readonly hint?: string
}

const statusOf = async (client: Client) => {
  const result = await client.callTool({ name: "toolvisor_status", arguments: {} })
  const structured = result.structuredContent
  const rows: ReadonlyArray<StatusRow> =
    typeof structured === "object" &&
    structured !== null &&
    "toolsets" in structured &&
    Array.isArray(structured.toolsets)
      ? structured.toolsets
      : []
  return { text: textOf(result), rows, isError: result.isError === true }
}

describe("toolvisor serve: toolsets that fail, and why", () => {
  it("a toolset that failed to start comes back when one of its tools is called, once it can start", async () => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-serve-revive-"))
    const flag = NodePath.join(dir, "installed")
    const server = NodePath.join(dir, "server.sh")
    // The server starts only while the flag is there: as a binary that was uninstalled, then put back.
    NodeFs.writeFileSync(
      server,
      `#!/bin/sh\n[ -f "${flag}" ] || exit 1\nexec "${process.execPath}" "${fixtureServer}"\n`,
      {
        mode: 0o755
      }
    )
    NodeFs.writeFileSync(flag, "")
    const config = writeConfig(
      yaml([
        [
          "      - type: mcp",
          "        name: fx",
          `        command: "${server}"`,
          "        lifecycle: { max_restarts: 1, backoff: { initial: 100ms, max: 200ms } }"
        ]
      ])
    )
    const served = await serve(config)
    try {
      await until(async () => (await served.names()).includes("fx_echo"), 60_000)
      NodeFs.rmSync(flag)
      // The server exits; its restarts cannot start it: with the budget spent it is Failed — before, for good.
      await served.client.callTool({ name: "fx_crash", arguments: {} })
      await until(async () => (await statusOf(served.client)).rows[0]?.state === "Failed", 30_000)
      const down = await statusOf(served.client)
      assert.strictEqual(down.rows[0]?.error?.tag, "ServerUnavailable")
      assert.include(down.rows[0]?.hint ?? "", "calling one of its tools starts it again")

      NodeFs.writeFileSync(flag, "")
      const back = await served.client.callTool({ name: "fx_echo", arguments: { message: "back again" } })
      assert.notStrictEqual(back.isError, true, textOf(back))
      assert.include(textOf(back), "back again")
      const after = await statusOf(served.client)
      assert.strictEqual(after.rows[0]?.state, "Ready")
      assert.isAbove(after.rows[0]?.tools ?? 0, 0)
    } finally {
      await close(served)
    }
  }, 120_000)

  it("a toolset that crashed until its budget was spent is not restarted by calls: no new crash loop", async () => {
    const starts = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-serve-loop-")), "starts")
    const count = () => NodeFs.readFileSync(starts, "utf8").split("\n").length - 1
    const config = writeConfig(
      yaml([
        mcpEntry("loop", [
          `        env: { FIXTURE_EXIT_AFTER_MS: "1500", FIXTURE_STARTS_FILE: "${starts}" }`,
          "        lifecycle: { max_restarts: 1, backoff: { initial: 100ms, max: 200ms } }"
        ])
      ])
    )
    const served = await serve(config)
    try {
      await until(async () => (await statusOf(served.client)).rows[0]?.state === "Failed", 60_000)
      const down = await statusOf(served.client)
      assert.strictEqual(down.rows[0]?.error?.tag, "ServerCrashed")
      assert.include(down.rows[0]?.hint ?? "", "crashed until its restart budget was spent")
      assert.strictEqual(count(), 2)
      for (let i = 0; i < 3; i++) {
        const refused = await served.client.callTool({ name: "loop_echo", arguments: { message: "again?" } })
        assert.isTrue(refused.isError)
      }
      assert.strictEqual(count(), 2, "the calls started nothing")
      assert.strictEqual((await statusOf(served.client)).rows[0]?.state, "Failed")
    } finally {
      await close(served)
    }
  }, 120_000)

  it("toolvisor_status tells each toolset's state, tools and masked last error; --no-status-tool leaves it out", async () => {
    const secret = "PlantStatusKey4r5t6y"
    const config = writeConfig(
      yaml([
        mcpEntry("fx"),
        [
          "      - type: mcp",
          "        name: broken",
          "        command: sh",
          `        args: ["-c", "echo \\"refused key=$API_KEY\\" >&2; exit 1"]`,
          `        env: { API_KEY: "${secret}" }`,
          "        lifecycle: { profile: best-effort }"
        ]
      ])
    )
    const served = await serve(config)
    try {
      await until(async () => (await served.names()).includes("fx_echo"), 60_000)
      assert.include(await served.names(), "toolvisor_status")
      const status = await statusOf(served.client)
      assert.isFalse(status.isError)
      const [fx, broken] = status.rows
      assert.deepInclude(fx, { toolset: "fx", state: "Ready" })
      assert.isAbove(fx?.tools ?? 0, 0)
      assert.strictEqual(broken?.toolset, "broken")
      assert.strictEqual(broken?.error?.tag, "ServerUnavailable")
      assert.include(broken?.error?.message ?? "", "refused key=")
      assert.include(broken?.hint ?? "", "calling one of its tools starts it again")
      assert.include(status.text, "some tools are missing")
      assert.include(status.text, "broken: Failed")
      assert.notInclude(status.text, secret)
      assert.notInclude(JSON.stringify(status.rows), secret)
    } finally {
      await close(served)
    }

    const without = await serve(config, ["--no-status-tool"])
    try {
      await until(async () => (await without.names()).includes("fx_echo"), 60_000)
      assert.notInclude(await without.names(), "toolvisor_status")
      const refused = await without.client.callTool({ name: "toolvisor_status", arguments: {} }).catch((e) => e)
      assert.instanceOf(refused, McpError)
      assert.strictEqual(refused.code, ErrorCode.InvalidParams)
      assert.include(refused.message, "toolvisor_status")
    } finally {
      await close(without)
    }
  }, 120_000)
})

describe("toolvisor serve: initialize at start-up", () => {
  it("an initialize sent as serve starts waits for the toolsets to settle, and carries their instructions", async () => {
    // The fixture lists its tools 1.5 s late: its toolset is up well after the host's initialize.
    const config = writeConfig(yaml([mcpEntry("fx", ["        env:", '          FIXTURE_LIST_DELAY_MS: "1500"'])]))
    const served = await serve(config)
    try {
      // Answered before the toolset was up, the initialize carried no instructions, and MCP has no way to send them later.
      assert.strictEqual(served.client.getInstructions(), "## fx\nFixture tools for tests.")
      assert.include(await served.names(), "fx_echo")
    } finally {
      await close(served)
    }
  })
})
