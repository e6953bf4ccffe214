import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import { ServerProcess } from "@toolvisor/core"
import * as Chat from "effect/ai/Chat"
import * as Effect from "effect/Effect"
import * as Everything from "../../../test/support/Everything.ts"
import { config, open, replay, untilBoard } from "../../../test/support/Registry.ts"
import * as ToolCatalogs from "../../../test/support/ToolCatalogs.ts"
import * as AgentLoop from "../src/AgentLoop.ts"
import * as AiSdk from "../src/AiSdk.ts"
import * as ToolOutput from "../src/ToolOutput.ts"
import { everything, tempDir } from "./helpers.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

/**
 * An agent of 637 real tool definitions: server-everything (13 tools to a client without roots or
 * sampling, kept eager) and four toolsets replaying every recorded server (156 tools each),
 * deferred by `defer_above`.
 */
const manyTools = () => {
  // r1 comes back from a crash after a second: long enough for a search and a call to meet it restarting.
  const lifecycle = (copy: number) => ({ call_timeout: "30s", ...(copy === 1 ? { backoff: { initial: "1s" } } : {}) })
  const toolsets = [
    everything(),
    ...[1, 2, 3, 4].map((copy) => replay(`r${copy}`, ToolCatalogs.servers, { lifecycle: lifecycle(copy) }))
  ]
  const agent: AgentConfig.AgentSpec = {
    name: "root",
    toolsets: toolsets.map((t) => t.identity),
    offers: { "mcp/everything": { defer: false } },
    deferAbove: 100
  }
  return config(toolsets, [agent])
}

/** The text the model read back for each tool result of a prompt. */
const readBack = (call: ScriptedModel.Call) =>
  ScriptedModel.toolResults(call.prompt).map((r) => (ToolOutput.isResult(r.result) ? ToolOutput.text(r.result) : ""))

const pidOf = (board: ReadonlyArray<{ readonly name: string; readonly pid?: number | undefined }>, name: string) =>
  board.find((s) => s.name === name)?.pid

