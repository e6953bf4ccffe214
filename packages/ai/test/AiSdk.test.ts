import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import { generateText, stepCountIs } from "ai"
import * as Effect from "effect/Effect"
import { config, open } from "../../../test/support/Registry.ts"
import * as AiSdk from "../src/AiSdk.ts"
import { bin, everything, lsp, pyProject } from "./helpers.ts"
import * as MockModel from "./MockModel.ts"

const pidsOf = (board: ReadonlyArray<{ readonly pid?: number | undefined }>) =>
  board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))

const pyright = () =>
  lsp("pyright", bin("pyright-langserver"), { args: ["--stdio"], cwd: pyProject, fileTypes: [".py"] })

describe("AI SDK tools", () => {
  it.live("generateText calls an MCP tool and an LSP tool through the registry and reads both results", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([everything(), pyright()]))
      yield* registry.start
      const supervised = yield* AiSdk.make(registry)
      const mock = MockModel.make((step) => {
        if (step.index === 0) return [MockModel.toolCall("c1", "everything_echo", { message: "from the AI SDK" })]
        if (step.index === 1) {
          const file = NodePath.join(pyProject, "app.py")
          return [MockModel.toolCall("c2", "lsp_hover", { file, line: 1, character: 5 })]
        }
        return [MockModel.text("done")]
      })
      const result = yield* Effect.promise(() =>
        generateText({
          model: mock.model,
          tools: supervised.tools,
          prepareStep: supervised.prepareStep,
          stopWhen: stepCountIs(5),
          prompt: "echo, then hover"
        })
      )
      assert.strictEqual(result.text, "done")
      assert.strictEqual(mock.steps.length, 3)
      assert.includeMembers([...(mock.steps[0]?.offered ?? [])], ["everything_echo", "lsp_hover"])
      const read = MockModel.toolOutputs(mock.steps[2]!.prompt)
      assert.deepStrictEqual(
        read.map((r) => [r.name, r.output.type]),
        [
          ["everything_echo", "text"],
          ["lsp_hover", "text"]
        ]
      )
      assert.include(JSON.stringify(read[0]?.output), "Echo: from the AI SDK")
      assert.include(JSON.stringify(read[1]?.output), "greet")
      const pids = pidsOf(yield* registry.snapshot)
      assert.strictEqual(pids.length, 2)
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
    })
  )
})
