// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${input:id} is the VS Code syntax under test, not a template
/**
 * Every hint the CLI prints names a command that works, run as written: `--input` on every
 * command that loads a config, CONFIG first for every command (the other order taken, with a
 * note), the `call` line `describe` prints, an allow-list by the server's own tool names with
 * the closest name for an entry that matches nothing, and tools that two toolsets both offer
 * reported instead of silently dropped.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { fixtureServer, runCli, writeConfig, yaml } from "./helpers.ts"

/** A VS Code mcp.json whose server needs an input: no command can load it without `--input`. */
const withInput = () =>
  writeConfig(
    JSON.stringify({
      inputs: [{ type: "promptString", id: "greeting", description: "What the server is told" }],
      servers: {
        fx: { type: "stdio", command: process.execPath, args: [fixtureServer], env: { GREETING: "${input:greeting}" } }
      }
    }),
    "mcp.json"
  )

/** An unnamed fixture toolset: its tools keep their own names, so two of them collide. */
const unnamed = (marker: string) => [
  "      - type: mcp",
  `        command: "${process.execPath}"`,
  `        args: ["${fixtureServer}"]`,
  `        env: { MARKER: "${marker}" }`
]

describe("hints that name a command", () => {
  it("--input, which the error says to pass, is taken by every command that loads a config", async () => {
    const config = withInput()
    // A missing input fails only the toolset that needs it (the environment's problem, not the file's).
    const missing = await runCli(["status", config])
    assert.strictEqual(missing.code, 1)
    const hint = /pass `--input (greeting)=VALUE`/.exec(missing.stdout)
    assert.isNotNull(hint, missing.stdout + missing.stderr)
    const input = ["--input", "greeting=hello"]
    const commands: ReadonlyArray<readonly [ReadonlyArray<string>, number, string]> = [
      [["status", config, ...input], 0, "Ready"],
      [["tools", config, ...input], 0, "fx_echo"],
      [["describe", config, "fx_echo", ...input], 0, "Echoes its message"],
      [["call", config, "fx_echo", '{"message":"hi"}', ...input], 0, "hi"],
      [["run", config, "--json", ...input], 0, '"toolset":"fx"'],
      [["serve", config, ...input], 0, ""],
      // It loads the config, then refuses a toolset that is no remote server: the input was taken.
      [["auth", config, "fx", ...input], 2, "fx is not a remote MCP server"]
    ]
    for (const [args, code, shown] of commands) {
      const result = await runCli(args)
      assert.strictEqual(result.code, code, `${args.join(" ")}\n${result.stderr}`)
      assert.include(result.stdout + result.stderr, shown, args.join(" "))
      assert.notInclude(result.stderr, "has no value", args.join(" "))
    }
  })

  it("CONFIG comes first; the other order works with a note; describe's call line runs as written", async () => {
    const config = writeConfig(
      yaml([
        [
          "      - type: mcp",
          "        name: fx",
          `        command: "${process.execPath}"`,
          `        args: ["${fixtureServer}"]`
        ]
      ])
    )
    const described = await runCli(["describe", config, "fx_echo"])
    assert.strictEqual(described.code, 0, described.stderr)
    const line = described.stdout.split("\n").find((l) => l.startsWith("call it: "))
    assert.strictEqual(line, `call it: toolvisor call ${config} fx_echo '{"message":"…"}'`)
    // The shell reads the line into the words a user runs.
    const words = NodeChildProcess.execFileSync("bash", ["-c", `printf '%s\\n' ${(line ?? "").slice(19)}`])
      .toString("utf8")
      .split("\n")
      .slice(0, 4)
    assert.deepStrictEqual(words, ["call", config, "fx_echo", '{"message":"…"}'])
    const called = await runCli(words)
    assert.strictEqual(called.code, 0, called.stderr)
    assert.strictEqual(called.stdout.trim(), "…")

    const reversed = await runCli(["describe", "fx_echo", config])
    assert.strictEqual(reversed.code, 0, reversed.stderr)
    assert.include(reversed.stderr, `the config comes first (toolvisor describe [CONFIG] TOOL)`)
    assert.include(reversed.stderr, `toolvisor describe ${config} fx_echo`)
    const callReversed = await runCli(["call", "fx_echo", config, '{"message":"hi"}'])
    assert.strictEqual(callReversed.code, 0, callReversed.stderr)
    assert.strictEqual(callReversed.stdout.trim(), "hi")

    const absent = NodePath.join(NodePath.dirname(config), "absent.yaml")
    for (const args of [
      ["describe", "fx_echo", absent],
      ["describe", absent, "fx_echo"],
      ["call", "fx_echo", absent]
    ]) {
      const result = await runCli(args)
      assert.strictEqual(result.code, 2, args.join(" "))
      assert.include(result.stderr, `config file not found: ${absent}`, args.join(" "))
      assert.notInclude(result.stderr, "fx_echo", "the tool is not taken for a file")
    }
  })

  it("tools: names a tool by the server's own name or the prefixed one; an entry that matches nothing says the closest", async () => {
    const config = writeConfig(
      yaml([
        [
          "      - type: mcp",
          "        name: fx",
          `        command: "${process.execPath}"`,
          `        args: ["${fixtureServer}"]`,
          "        tools: [echo, fx_pid, slep]"
        ]
      ])
    )
    const checked = await runCli(["validate", config, "--check"])
    assert.strictEqual(checked.code, 0, checked.stderr)
    assert.include(checked.stdout, "✓ fx: Ready, 2 tool(s): fx_echo, fx_pid\n")
    assert.include(
      checked.stdout,
      'warning fx: tools allow-list entry "slep" (did you mean "sleep"?) matches no tool it offers'
    )

    const status = await runCli(["status", config, "--json"])
    assert.strictEqual(status.code, 0, status.stderr)
    assert.strictEqual(JSON.parse(status.stdout)[0].tools, 2)
    assert.include(status.stderr, '"slep" (did you mean "sleep"?)')
    const called = await runCli(["call", config, "fx_echo", '{"message":"allowed"}'])
    assert.strictEqual(called.stdout.trim(), "allowed")
  })

  it("two toolsets offering the same tool names: validate --check and status say which are hidden by which", async () => {
    const config = writeConfig(yaml([unnamed("first"), unnamed("second")]))
    const checked = await runCli(["validate", config, "--check"])
    assert.strictEqual(checked.code, 0, checked.stderr)
    const warned = checked.stdout.split("\n").find((l) => l.includes("hidden by"))
    assert.isDefined(warned, checked.stdout)
    assert.match(
      warned ?? "",
      /^warning (\S+): \d+ tool\(s\) hidden by (\S+), which offers the same name\(s\): .*\becho\b/
    )
    assert.include(warned, "give")

    const status = await runCli(["status", config])
    assert.strictEqual(status.code, 0, status.stderr)
    assert.include(status.stdout, warned ?? "", "status says the same")
    const json = await runCli(["status", config, "--json"])
    assert.include(json.stderr, (warned ?? "").slice("warning ".length))
  })
})
