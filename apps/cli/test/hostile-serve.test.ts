/**
 * `toolvisor serve --http` in front of hostile servers (`test/fixtures/hostile`), seen by an MCP
 * client: every call gets a JSON-RPC answer, promptly, however big or deep the server's answer or
 * the arguments; and no server sees the gateway's own token in its environment.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { cliArgs, everything, isAlive, root, until, writeConfig, yaml } from "./helpers.ts"

const hostile = (script: string) => NodePath.join(root, "test/fixtures/hostile", script)

const entry = (name: string, args: ReadonlyArray<string>) => [
  "      - type: mcp",
  `        name: ${name}`,
  `        command: "${process.execPath}"`,
  `        args: ${JSON.stringify(args)}`,
  "        lifecycle: { call_timeout: 60s }"
]

const token = "gateway-token-0123456789"

/** `serve --http 0` on the config, its URL once it listens, and a client connected to it with the token. */
const serve = async (config: string) => {
  const child = NodeChildProcess.spawn(process.execPath, cliArgs(["serve", config, "--http", "0"]), {
    cwd: root,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, TOOLVISOR_HTTP_TOKEN: token }
  })
  let stderr = ""
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  await until(() => /serving MCP at (\S+)/.test(stderr), 60_000)
  const url = /serving MCP at (\S+)/.exec(stderr)?.[1] ?? ""
  const client = new Client({ name: "hostile-test", version: "1.0.0" })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
  )
  const close = async () => {
    await client.close()
    child.kill("SIGTERM")
    await new Promise((resolve) => (child.exitCode === null ? child.once("exit", resolve) : resolve(undefined)))
    assert.isFalse(child.pid !== undefined && isAlive(child.pid))
  }
  return { client, close, stderr: () => stderr }
}

/** What a call got, as the JSON-RPC answer's text, and how long it took. */
const answer = async (client: Client, name: string, args: { readonly [key: string]: unknown } = {}) => {
  const start = Date.now()
  const text = await client.callTool({ name, arguments: args }).then(
    (result) => JSON.stringify(result),
    (error: unknown) => (error instanceof Error ? error.message : String(error))
  )
  return { text, millis: Date.now() - start }
}

/** Calls `echo` until the toolset is Ready and answers it. */
const ready = (client: Client, name: string) =>
  until(async () => (await answer(client, name, { message: "up" })).text.includes("up"), 60_000)

describe("toolvisor serve --http, in front of hostile servers", () => {
  it("answers a call whose result is 100 000 deep or 20 MiB long at once, and the session goes on", async () => {
    const config = writeConfig(
      yaml([entry("deep", [hostile("deep-answer.mjs")]), entry("huge", [hostile("huge-answer.mjs")])])
    )
    const { client, close } = await serve(config)
    try {
      await ready(client, "deep_echo")
      await ready(client, "huge_echo")
      const deep = await answer(client, "deep_deep")
      assert.isBelow(deep.millis, 10_000)
      assert.include(deep.text, "nested deeper than 64 levels")
      assert.include(deep.text, "the call ran")
      const huge = await answer(client, "huge_huge")
      assert.isBelow(huge.millis, 10_000)
      // Failed as it passed the limit, before the rest of its 20 MiB arrived.
      assert.match(huge.text, /more than 1\d\.\d MiB, over the limit of 16 MiB/)
      assert.include((await answer(client, "deep_echo", { message: "still here" })).text, "still here")
    } finally {
      await close()
    }
  })

  it("no server inherits the gateway's token: server-everything's get-env does not show it", async () => {
    const config = writeConfig(yaml([entry("everything", [everything, "stdio"])]))
    const { client, close } = await serve(config)
    try {
      await until(async () => (await answer(client, "everything_get-env")).text.includes("PATH"), 60_000)
      const env = (await answer(client, "everything_get-env")).text
      assert.notInclude(env, token)
      assert.notInclude(env, "TOOLVISOR_HTTP_TOKEN")
    } finally {
      await close()
    }
  })
})
