/**
 * The two example programs, run as a user runs them (a Node process over a YAML config) with
 * their scripted models: each must answer with the real echo result, warn once about a toolset
 * whose binary is missing, exit 0, and leave no server behind.
 */
import * as ChildProcess from "node:child_process"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Everything from "../../../test/support/Everything.ts"
import { marked, tempDir } from "./helpers.ts"

const examples = NodePath.resolve(import.meta.dirname, "../../../examples")

/** A config with server-everything (marked, so its processes can be found) and a missing binary. */
const writeConfig = (mark: string) => {
  const dir = tempDir("example")
  return Everything.writeConfig(dir, {
    entry: [`env: { TOOLVISOR_EXAMPLE_MARK: ${JSON.stringify(mark)} }`],
    toolsets: [
      "- type: mcp",
      "  name: missing",
      "  command: env",
      `  args: [${JSON.stringify(NodePath.join(dir, "not-installed"))}]`,
      "  lifecycle: { profile: best-effort }"
    ]
  })
}

const run = (example: string, config: string) =>
  Effect.callback<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = ChildProcess.spawn(
      process.execPath,
      ["--conditions=@toolvisor/source", NodePath.join(examples, example), config],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("examples", () => {
  for (const [example, greeting] of [
    ["agent-effect.ts", "hello from effect/ai"],
    ["agent-ai-sdk.ts", "hello from the AI SDK"]
  ] as const) {
    it.live(`${example} answers with the real tool result, warns once, and leaves no server`, () =>
      Effect.gen(function* () {
        const mark = `${example}-${process.pid}-${Date.now()}`
        const out = yield* run(example, writeConfig(mark))
        assert.strictEqual(out.code, 0, out.stderr)
        assert.include(out.stdout, `The tool said: Echo: ${greeting}`)
        assert.strictEqual(out.stdout.split("\n").filter((line) => line.startsWith("⚠")).length, 1)
        assert.deepStrictEqual(marked("TOOLVISOR_EXAMPLE_MARK", mark), [])
      })
    )
  }
})
