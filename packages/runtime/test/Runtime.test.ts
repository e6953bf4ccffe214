import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import { fixtureServer, untilBoard } from "../../../test/support/Registry.ts"
import * as Runtime from "../src/Runtime.ts"
import * as ToolsetRegistry from "../src/ToolsetRegistry.ts"

const yaml = (servers: ReadonlyArray<string>) =>
  [
    "agents:",
    "  root:",
    "    toolsets:",
    ...servers.flatMap((name) => [
      "      - type: mcp",
      `        name: ${name}`,
      `        command: "${process.execPath}"`,
      `        args: ["${fixtureServer}"]`,
      "        lifecycle: { backoff: { initial: 100ms, max: 400ms } }"
    ])
  ].join("\n")

const writeConfig = (text: string) => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-runtime-"))
  const path = NodePath.join(dir, "agent.yaml")
  NodeFs.writeFileSync(path, text)
  return path
}

/** Records the name and attributes of every span that ends. */
const recordSpans = () => {
  const spans: Array<{ readonly name: string; readonly attributes: ReadonlyMap<string, unknown> }> = []
  const layer = Layer.succeed(
    Tracer.Tracer,
    Tracer.make({
      span(options) {
        const span = Tracer.nativeTracer.span(options)
        const end = span.end.bind(span)
        span.end = (endTime, exit) => {
          end(endTime, exit)
          spans.push({ name: span.name, attributes: span.attributes })
        }
        return span
      }
    })
  )
  return { spans, layer }
}

describe("ToolsetRegistry layers", () => {
  it("Runtime, the layers' first name, stays for a release as the same functions", () => {
    assert.strictEqual(Runtime.layer, ToolsetRegistry.layer)
    assert.strictEqual(Runtime.layerFile, ToolsetRegistry.layerFile)
    assert.strictEqual(Runtime.watch, ToolsetRegistry.watch)
  })

  it.live(
    "one Layer and one yield*: a config file becomes started, supervised toolsets; release leaves no process",
    () =>
      Effect.gen(function* () {
        const path = writeConfig(yaml(["alpha", "beta"]))
        const traced = recordSpans()
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          ToolsetRegistry.layerFile(path).pipe(Layer.provide(traced.layer)),
          scope
        )
        const registry = yield* ToolsetRegistry.ToolsetRegistry.pipe(Effect.provide(context))
        const board = yield* registry.snapshot
        assert.deepStrictEqual(
          board.map((s) => [s.name, s.state]),
          [
            ["alpha", "Ready"],
            ["beta", "Ready"]
          ]
        )
        const result = yield* registry.callTool("beta_echo", { message: "layered" }).pipe(Effect.provide(traced.layer))
        assert.deepStrictEqual(result.content[0], { type: "text", text: "layered" })
        const names = new Set(traced.spans.map((s) => s.name))
        assert.isTrue(names.has("toolvisor.connect"))
        assert.isTrue(names.has("toolvisor.start"))
        assert.isTrue(names.has("toolvisor.callTool"))
        const call = traced.spans.find((s) => s.name === "toolvisor.callTool")
        assert.strictEqual(call?.attributes.get("toolset"), "beta")
        const pids = board.flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
        yield* Scope.close(scope, Exit.void)
        for (const pid of pids) assert.isFalse(ServerProcess.isAlive(pid))
      })
  )

  it.live("watch mode applies an edited config file: an added toolset starts, the others keep their process", () =>
    Effect.gen(function* () {
      const path = writeConfig(yaml(["alpha"]))
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ToolsetRegistry.layerFile(path, { watch: true }), scope)
      const registry = yield* ToolsetRegistry.ToolsetRegistry.pipe(Effect.provide(context))
      const before = (yield* registry.snapshot)[0]?.pid
      NodeFs.writeFileSync(path, yaml(["alpha", "gamma"]))
      const after = yield* untilBoard(registry, (b) => b.length === 2 && b.every((s) => s.state === "Ready"))
      assert.strictEqual(after[0]?.pid, before)
      assert.strictEqual(after[1]?.name, "gamma")
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.live("a broken config file fails the Layer with every problem as path: message", () =>
    Effect.gen(function* () {
      const path = writeConfig("agents:\n  root:\n    toolsets:\n      - type: mcp\n        comand: x\n")
      const exit = yield* Effect.exit(Layer.build(ToolsetRegistry.layerFile(path)).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const text = String(exit.cause)
        assert.include(text, "agents.root.toolsets[0]")
      }
    })
  )
})
