/**
 * `status`, `tools`, `describe` and `call` as a script meets them: deadlines that hold, exit
 * codes to branch on, failures that are one readable line (or JSON with --json), and counts
 * that match what the agent is offered.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { mcpEntry, runCli, writeConfig, yaml } from "./helpers.ts"

const hanging = (name: string, extra: ReadonlyArray<string> = []) =>
  mcpEntry(name, ["        env: { FIXTURE_MODE: hang }", "        lifecycle: { startup_timeout: 60s }", ...extra])

const missingBinary = (name: string, lifecycle: string) => [
  "      - type: mcp",
  `        name: ${name}`,
  "        command: /nonexistent/toolvisor-no-such-server",
  `        lifecycle: ${lifecycle}`
]

const json = (text: string): ReadonlyArray<{ readonly [key: string]: unknown }> => JSON.parse(text)

describe("status", () => {
  it("--timeout bounds the wait: the table shows what is still starting, stderr says what it waited for", async () => {
    const config = writeConfig(yaml([mcpEntry("fx"), hanging("slow")]))
    const began = Date.now()
    const result = await runCli(["status", config, "--timeout", "2s"])
    const elapsed = Date.now() - began
    // The wait is 2 s; closing the hanging server afterwards is bounded by its stdin closing.
    assert.isBelow(elapsed, 8_000, `status took ${elapsed} ms`)
    assert.strictEqual(result.code, 0, result.stderr)
    assert.match(result.stdout, /slow\s+mcp-stdio\s+Starting/)
    assert.match(result.stdout, /fx\s+mcp-stdio\s+Ready/)
    assert.include(result.stdout, "1 of 2 toolsets Ready; optional not Ready: slow (Starting)")
    // fx may still be starting after the first second on a loaded machine; slow always is.
    assert.match(result.stderr, /waiting up to 2s for: (fx, )?slow\n/)
  })

  it("exit 1 when a required toolset is down, or when nothing is up; optional failures keep 0", async () => {
    const requiredDown = await runCli([
      "status",
      writeConfig(yaml([mcpEntry("fx"), missingBinary("gone", "{ profile: strict }")]))
    ])
    assert.strictEqual(requiredDown.code, 1)
    assert.include(requiredDown.stderr, "required not Ready: gone (Failed)")

    const optionalDown = await runCli([
      "status",
      writeConfig(yaml([mcpEntry("fx"), missingBinary("gone", "{ profile: best-effort }")]))
    ])
    assert.strictEqual(optionalDown.code, 0, optionalDown.stderr)
    assert.include(optionalDown.stdout, "optional not Ready: gone (Failed)")

    const nothingUp = await runCli([
      "status",
      writeConfig(yaml([missingBinary("gone", "{ profile: best-effort }")])),
      "--json"
    ])
    assert.strictEqual(nothingUp.code, 1)
    const [gone] = json(nothingUp.stdout)
    assert.strictEqual(gone?.state, "Stopped")
    assert.include(JSON.stringify(gone?.error), "ServerUnavailable")
  })

  it("a missing binary is Failed with its whole reason on one line, naming the toolset once", async () => {
    const result = await runCli([
      "status",
      writeConfig(yaml([mcpEntry("fx"), missingBinary("gone", "{ profile: best-effort }")]))
    ])
    assert.match(result.stdout, /gone\s+mcp-stdio\s+Failed/)
    const line = result.stdout.split("\n").find((l) => l.startsWith("gone: Failed: "))
    assert.isDefined(line, result.stdout)
    assert.include(line, "ServerUnavailable")
    assert.include(line, "/nonexistent/toolvisor-no-such-server")
    assert.strictEqual(line?.split("gone").length, 2, `the name is repeated: ${line}`)
  })

  it("TOOLS counts what the tools: filter exposes, in the table and in --json", async () => {
    const config = writeConfig(yaml([mcpEntry("fx", ["        tools: [fx_echo, fx_pid]"])]))
    const table = await runCli(["status", config])
    assert.match(table.stdout, /fx\s+mcp-stdio\s+Ready\s+0\s+2\s/)
    const lines = await runCli(["status", config, "--json"])
    assert.strictEqual(json(lines.stdout)[0]?.tools, 2)
  })

  it("without a config or ./agent.yaml, says that it runs the bundled example", async () => {
    const empty = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-empty-"))
    const result = await runCli(["tools", "--timeout", "1s"], { cwd: empty })
    assert.include(result.stderr, "no agent.yaml in this folder: using the bundled example")
    assert.include(result.stderr, "examples/agent.yaml")
  })
})

describe("tools, describe, call", () => {
  const good = () => writeConfig(yaml([mcpEntry("fx")]))

  it("tools --json carries each tool's inputSchema and annotations", async () => {
    const result = await runCli(["tools", good(), "--json"])
    assert.strictEqual(result.code, 0, result.stderr)
    const catalog: { readonly tools: ReadonlyArray<{ readonly [key: string]: unknown }> } = JSON.parse(result.stdout)
    const echo = catalog.tools.find((t) => t.name === "fx_echo")
    assert.deepInclude(echo, { toolset: "fx", annotations: { readOnlyHint: true } })
    assert.include(JSON.stringify(echo?.inputSchema), '"message"')
  })

  it("describe shows a tool's description, arguments and a call line; a typo names the near ones", async () => {
    const config = good()
    const result = await runCli(["describe", config, "fx_sleep"])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.include(result.stdout, "Waits, then answers")
    assert.match(result.stdout, /ms\s+number\s+required/)
    assert.include(result.stdout, `toolvisor call ${config} fx_sleep '{"ms":0}'`)
    const typo = await runCli(["describe", config, "fx_slep"])
    assert.strictEqual(typo.code, 1)
    assert.include(typo.stderr, "did you mean fx_sleep")
  })

  it("call --json prints a failure as JSON with its tag on stdout and exits 1", async () => {
    const config = writeConfig(yaml([mcpEntry("fx", ["        lifecycle: { call_timeout: 500ms }"])]))
    const timedOut = await runCli(["call", config, "fx_slow_read", '{"ms":5000}', "--json"])
    assert.strictEqual(timedOut.code, 1)
    const answer: { readonly error: { readonly tag: string; readonly message: string } } = JSON.parse(timedOut.stdout)
    assert.strictEqual(answer.error.tag, "CallTimeout")
    assert.match(answer.error.message, /500 ?ms/)
    const unknown = await runCli(["call", config, "fx_nope", "--json"])
    assert.strictEqual(unknown.code, 1)
    assert.strictEqual(JSON.parse(unknown.stdout).error.tag, "UnknownTool")
  })
})
