/**
 * Claude Code's `headersHelper` as a connect step: it runs at each connect of a remote toolset
 * (server-everything over streamable HTTP, behind a loopback proxy that records the headers it
 * receives), not before, and a helper that fails, prints too much or is cut off by a stop is a
 * connect failure that names the toolset and the command, with its stderr masked and no process left.
 */
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Redaction, ServerProcess } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as HeadersHelper from "../src/internal/headersHelper.ts"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import { awaitListening, everythingBin, fastPolicy, freePort, until } from "./helpers.ts"

/** server-everything over streamable HTTP behind a proxy that keeps the `x-token` of each request. */
const recordedServer = Effect.gen(function* () {
  const port = yield* freePort
  yield* ServerProcess.spawn("everything", {
    command: process.execPath,
    args: [everythingBin, "streamableHttp"],
    env: { PORT: String(port) }
  })
  yield* awaitListening(port)
  const tokens: Array<string> = []
  const proxy = yield* Effect.acquireRelease(
    Effect.callback<NodeHttp.Server>((resume) => {
      const server = NodeHttp.createServer((request, response) => {
        tokens.push(String(request.headers["x-token"]))
        const upstream = NodeHttp.request(
          { host: "127.0.0.1", port, path: request.url, method: request.method, headers: request.headers },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(response)
          }
        )
        upstream.on("error", () => response.destroy())
        request.pipe(upstream)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
  const address = proxy.address()
  const proxyPort = typeof address === "object" && address !== null ? address.port : 0
  return { url: `http://127.0.0.1:${proxyPort}/mcp`, tokens }
})

const folder = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-helper-"))

/** A toolset in a scope of its own, closed at the end of the test. */
const open = (spec: McpSpec.Http) =>
  Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void)).pipe(
    Effect.flatMap((scope) =>
      McpToolset.make({ name: "api", spec, policy: fastPolicy({ restart: "never" }) }).pipe(Scope.provide(scope))
    )
  )

const failureOf = (error: unknown) => {
  assert.instanceOf(error, Error)
  const cause = error instanceof Error ? error.cause : undefined
  assert.instanceOf(cause, HeadersHelper.HeadersHelperFailed)
  return cause instanceof HeadersHelper.HeadersHelperFailed ? cause : assert.fail("no HeadersHelperFailed")
}

describe("headersHelper", () => {
  it.live("runs at each connect, in the config's folder, and its headers (fresh each time) reach the server", () =>
    Effect.gen(function* () {
      const server = yield* recordedServer
      const cwd = folder()
      // Counts its runs in its working folder and hands out a new token each time.
      const command = `echo run >> runs; printf '{"X-Token": "tok-%s"}' "$(wc -l < runs | tr -d ' ')"`
      const toolset = yield* open(McpSpec.Http.make({ url: server.url, headersHelper: { command, cwd } }))
      assert.isFalse(NodeFs.existsSync(NodePath.join(cwd, "runs")), "nothing runs before a connect")

      yield* toolset.start
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(cwd, "runs"), "utf8"), "run\n")
      assert.deepStrictEqual([...new Set(server.tokens)], ["tok-1"])

      yield* toolset.restart
      assert.strictEqual(NodeFs.readFileSync(NodePath.join(cwd, "runs"), "utf8"), "run\nrun\n")
      assert.strictEqual(server.tokens.at(-1), "tok-2")
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.notInclude(JSON.stringify(status), "tok-")
    })
  )

  it.live("a failing helper is a ServerUnavailable naming the toolset, command, exit code and masked stderr", () =>
    Effect.gen(function* () {
      const server = yield* recordedServer
      // The secrets come from files, as a real helper's come from a vault: the command itself is public.
      const cwd = folder()
      NodeFs.writeFileSync(NodePath.join(cwd, "out"), '{"X-Token": "printed-s3cret"}')
      NodeFs.writeFileSync(NodePath.join(cwd, "err"), "using printed-s3cret, token=env-s3cret\n")
      const command = "cat out; cat err >&2; exit 3"
      const toolset = yield* open(McpSpec.Http.make({ url: server.url, headersHelper: { command, cwd } }))
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      const failure = failureOf(error)
      assert.strictEqual(failure.toolset, "api")
      assert.strictEqual(failure.exitCode, 3)
      assert.strictEqual(failure.command, command)
      assert.deepStrictEqual(failure.stderr, ["using ***, token=***"])
      assert.include(error.message, "api: headersHelper `cat out; cat err >&2; exit 3`")
      assert.include(error.message, "exited with code 3: using ***, token=***")
      const shown = [error.message, JSON.stringify(yield* toolset.state), JSON.stringify(failure)].join("\n")
      assert.notInclude(shown, "printed-s3cret")
      assert.notInclude(shown, "env-s3cret")
      assert.deepStrictEqual(server.tokens, [], "the server was never asked without the helper's headers")
    })
  )

  it.live("its header values are masked in the errors of the connection, even when the server echoes them", () =>
    Effect.gen(function* () {
      // A server that refuses every request and quotes the header it got.
      const echo = yield* Effect.acquireRelease(
        Effect.callback<NodeHttp.Server>((resume) => {
          const server = NodeHttp.createServer((request, response) => {
            request.resume()
            response.writeHead(400).end(`bad token ${String(request.headers["x-token"])}`)
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const address = echo.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const cwd = folder()
      NodeFs.writeFileSync(NodePath.join(cwd, "headers.json"), '{"X-Token": "vault-s3cret-42"}')
      const toolset = yield* open(
        McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp`, headersHelper: { command: "cat headers.json", cwd } })
      )
      const error = yield* Effect.flip(toolset.start)
      assert.include(error.message, "bad token ***")
      const shown = [error.message, JSON.stringify(error), JSON.stringify(yield* toolset.state)].join("\n")
      assert.notInclude(shown, "vault-s3cret-42")
    })
  )

  it.live("a helper's credentials are masked bare too: a Bearer token, a Basic password, a cookie's value", () =>
    Effect.gen(function* () {
      // A server that refuses every request and quotes the credentials it got, taken apart.
      const echo = yield* Effect.acquireRelease(
        Effect.callback<NodeHttp.Server>((resume) => {
          const server = NodeHttp.createServer((request, response) => {
            request.resume()
            const [scheme = "", credential = ""] = String(request.headers.authorization).split(" ")
            const given = scheme === "Basic" ? Buffer.from(credential, "base64").toString("utf8") : credential
            const password = given.split(":")[1] ?? ""
            const cookie = String(request.headers.cookie).split("=")[1] ?? ""
            response.writeHead(403).end(`refused credential ${given} password ${password} cookie ${cookie}`)
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const address = echo.address()
      const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/mcp`
      const basic = Buffer.from("svc-user:S3cretPassw0rd").toString("base64")
      for (const [headers, secrets] of [
        [{ Authorization: "Bearer helperTok4Kx9Pq2Zr7" }, ["helperTok4Kx9Pq2Zr7"]],
        [{ Authorization: `Basic ${basic}`, Cookie: "session=cookieval99" }, ["S3cretPassw0rd", "cookieval99"]]
      ] as const) {
        const cwd = folder()
        NodeFs.writeFileSync(NodePath.join(cwd, "headers.json"), JSON.stringify(headers))
        const redactor = Redaction.make()
        const toolset = yield* open(
          McpSpec.Http.make({ url, headersHelper: { command: "cat headers.json", cwd } })
        ).pipe(Effect.provideService(Redaction.Current, redactor))
        const error = yield* Effect.flip(toolset.start)
        assert.include(error.message, "refused credential")
        const shown = [error.message, JSON.stringify(error), JSON.stringify(yield* toolset.state)].join("\n")
        // What the registry's redactor learnt masks the same values in every other output (a tool result).
        const result = redactor.values(`your token: ${secrets.join(" ")}`)
        for (const secret of secrets) {
          assert.notInclude(shown, secret)
          assert.notInclude(result, secret)
        }
      }
    })
  )

  it.live("a helper runs with the environment a server gets: none of Toolvisor's own variables", () =>
    Effect.gen(function* () {
      const saved = process.env.TOOLVISOR_HTTP_TOKEN
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (saved === undefined) delete process.env.TOOLVISOR_HTTP_TOKEN
          else process.env.TOOLVISOR_HTTP_TOKEN = saved
        })
      )
      process.env.TOOLVISOR_HTTP_TOKEN = "HttpTok3Rv8Ws1Xy6Zq"
      const cwd = folder()
      yield* HeadersHelper.run("api", { command: `env > seen; echo '{"X-Seen": "1"}'`, cwd })
      const seen = NodeFs.readFileSync(NodePath.join(cwd, "seen"), "utf8")
      assert.notInclude(seen, "HttpTok3Rv8Ws1Xy6Zq")
      const own = seen.split("\n").filter((line) => line.startsWith("TOOLVISOR_"))
      assert.deepStrictEqual(own.map((line) => line.split("=")[0]).sort(), ["TOOLVISOR_OWNER", "TOOLVISOR_SERVER"])
      assert.include(seen, `PATH=${process.env.PATH}`)
      assert.include(seen, `CLAUDE_PLUGIN_ROOT=${process.env.CLAUDE_PLUGIN_ROOT ?? cwd}`)
    })
  )

  it.live("a helper command's literal secrets are masked wherever the command is quoted", () =>
    Effect.gen(function* () {
      const command = "./nohelper.sh --client-secret s3cr3tValue99 --token ghp_Abcdefghijklmnop1234"
      const failure = yield* Effect.flip(HeadersHelper.run("api", { command, cwd: folder() }))
      assert.strictEqual(failure.command, "./nohelper.sh --client-secret *** --token ***")
      const shown = [failure.message, JSON.stringify(failure), JSON.stringify(HeadersHelper.unavailable(failure))]
      for (const secret of ["s3cr3tValue99", "ghp_Abcdefghijklmnop1234"]) assert.notInclude(shown.join("\n"), secret)
    })
  )

  it.live("a helper's stderr cut at its start shows no end of a secret the cut fell in", () =>
    Effect.gen(function* () {
      const cwd = folder()
      NodeFs.writeFileSync(NodePath.join(cwd, "out"), '{"X-Token": "vaultS3cretValue42"}')
      // Only the last 2 KiB of stderr are kept: the cut falls inside the secret, 6 bytes before its end.
      NodeFs.writeFileSync(NodePath.join(cwd, "err"), `using vaultS3cretValue42\n${"b".repeat(2040)}\n`)
      const failure = yield* Effect.flip(HeadersHelper.run("api", { command: "cat out; cat err >&2; exit 3", cwd }))
      assert.notInclude(failure.stderr.join("\n"), "alue42")
      assert.notInclude(failure.message, "alue42")
    })
  )

  it.live("a helper that prints no JSON object of strings, or too much, is refused the same way", () =>
    Effect.gen(function* () {
      const server = yield* recordedServer
      const reasonOf = (command: string) =>
        open(McpSpec.Http.make({ url: server.url, headersHelper: { command, cwd: folder() } })).pipe(
          Effect.flatMap((toolset) => Effect.flip(toolset.start)),
          Effect.map((error) => failureOf(error).reason)
        )
      const notHeaders = "must print a JSON object of header names to string values"
      assert.strictEqual(yield* reasonOf(`echo '[1]'`), notHeaders)
      assert.strictEqual(yield* reasonOf(`echo '{"X-Token": 42}'`), notHeaders)
      assert.strictEqual(yield* reasonOf("head -c 2000000 /dev/zero"), "printed more than 64 KiB")
    })
  )

  it.live("a helper that leaves a process behind holding its output is done when it exits, and the process goes", () =>
    Effect.gen(function* () {
      const server = yield* recordedServer
      const cwd = folder()
      const command = `sleep 300 & echo $! > leftover; printf '{"X-Token": "tok-bg"}'`
      const toolset = yield* open(McpSpec.Http.make({ url: server.url, headersHelper: { command, cwd } }))
      const started = Date.now()
      yield* toolset.start
      assert.isBelow(Date.now() - started, 8_000, "not held until the helper's 10 s deadline")
      assert.strictEqual(server.tokens.at(-1), "tok-bg")
      const leftover = Number(NodeFs.readFileSync(NodePath.join(cwd, "leftover"), "utf8"))
      while (Procfs.isAlive(leftover)) yield* Effect.sleep("20 millis")
    }).pipe(Effect.timeout("20 seconds"))
  )

  it.live("a stop during a hanging helper kills its whole process group at once", () =>
    Effect.gen(function* () {
      const server = yield* recordedServer
      const cwd = folder()
      // The helper leaves a grandchild that would outlive a kill of the shell alone.
      const command = "sleep 300 & echo $! > grandchild; wait"
      const toolset = yield* open(McpSpec.Http.make({ url: server.url, headersHelper: { command, cwd } }))
      const starting = yield* Effect.forkChild(toolset.start)
      yield* until(toolset, (s) => s.state === "Starting")
      const pidFile = NodePath.join(cwd, "grandchild")
      while (!NodeFs.existsSync(pidFile) || NodeFs.readFileSync(pidFile, "utf8").trim() === "") {
        yield* Effect.sleep("20 millis")
      }
      const grandchild = Number(NodeFs.readFileSync(pidFile, "utf8"))
      assert.isTrue(Procfs.isAlive(grandchild))
      yield* toolset.stop
      yield* Fiber.await(starting)
      while (Procfs.isAlive(grandchild)) yield* Effect.sleep("20 millis")
      assert.isFalse(Procfs.isAlive(grandchild))
    }).pipe(Effect.timeout("20 seconds"))
  )
})
