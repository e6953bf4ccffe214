/**
 * The CLI's commands for MCP's other surfaces, run as a user runs them (the bundled CLI in a
 * child process) against a real server-everything over stdio: `prompts`, `prompt`, `resources`,
 * `read` (text, a blob named rather than printed, `--out`), `describe` of a prompt, typos answered
 * with near names; `call` with the server's log lines on stderr, and on a real terminal (tmux) a
 * progress bar that moves and is cleared; the live view's event pane with a server's log message.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { cliArgs, everything, runCli, terminal, waitForScreen, writeConfig } from "./helpers.ts"

let config = ""

beforeAll(() => {
  config = writeConfig(
    [
      "agents:",
      "  root:",
      "    toolsets:",
      "      - type: mcp",
      "        name: ev",
      `        command: "${process.execPath}"`,
      `        args: ["${everything}", "stdio"]`
    ].join("\n")
  )
})

const document = "demo://resource/static/document/architecture.md"

describe("prompts and resources from the command line", () => {
  it("prompts lists them named like tools; prompt gets one with key=value or JSON arguments", async () => {
    const listed = await runCli(["prompts", config])
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, /^ev_args-prompt\s+ev\s+\(city, state\?\) A prompt with two arguments/m)
    const json = await runCli(["prompts", config, "--json"])
    const catalog: {
      readonly type: string
      readonly prompts: ReadonlyArray<{ readonly name: string; readonly toolset: string; readonly arguments?: unknown }>
    } = JSON.parse(json.stdout)
    assert.strictEqual(catalog.type, "prompts")
    const args = catalog.prompts.find((p) => p.name === "ev_args-prompt")
    assert.strictEqual(args?.toolset, "ev")
    assert.deepInclude(args?.arguments, { name: "city", description: "Name of the city", required: true })

    const got = await runCli(["prompt", config, "ev_args-prompt", "city=Lyon", "state=Rhône"])
    assert.strictEqual(got.code, 0, got.stderr)
    assert.strictEqual(got.stdout.trim(), "[user]\nWhat's weather in Lyon, Rhône?")
    const fromJson = await runCli(["prompt", config, "ev_args-prompt", '{"city":"Lyon"}', "--json"])
    const result: { readonly messages: ReadonlyArray<{ readonly content: { readonly text: string } }> } = JSON.parse(
      fromJson.stdout
    )
    assert.strictEqual(result.messages[0]?.content.text, "What's weather in Lyon?")

    const typo = await runCli(["prompt", config, "ev_args-promt", "city=Lyon"])
    assert.strictEqual(typo.code, 1)
    assert.include(typo.stderr, 'UnknownPrompt: no prompt named "ev_args-promt" (did you mean ev_args-prompt?)')
    const typoJson = await runCli(["prompt", config, "ev_args-promt", "--json"])
    const failed: { readonly error: { readonly tag: string; readonly prompt: string } } = JSON.parse(typoJson.stdout)
    assert.strictEqual(typoJson.code, 1)
    assert.deepInclude(failed.error, { tag: "UnknownPrompt", prompt: "ev_args-promt" })
    const badArgs = await runCli(["prompt", config, "ev_args-prompt", "city"])
    assert.strictEqual(badArgs.code, 2)
    assert.include(badArgs.stderr, "prompt: expected key=value, got city")
  }, 180_000)

  it("describe shows a prompt, with the line that gets it", async () => {
    const shown = await runCli(["describe", config, "ev_args-prompt"])
    assert.strictEqual(shown.code, 0, shown.stderr)
    assert.include(shown.stdout, "ev_args-prompt  (prompt of toolset ev)  Arguments Prompt")
    assert.match(shown.stdout, /^ {2}city {3}required {2}Name of the city$/m)
    assert.match(shown.stdout, /^ {2}state {2}optional$/m)
    assert.include(shown.stdout, `get it: toolvisor prompt ${config} ev_args-prompt 'city=…'`)
    const unknown = await runCli(["describe", config, "ev_args-promt"])
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.stderr, 'no tool or prompt named "ev_args-promt"; did you mean ev_args-prompt?')
  }, 120_000)

  it("resources lists resources and templates; read prints text, names a blob, writes bytes only with --out", async () => {
    const listed = await runCli(["resources", config])
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, new RegExp(`^${document}\\s+ev\\s+text/markdown\\s+architecture\\.md`, "m"))
    assert.match(
      listed.stdout,
      /^templates \(read a URI that fits one\):\ndemo:\/\/resource\/dynamic\/text\/\{resourceId\}\s+ev/m
    )
    const json = JSON.parse((await runCli(["resources", config, "--json"])).stdout)
    assert.strictEqual(json.type, "resources")
    assert.isTrue(
      json.resources.some((r: { uri: string; toolset: string }) => r.uri === document && r.toolset === "ev")
    )
    assert.isTrue(json.templates.some((t: { uriTemplate: string }) => t.uriTemplate.endsWith("blob/{resourceId}")))

    const text = await runCli(["read", config, document])
    assert.strictEqual(text.code, 0, text.stderr)
    assert.include(text.stdout, "# Everything Server")

    const blob = await runCli(["read", config, "demo://resource/dynamic/blob/7"])
    assert.strictEqual(blob.code, 0, blob.stderr)
    assert.match(blob.stdout, /^\[blob text\/plain, \d+ bytes\]\n$/, "its type and size, never its bytes")
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-read-"))
    const out = NodePath.join(dir, "blob.bin")
    const written = await runCli(["read", config, "demo://resource/dynamic/blob/7", "--out", out])
    assert.strictEqual(written.code, 0, written.stderr)
    assert.strictEqual(written.stdout, "")
    const bytes = NodeFs.readFileSync(out, "utf8")
    assert.match(bytes, /^Resource 7: This is a base64 blob created at /)
    assert.include(blob.stdout, `${Buffer.byteLength(bytes)} bytes`)
    const asJson = JSON.parse((await runCli(["read", config, "demo://resource/dynamic/blob/7", "--json"])).stdout)
    assert.strictEqual(asJson.contents[0].mimeType, "text/plain")
    assert.typeOf(asJson.contents[0].blob, "string")
    NodeFs.rmSync(dir, { recursive: true, force: true })

    const typo = await runCli(["read", config, `${document}x`])
    assert.strictEqual(typo.code, 1)
    assert.include(typo.stderr, `UnknownResource: no toolset lists the resource ${document}x`)
    assert.include(typo.stderr, `(did you mean ${document}?)`)
  }, 180_000)
})

describe("call shows what the server says while the tool runs", () => {
  it("its log messages on stderr, with the toolset named; an image result named by type and size", async () => {
    const called = await runCli(["call", config, "ev_toggle-simulated-logging"])
    assert.strictEqual(called.code, 0, called.stderr)
    assert.include(called.stdout, "Started simulated")
    assert.match(called.stderr, /^\d\d:\d\d:\d\d\.\d{3} [A-Z]+ \[ev\] [A-Z][a-z]+[- ]level[- ]message/m)
    assert.notInclude(called.stdout, "level message", "stdout holds the result alone")
    const image = await runCli(["call", config, "ev_get-tiny-image"])
    assert.match(image.stdout, /^\[image image\/png, \d+ bytes\]$/m)
  }, 120_000)

  it("a progress bar on a terminal, moving with the server's progress and cleared at the end", async () => {
    const name = `toolvisor-progress-${process.pid}`
    const script = `${[process.execPath, ...cliArgs(["call", config, "ev_trigger-long-running-operation"])].map((w) => `"${w}"`).join(" ")} '{"duration":6,"steps":6}'; echo "EXIT=$?"; read _`
    const term = terminal(name, ["sh", "-c", script], 100, 20)
    try {
      const moving = await waitForScreen(term.screen, (t) => /\[█+░+\] [1-5]\/6 \d+%/.test(t))
      assert.match(moving, /ev_trigger-long-running-operation \[█+░+\] [1-5]\/6 \d+%/)
      const done = await waitForScreen(term.screen, (t) => t.includes("EXIT="))
      assert.include(done, "Long running operation completed. Duration: 6 seconds, Steps: 6.")
      assert.include(done, "EXIT=0")
      assert.notInclude(done, "░", "the bar is cleared")
    } finally {
      term.close()
    }
  }, 120_000)
})

describe("the live view", () => {
  it("shows a server's log message in the event pane", async () => {
    const term = terminal(
      `toolvisor-serverlog-${process.pid}`,
      [process.execPath, ...cliArgs(["run", config])],
      100,
      30
    )
    try {
      await waitForScreen(term.screen, (t) => /ev\s.*Ready/.test(t))
      term.type("call ev_toggle-simulated-logging {}")
      await waitForScreen(term.screen, (t) => t.includes("── call: "))
      // A one-line answer gives the pane back to the events.
      term.type("status")
      const shown = await waitForScreen(term.screen, (t) => /\[ev\] [A-Z][a-z]+[- ]level[- ]message/.test(t))
      const lines = shown.split("\n")
      const at = lines.findIndex((l) => /\[ev\] [A-Z][a-z]+[- ]level[- ]message/.test(l))
      assert.isAbove(
        at,
        lines.findIndex((l) => l.startsWith("── events")),
        "in the pane"
      )
      term.type("quit")
    } finally {
      term.close()
    }
  }, 120_000)
})
