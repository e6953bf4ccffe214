/**
 * `toolvisor auth` as a user meets it: status says a login is needed and which command gives it;
 * `auth` prints the URL, the "browser" (plain HTTP against oidc-provider) approves, and the
 * toolset connects; `--logout` forgets the login. No token appears in any output.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as OAuthServer from "../../../packages/mcp/test/OAuthServer.ts"
import { cliArgs, root, runCli, writeConfig, yaml } from "./helpers.ts"

/** Runs `auth` and plays the browser as soon as it prints the login URL. */
const authWithBrowser = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.promise(
    () =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
        const child = NodeChildProcess.spawn(process.execPath, cliArgs(args), {
          cwd: root,
          env: { ...process.env, ...env },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stdout = ""
        let stderr = ""
        let approved = false
        child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
        child.stderr.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8")
          const url = /^\s+(http\S+)$/m.exec(stderr)?.[1]
          if (url !== undefined && !approved) {
            approved = true
            OAuthServer.approve(new URL(url)).catch(reject)
          }
        })
        child.on("close", (code) => resolve({ code, stdout, stderr }))
      })
  )

const stateDir = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-cli-oauth-"))),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

describe("toolvisor auth", () => {
  it.live(
    "status shows the login command on its config, which works as written; auth logs in and connects; --logout forgets it; no token is printed",
    () =>
      Effect.gen(function* () {
        const server = yield* OAuthServer.make({ callbackPort: 1 })
        const dir = yield* stateDir
        const env = { TOOLVISOR_STATE_DIR: dir }
        const config = writeConfig(
          yaml([["      - type: mcp", "        name: tracker", "        remote:", `          url: ${server.mcpUrl}`]])
        )
        const status = () =>
          Effect.promise(() => runCli(["status", config, "--json", "--timeout", "20s"], { env })).pipe(
            Effect.map((done) => JSON.parse(done.stdout)[0])
          )

        const before = yield* status()
        // A first start that fails leaves the toolset Stopped, with the error that stopped it.
        assert.strictEqual(before.state, "Stopped")
        assert.strictEqual(before.error.tag, "AuthRequired")
        assert.strictEqual(before.error.action, `toolvisor auth ${config} tracker`)
        // The table's hint names the config: run as written, it logs in to this file's toolset.
        const table = yield* Effect.promise(() => runCli(["status", config, "--timeout", "20s"], { env }))
        const hint = /\(run: toolvisor (auth \S+ tracker)\)/.exec(table.stdout)?.[1]
        assert.strictEqual(hint, `auth ${config} tracker`, table.stdout)

        const login = yield* authWithBrowser([...(hint ?? "").split(" "), "--no-browser"], env)
        assert.strictEqual(login.code, 0, login.stderr)
        assert.include(login.stdout, "tracker: logged in; Ready, 1 tools")
        const [file] = NodeFs.readdirSync(NodePath.join(dir, "oauth"))
        const path = NodePath.join(dir, "oauth", file!)
        assert.strictEqual(NodeFs.statSync(path).mode & 0o777, 0o600)
        const tokens = JSON.parse(NodeFs.readFileSync(path, "utf8")).tokens

        const after = yield* status()
        assert.strictEqual(after.state, "Ready")

        const logout = yield* Effect.promise(() => runCli(["auth", "--logout", config, "tracker"], { env }))
        assert.strictEqual(logout.code, 0, logout.stderr)
        assert.include(logout.stdout, "tracker: logged out")
        assert.strictEqual((yield* status()).error.tag, "AuthRequired")

        const shown = [login.stdout, login.stderr, logout.stdout, logout.stderr, JSON.stringify([before, after])]
        for (const text of shown) {
          assert.notInclude(text, tokens.access_token)
          assert.notInclude(text, tokens.refresh_token)
        }
      })
  )

  it.live("auth refuses a toolset that is not a remote MCP server, with exit 2", () =>
    Effect.gen(function* () {
      const config = writeConfig(yaml([["      - type: mcp", "        name: local", "        command: some-server"]]))
      const done = yield* Effect.promise(() => runCli(["auth", config, "local"]))
      assert.strictEqual(done.code, 2)
      assert.include(done.stderr, "local is not a remote MCP server")
    })
  )
})
