/**
 * A client nobody here wrote: the official MCP Inspector's CLI (`inspector --cli`) against
 * `toolvisor serve`, over streamable HTTP and over stdio, each invocation a fresh client session
 * that initializes, runs one method and prints its answer as JSON. The fixture server (`fx`) and
 * server-everything (`ev`) behind it: tools, prompts (prefixed like tools) and resources.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { cliArgs, everythingEntry, isAlive, mcpEntry, root, writeConfig, yaml } from "./helpers.ts"

const inspectorBin = NodePath.join(root, "node_modules/.bin/inspector")

/** Runs one inspector CLI method; its stdout is the answer as JSON. */
const inspect = (target: ReadonlyArray<string>, method: ReadonlyArray<string>) => {
  const result = NodeChildProcess.spawnSync(process.execPath, [inspectorBin, "--cli", ...target, ...method], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, PATH: `${NodePath.dirname(process.execPath)}:${process.env.PATH}` }
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

const listTools = ["--method", "tools/list"]
const callEcho = ["--method", "tools/call", "--tool-name", "fx_echo", "--tool-arg", "message=hello"]

const config = () => writeConfig(yaml([mcpEntry("fx"), everythingEntry()]))

/** prompts/list and resources/list: both toolsets' prompts under their prefixes, everything's resources by their URIs. */
const listsPromptsAndResources = (target: ReadonlyArray<string>) => {
  const prompts = inspect(target, ["--method", "prompts/list"])
  assert.strictEqual(prompts.code, 0, prompts.stderr)
  const names = JSON.parse(prompts.stdout).prompts.map((p: { readonly name: string }) => p.name)
  assert.includeMembers(names, ["fx_greet", "ev_args-prompt"])
  const resources = inspect(target, ["--method", "resources/list"])
  assert.strictEqual(resources.code, 0, resources.stderr)
  const uris = JSON.parse(resources.stdout).resources.map((r: { readonly uri: string }) => r.uri)
  assert.isAbove(uris.length, 0)
  assert.isTrue(
    uris.every((uri: string) => uri.startsWith("demo://")),
    uris.join(", ")
  )
}

describe("the MCP Inspector CLI against toolvisor serve", () => {
  it("over streamable HTTP: lists the tools with their schemas and calls one; lists prompts and resources", async () => {
    const serve = NodeChildProcess.spawn(process.execPath, cliArgs(["serve", config(), "--http", "0"]), {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stderr = ""
    serve.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    try {
      const deadline = Date.now() + 30_000
      while (!/serving MCP at (\S+)/.test(stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      const url = /serving MCP at (\S+)/.exec(stderr)?.[1] ?? ""
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/, stderr)
      // The first session's tools/list waits for the toolset to settle: no retry needed.
      const listing = inspect([url], listTools)
      assert.strictEqual(listing.code, 0, listing.stderr)
      const { tools } = JSON.parse(listing.stdout)
      const echo = tools.find((t: { readonly name: string }) => t.name === "fx_echo")
      assert.deepInclude(echo.inputSchema, { type: "object" })
      assert.deepInclude(echo.annotations, { readOnlyHint: true })
      const call = inspect([url], callEcho)
      assert.strictEqual(call.code, 0, call.stderr)
      assert.deepStrictEqual(JSON.parse(call.stdout).content, [{ type: "text", text: "hello" }])
      listsPromptsAndResources([url])
    } finally {
      serve.kill("SIGTERM")
      await new Promise((resolve) => serve.on("exit", resolve))
      assert.isFalse(serve.pid !== undefined && isAlive(serve.pid))
    }
  })

  it("over stdio: the inspector starts serve and, on the first try, lists the tools and calls one, the prompts and the resources", () => {
    const target = [process.execPath, ...cliArgs(["serve", config()])]
    // Each invocation is a fresh gateway whose toolset is still starting when the client lists.
    const listing = inspect(target, listTools)
    assert.strictEqual(listing.code, 0, listing.stderr)
    const { tools } = JSON.parse(listing.stdout)
    const echo = tools.find((t: { readonly name: string }) => t.name === "fx_echo")
    assert.deepInclude(echo.inputSchema, { type: "object" })
    const call = inspect(target, callEcho)
    assert.strictEqual(call.code, 0, call.stderr)
    assert.deepStrictEqual(JSON.parse(call.stdout).content, [{ type: "text", text: "hello" }])
    // Fresh gateways again: prompts/list and resources/list wait for the toolsets as tools/list does.
    listsPromptsAndResources(target)
  })
})
