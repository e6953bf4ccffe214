/**
 * What a terminal shows cannot be hijacked: a real stdio MCP server that writes ESC[2J, an OSC
 * title, a C1 CSI, a bidi override and line breaks into its stderr, tool names, descriptions,
 * argument names and results, run through `tools`, `describe`, `call` and `status`. No output
 * carries them raw: human output shows them escaped, and JSON output (which writes the C1 and
 * bidi characters `JSON.stringify` leaves raw as `\u` escapes) parses back to the original text; a toolset named with a newline keeps the table one row per toolset; and
 * `describe`'s call line is quoted so a shell runs exactly the tool it names, and nothing else.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { root, runCli, writeConfig } from "./helpers.ts"

const hostileServer = NodePath.join(root, "apps/cli/test/fixtures/hostile-server.mjs")
const esc = "\u001b"

/** Characters that act on a terminal; a line feed and a tab do not. */
const actingRanges = "\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069"
const acting = new RegExp(`[${actingRanges}]`)

const assertInert = (text: string, where: string) => {
  const found = acting.exec(text)
  assert.isNull(found, `${where} has a raw U+${found?.[0]?.charCodeAt(0).toString(16).padStart(4, "0")}:\n${text}`)
}

let config = ""
/** Where the tools run; a `$(touch PWNED)` that ran would leave its file here. */
let workdir = ""

beforeAll(() => {
  workdir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-hostile-"))
  config = writeConfig(
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: h",
      `        command: "${process.execPath}"`,
      `        args: ["${hostileServer}"]`,
      "      - type: mcp",
      '        name: "evil\\nname"',
      `        command: "${process.execPath}"`,
      `        args: ["${hostileServer}"]`,
      '        env: { HOSTILE_EXIT: "1" }',
      "        lifecycle: { profile: best-effort }"
    ].join("\n")
  )
})

const cli = async (args: ReadonlyArray<string>) => {
  const finished = await runCli(args, { cwd: workdir })
  assertInert(finished.stdout, `${args.join(" ")}: stdout`)
  assertInert(finished.stderr, `${args.join(" ")}: stderr`)
  return finished
}

describe("a server that writes escape sequences", () => {
  it("tools and call show its names, descriptions and results escaped; --json keeps them as they were", async () => {
    const tools = await cli(["tools", config, "--timeout", "30s"])
    assert.include(tools.stdout, "h_noisy")
    assert.include(tools.stdout, "h_clear\\x1b[2Jscreen", "the name is shown, escaped")
    assert.include(tools.stdout, "Says \\x1b[2J\\x1b]0;pwned-title\\x07\\x9b31m\\u202eevil\\rover")

    const json = await cli(["tools", config, "--json", "--timeout", "30s"])
    const listed: { readonly tools: ReadonlyArray<{ readonly name: string; readonly description: string }> } =
      JSON.parse(json.stdout)
    const noisy = listed.tools.find((t) => t.name === "h_noisy")
    assert.include(noisy?.description, `Says ${esc}[2J${esc}]0;pwned-title\u0007\u009b31m`, "JSON carries the text")
    assert.isTrue(listed.tools.some((t) => t.name === `h_clear${esc}[2Jscreen`))

    const called = await cli(["call", config, "h_noisy", "{}", "--timeout", "30s"])
    assert.strictEqual(called.code, 0, called.stderr)
    assert.include(called.stdout, "result \\x1b[2J\\x1b]0;pwned-title\\x07\\x9b31m\\u202eevil\\rover\nnext")

    const calledJson = await cli(["call", config, "h_noisy", "{}", "--json", "--timeout", "30s"])
    const result: { readonly content: ReadonlyArray<{ readonly text: string }> } = JSON.parse(calledJson.stdout)
    assert.include(result.content[0]?.text, `result ${esc}[2J`)
  }, 120_000)

  it("describe escapes every line, and its call line is quoted for the shell", async () => {
    const noisy = await cli(["describe", config, "h_noisy", "--timeout", "30s"])
    assert.include(noisy.stdout, "Says \\x1b[2J")
    const args = await cli(["describe", config, "h_args", "--timeout", "30s"])
    assert.include(args.stdout, "x\\x1b[2J")

    const quoted = await cli(["describe", config, "h_it's$(touch PWNED)", "--timeout", "30s"])
    const line = quoted.stdout.split("\n").find((l) => l.startsWith("call it: toolvisor call "))
    assert.isDefined(line)
    const words = (line ?? "").slice("call it: toolvisor call ".length)
    // A real shell reads the line back into exactly the config, the tool's name and its arguments.
    const echoed = NodeChildProcess.execFileSync("bash", ["-c", `printf '%s\\n' ${words}`], { cwd: workdir })
    assert.deepStrictEqual(echoed.toString("utf8").split("\n").slice(0, 3), [
      config,
      "h_it's$(touch PWNED)",
      JSON.stringify({ "a'b$(touch PWNED)`x`": "…" })
    ])
    assert.isFalse(NodeFs.existsSync(NodePath.join(workdir, "PWNED")), "nothing in the line ran")

    const cleared = await cli(["describe", config, `h_clear${esc}[2Jscreen`, "--timeout", "30s"])
    const call = cleared.stdout.split("\n").find((l) => l.startsWith("call it: toolvisor call "))
    assert.strictEqual(call, `call it: toolvisor call ${config} $'h_clear\\x1b[2Jscreen' '{}'`)
    const named = NodeChildProcess.execFileSync("bash", ["-c", `printf '%s' ${call?.split(" ")[5]}`])
    assert.strictEqual(named.toString("utf8"), `h_clear${esc}[2Jscreen`, "the $'…' word is the name itself")
  }, 120_000)

  it("status keeps one row per toolset, a name with a newline and an escaping stderr included", async () => {
    const status = await cli(["status", config, "--timeout", "30s"])
    const lines = status.stdout.split("\n").filter((l) => l !== "")
    const table = lines.slice(0, 3)
    assert.match(table[0] ?? "", /^TOOLSET/)
    assert.match(table[1] ?? "", /^h\s/)
    assert.match(table[2] ?? "", /^evil\\nname\s/, "the name is one cell, its newline escaped")
    assert.include(status.stdout, "fatal: \\x1b[2J\\x1b]0;stderr-title\\x07 gave up", "its stderr, escaped")
    assert.include(status.stderr, "\\x1b[2J", "the warning quoting it is escaped too")

    const json = await cli(["status", config, "--json", "--timeout", "30s"])
    const rows: ReadonlyArray<{ readonly toolset: string; readonly error: { readonly message: string } | null }> =
      JSON.parse(json.stdout)
    assert.deepStrictEqual(
      rows.map((r) => r.toolset),
      ["h", "evil\nname"]
    )
    assert.include(rows[1]?.error?.message, `${esc}[2J${esc}]0;stderr-title\u0007`, "JSON carries the text")
  }, 120_000)
})
