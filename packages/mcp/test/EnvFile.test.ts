/**
 * VS Code's `envFile` as a start step: server-everything's `get-env` shows what the server got.
 * The file is read at each start (not before), the server's own `env` wins over it, and a file
 * that cannot be read (missing, a directory, a FIFO that would block) is a start failure naming it.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as EnvFile from "../src/internal/envFile.ts"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import { everythingBin, fastPolicy, textOf } from "./helpers.ts"

const folder = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-envfile-"))

const open = (envFile: string, env: Record<string, string> = {}) =>
  Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void)).pipe(
    Effect.flatMap((scope) =>
      McpToolset.make({
        name: "local",
        spec: McpSpec.Stdio.make({ command: process.execPath, args: [everythingBin, "stdio"], env, envFile }),
        policy: fastPolicy({ restart: "never" })
      }).pipe(Scope.provide(scope))
    )
  )

const serverEnv = (toolset: McpToolset.McpToolset) =>
  Effect.map(toolset.callTool("get-env", {}), (result) => JSON.parse(textOf(result)))

describe("envFile", () => {
  it("parses dotenv lines: comments, export, quotes", () => {
    assert.deepStrictEqual(
      EnvFile.parse("# a comment\nexport A=1\nB = \"two words\"\nC='x=y'\nD=plain # trailing\n\nnot a line\n"),
      { A: "1", B: "two words", C: "x=y", D: "plain" }
    )
  })

  it.live("is read at each start, under the server's own env", () =>
    Effect.gen(function* () {
      const file = NodePath.join(folder(), ".env")
      NodeFs.writeFileSync(file, "API_KEY=sk-from-file-1\nMODE=file\n")
      const toolset = yield* open(file, { MODE: "own" })
      yield* toolset.start
      const first = yield* serverEnv(toolset)
      assert.strictEqual(first.API_KEY, "sk-from-file-1")
      assert.strictEqual(first.MODE, "own")
      NodeFs.writeFileSync(file, "API_KEY=sk-from-file-2\n")
      yield* toolset.restart
      assert.strictEqual((yield* serverEnv(toolset)).API_KEY, "sk-from-file-2")
    })
  )

  it.live("its values are masked in the errors of the server that got them (its stderr tail included)", () =>
    Effect.gen(function* () {
      const file = NodePath.join(folder(), ".env")
      NodeFs.writeFileSync(file, "API_KEY=sk-from-file-1\n")
      const toolset = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void)).pipe(
        Effect.flatMap((scope) =>
          McpToolset.make({
            name: "leaky",
            spec: McpSpec.Stdio.make({
              command: process.execPath,
              args: ["-e", 'console.error("cannot start with key " + process.env.API_KEY); process.exit(3)'],
              envFile: file
            }),
            policy: fastPolicy({ restart: "never" })
          }).pipe(Scope.provide(scope))
        )
      )
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      assert.include(error.message, "cannot start with key ***")
      const shown = [error.message, JSON.stringify(error), JSON.stringify(yield* toolset.state)].join("\n")
      assert.notInclude(shown, "sk-from-file-1")
    })
  )

  it.live("a file that cannot be read is a ServerUnavailable naming it; a FIFO is refused, not waited on", () =>
    Effect.gen(function* () {
      const dir = folder()
      const fifo = NodePath.join(dir, "fifo.env")
      NodeChildProcess.execFileSync("mkfifo", [fifo])
      const cases = [
        [NodePath.join(dir, "missing.env"), "no such file"],
        [dir, "not a regular file (a directory)"],
        [fifo, "not a regular file (a FIFO)"]
      ] as const
      for (const [path, reason] of cases) {
        const toolset = yield* open(path)
        const error = yield* Effect.flip(toolset.start)
        assert.strictEqual(error._tag, "ServerUnavailable")
        assert.strictEqual(error.message, `local: cannot read the env file ${path}: ${reason}`)
      }
    })
  )

  it.live("a NUL byte in the file fails the start naming its line and key, never quoting a value", () =>
    Effect.gen(function* () {
      const path = NodePath.join(folder(), "nul.env")
      NodeFs.writeFileSync(path, "# keys\nOTHER=1\nAPI_KEY=sk-secret-abcdef123456\0x\n")
      const error = yield* Effect.flip((yield* open(path)).start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      assert.strictEqual(
        error.message,
        `local: the env file ${path}: line 3 (the value of API_KEY) has a NUL byte, which no environment value can hold`
      )
      // /proc/self/environ is a regular file to procfs, its variables NUL-separated: ours, not to be shown.
      const environ = yield* Effect.flip((yield* open("/proc/self/environ")).start)
      assert.include(environ.message, "line 1 (the value of ")
      assert.notInclude(environ.message, process.env.PATH ?? "/usr/bin")
    })
  )
})
