// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
/**
 * Config values are what the README says. Every field documented as interpolated is expanded —
 * `oauth.clientSecret` too, which reaches a real authorization server. A variable that is not set
 * is the environment's problem, not the file's: `validate` warns, naming the toolset and the
 * variable, and exits 0 (a file problem still exits 2); `status` and `serve` fail only the toolset
 * that needs it, unless that toolset is required.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as Effect from "effect/Effect"
import * as OAuthServer from "../../../test/support/OAuthServer.ts"
import { cliArgs, mcpEntry, root, runCli, until, writeConfig, yaml } from "./helpers.ts"

interface Status {
  readonly toolset: string
  readonly state: string
  readonly error: { readonly tag: string; readonly message: string } | null
}

const status = (config: string, env: NodeJS.ProcessEnv) =>
  Effect.promise(() => runCli(["status", config, "--json", "--timeout", "30s"], { env })).pipe(
    Effect.map((done) => ({ ...done, board: JSON.parse(done.stdout) as ReadonlyArray<Status> }))
  )

const stateDir = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-cli-vars-"))),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

/** Unset in the CLI's environment, whatever the machine running the tests has. */
const unset = { MACHINE_SECRET: undefined, MACHINE_ID: undefined, API_TOKEN: undefined }

describe("oauth is interpolated like every other field", () => {
  it.live("oauth.clientId and clientSecret from the environment reach the server: client credentials, Ready", () =>
    Effect.gen(function* () {
      const server = yield* OAuthServer.make({ callbackPort: 1 })
      const dir = yield* stateDir
      const config = writeConfig(
        yaml([
          [
            "      - type: mcp",
            "        name: machine",
            "        remote:",
            `          url: ${server.mcpUrl}`,
            '          oauth: { clientId: "${MACHINE_ID}", clientSecret: "${MACHINE_SECRET}" }'
          ]
        ])
      )
      const env = {
        TOOLVISOR_STATE_DIR: dir,
        MACHINE_ID: server.machine.clientId,
        MACHINE_SECRET: server.machine.clientSecret
      }
      const result = yield* status(config, env)
      assert.strictEqual(result.board[0]?.state, "Ready", result.stdout + result.stderr)
      assert.strictEqual(server.grants("client_credentials"), 1)
      assert.notInclude(result.stdout + result.stderr, server.machine.clientSecret)

      // Unset, it is named, with the toolset that needs it; the file itself is valid.
      const validate = yield* Effect.promise(() =>
        runCli(["validate", config], { env: { ...unset, MACHINE_ID: server.machine.clientId } })
      )
      assert.strictEqual(validate.code, 0, validate.stderr)
      assert.match(
        validate.stdout,
        /warning agents\.root\.toolsets\[0\]\.remote\.oauth\.clientSecret: toolset machine will not start: Environment variable MACHINE_SECRET is not set/
      )
      // auth refuses too, rather than log in with the reference as written.
      const auth = yield* Effect.promise(() =>
        runCli(["auth", "machine", config, "--no-browser"], {
          env: { ...unset, TOOLVISOR_STATE_DIR: dir, MACHINE_ID: server.machine.clientId }
        })
      )
      assert.strictEqual(auth.code, 1, auth.stdout + auth.stderr)
      assert.include(auth.stderr, "machine: cannot start: Environment variable MACHINE_SECRET is not set")
      assert.strictEqual(server.grants("client_credentials"), 1, "a literal ${MACHINE_SECRET} was sent")
    })
  )
})

describe("an unset variable is the environment's problem, not the file's", () => {
  const config = () =>
    writeConfig(
      yaml([
        mcpEntry("fine"),
        mcpEntry("needy", ['        env: { API_TOKEN: "${API_TOKEN}" }', "        lifecycle: { restart: never }"])
      ])
    )

  it("validate warns naming the toolset and the variable, and exits 0; a malformed reference still exits 2", async () => {
    const valid = await runCli(["validate", config()], { env: unset })
    assert.strictEqual(valid.code, 0, valid.stdout + valid.stderr)
    assert.include(
      valid.stdout,
      "warning agents.root.toolsets[1].env.API_TOKEN: toolset needy will not start: Environment variable API_TOKEN is not set (write ${API_TOKEN:-default} for a default)"
    )
    assert.include(valid.stdout, "valid: 1 agent(s), 2 toolset(s), 1 warning(s)")

    const json = await runCli(["validate", config(), "--json"], { env: unset })
    assert.strictEqual(json.code, 0, json.stderr)
    assert.deepStrictEqual(
      JSON.parse(json.stdout).warnings.map((w: { readonly path: string }) => w.path),
      ["agents.root.toolsets[1].env.API_TOKEN"]
    )

    const malformed = writeConfig(yaml([mcpEntry("bad", ['        env: { API_TOKEN: "${1BAD}" }'])]))
    const invalid = await runCli(["validate", malformed], { env: unset })
    assert.strictEqual(invalid.code, 2, invalid.stdout + invalid.stderr)
    assert.include(
      invalid.stdout,
      "agents.root.toolsets[0].env.API_TOKEN: The reference at character 1 of the value (not shown: its name says it is a secret) is not a variable reference"
    )
  })

  it.live("status fails only the toolset that needs it, naming the variable; a required one fails the start", () =>
    Effect.gen(function* () {
      const optional = yield* status(config(), unset)
      assert.strictEqual(optional.code, 0, optional.stdout + optional.stderr)
      const byName = new Map(optional.board.map((s) => [s.toolset, s]))
      assert.strictEqual(byName.get("fine")?.state, "Ready")
      assert.strictEqual(byName.get("needy")?.state, "Failed")
      assert.strictEqual(byName.get("needy")?.error?.tag, "NotStarted")
      assert.include(
        byName.get("needy")?.error?.message,
        "needy: cannot start: Environment variable API_TOKEN is not set (write ${API_TOKEN:-default} for a default); needed at agents.root.toolsets[1].env.API_TOKEN"
      )

      const required = writeConfig(
        yaml([
          mcpEntry("fine"),
          mcpEntry("needy", ['        env: { API_TOKEN: "${API_TOKEN}" }', "        lifecycle: { required: true }"])
        ])
      )
      const failed = yield* status(required, unset)
      assert.strictEqual(failed.code, 1, failed.stdout + failed.stderr)
      assert.include(failed.stderr, "needy")
      assert.include(failed.stderr, "API_TOKEN is not set")
    })
  )

  it("serve serves the other toolsets; the one that needs the variable is missing from the catalog", async () => {
    const client = new Client({ name: "host", version: "1" })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", config()]),
      cwd: root,
      env: Object.fromEntries(
        Object.entries(process.env).flatMap(([key, value]) =>
          value === undefined || key in unset ? [] : [[key, value]]
        )
      ),
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    await client.connect(transport)
    try {
      let names: ReadonlyArray<string> = []
      await until(async () => {
        names = (await client.listTools()).tools.map((tool) => tool.name)
        return names.includes("fine_echo")
      }, 60_000).catch(() => assert.fail(`tools: ${names.join(", ")}\nstderr:\n${stderr}`))
      assert.isFalse(
        names.some((name) => name.startsWith("needy_")),
        names.join(", ")
      )
      const result = await client.callTool({ name: "fine_echo", arguments: { message: "served" } })
      assert.include(JSON.stringify(result.content), "served")
      assert.include(stderr, "API_TOKEN is not set")
    } finally {
      await client.close()
    }
  })
})