describe("deferred tools in agent loops", () => {
  it.live(
    "effect/ai, 637 real tools: the model searches, is offered the tool it found from the next call on, and calls it through supervision",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(manyTools())
        yield* registry.start
        const catalog = yield* registry.catalog()
        assert.isAtLeast(catalog.tools.length, 500)
        const board = yield* registry.snapshot
        const r1 = pidOf(board, "r1")
        assert.isDefined(r1)

        // The toolset dies before the turn: the search finds its last-known tools, and the call
        // waits for supervision to bring it back.
        process.kill(r1 ?? 0, "SIGKILL")
        yield* untilBoard(registry, (b) => b.some((s) => s.name === "r1" && s.state === "Restarting"))
        let found = ""
        const model = ScriptedModel.make((call) => {
          if (call.index === 0) {
            return [
              ScriptedModel.toolCall("s1", "search_tools", {
                query: "turn a street address into geographic coordinates"
              }),
              ScriptedModel.finish("tool-calls")
            ]
          }
          if (call.index === 1) {
            found = /^- (\S+):/m.exec(readBack(call)[0] ?? "")?.[1] ?? ""
            return [
              ScriptedModel.toolCall("c1", found, { address: "1600 Amphitheatre Parkway" }),
              ScriptedModel.finish("tool-calls")
            ]
          }
          return [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
        })
        const loop = yield* AgentLoop.make(registry)
        const chat = yield* Chat.empty
        const turn = yield* loop.turn(chat, "where is Google?").pipe(Effect.provide(model.layer))

        assert.strictEqual(turn.text, "done")
        assert.strictEqual(found, "r1_google-maps_maps_geocode")
        const [first, second, third] = model.calls
        assert.include(first?.offered ?? [], "search_tools")
        assert.include(first?.offered ?? [], "everything_echo", "eager tools are offered as always")
        assert.notInclude(first?.offered ?? [], found)
        assert.isBelow(first?.offered.length ?? 0, catalog.tools.length / 10)
        assert.include(readBack(second!)[0], "google-maps_maps_geocode: Convert an address into geographic coordinates")
        assert.include(second?.offered ?? [], found, "offered from the next model call on")
        assert.include(readBack(third!)[1], 'replayed google-maps_maps_geocode {"address":"1600 Amphitheatre Parkway"}')
        const after = yield* untilBoard(registry, (b) => b.some((s) => s.name === "r1" && s.state === "Ready"))
        assert.notStrictEqual(pidOf(after, "r1"), r1, "the call reached a restarted server")

        // For the rest of the conversation, and only for it: another chat, or another agent
        // built from the same registry, has loaded nothing.
        assert.include(Object.keys((yield* loop.toolkitFor(chat)).tools), found)
        assert.notInclude(Object.keys((yield* loop.toolkitFor(yield* Chat.empty)).tools), found)
        const other = yield* AgentLoop.make(registry)
        assert.notInclude(Object.keys((yield* other.toolkitFor(chat)).tools), found)

        const pids = (yield* registry.snapshot).flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
        yield* close
        for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
      }),
    240_000
  )

  it.live(
    "select: loads exactly the tools named; an unknown name is answered with near ones",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(manyTools())
        yield* registry.start
        const model = ScriptedModel.make((call) =>
          call.index === 0
            ? [
                ScriptedModel.toolCall("s1", "search_tools", {
                  query: "select:r2_slack_slack_post_message,r3_memory_read_graph,r3_memory_read_grph"
                }),
                ScriptedModel.finish("tool-calls")
              ]
            : [ScriptedModel.text("done"), ScriptedModel.finish("stop")]
        )
        const loop = yield* AgentLoop.make(registry)
        yield* Effect.flatMap(Chat.empty, (chat) => loop.turn(chat, "load two")).pipe(Effect.provide(model.layer))
        const [first, second] = model.calls
        const added = (second?.offered ?? []).filter((name) => !(first?.offered ?? []).includes(name))
        assert.deepStrictEqual(added.sort(), ["r2_slack_slack_post_message", "r3_memory_read_graph"])
        assert.include(readBack(second!)[0], 'No tool named "r3_memory_read_grph" (did you mean "r3_memory_read_graph"')
        yield* close
      }),
    240_000
  )

  it.live(
    "AI SDK open: search_tools adds what it found to this conversation's tools only; instructions carry the toolset's and the server's",
    () =>
      Effect.gen(function* () {
        const dir = tempDir("defer")
        const path = Everything.writeConfig(dir, {
          entry: ["defer: [get-sum, everything_get-env]", "instruction: Prefer everything_echo for smoke tests."]
        })
        const opened = yield* Effect.promise(() => AiSdk.open(path))
        const names = () => Object.keys(opened.tools)
        assert.include(names(), "search_tools")
        assert.include(names(), "everything_echo")
        assert.notInclude(names(), "everything_get-sum")
        assert.notInclude(names(), "everything_get-env")
        const instructions = opened.instructions()
        assert.include(instructions, "## everything\nPrefer everything_echo for smoke tests.")
        assert.include(instructions, "2 of your 13 tools are not listed until you find them")

        const search = opened.tools.search_tools
        const answer = yield* Effect.promise(() =>
          Promise.resolve(
            search?.execute?.({ query: "sum of two numbers" }, { toolCallId: "s1", messages: [], context: {} })
          )
        )
        assert.include(JSON.stringify(answer), "everything_get-sum: Returns the sum of two numbers")
        assert.include(names(), "everything_get-sum")
        const sum = yield* Effect.promise(() =>
          Promise.resolve(
            opened.tools["everything_get-sum"]?.execute?.(
              { a: 2, b: 3 },
              { toolCallId: "c1", messages: [], context: {} }
            )
          )
        )
        assert.include(JSON.stringify(sum), "The sum of 2 and 3 is 5")

        const other = yield* Effect.promise(() => opened.chat())
        assert.include(Object.keys(other.tools), "search_tools")
        assert.notInclude(Object.keys(other.tools), "everything_get-sum", "another conversation loaded nothing")
        const pids = (yield* opened.registry.snapshot).flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
        yield* Effect.promise(() => opened.close())
        for (const pid of pids) assert.isFalse(ServerProcess.groupAlive(pid))
      }),
    120_000
  )
})
