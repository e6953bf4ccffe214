/**
 * Servers that misbehave on purpose (`test/fixtures/hostile`): each costs its caller a bounded
 * time and leaves the session in step, or ends it, as the misbehaviour deserves.
 */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import * as McpConnector from "../src/McpConnector.ts"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import { awaitListening, everythingStdio, fastPolicy, freePort, textOf, until } from "./helpers.ts"

const fixtures = NodePath.resolve(import.meta.dirname, "../../../test/fixtures/hostile")

const hostile = (script: string, env: Readonly<Record<string, string>> = {}) =>
  McpSpec.Stdio.make({ command: process.execPath, args: [NodePath.join(fixtures, script)], env })

/** Long, so that a call that waits for it is told from one that fails at once. */
const callTimeoutMs = 60_000

/** A started toolset in its own scope, closed by the test. */
const started = (name: string, spec: McpSpec.McpSpec) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const toolset = yield* McpToolset.make({
      name,
      spec,
      policy: fastPolicy({ call_timeout: `${callTimeoutMs}ms` })
    }).pipe(Scope.provide(scope))
    yield* toolset.start
    return { toolset, close: Scope.close(scope, Exit.void) }
  })

/** A call's failure and how long it took to come. */
const failureOf = (toolset: McpToolset.McpToolset, tool: string, args: { readonly [key: string]: unknown } = {}) =>
  Effect.gen(function* () {
    const start = Date.now()
    const error = yield* Effect.flip(toolset.callTool(tool, args))
    return { error, millis: Date.now() - start }
  })

/** An array nested `levels` deep, built without recursion. */
/** `deep-answer-http.mjs` on a port of its own, with `env`, listening: the URL of its MCP endpoint. */
const httpFixture = (env: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function* () {
    const port = yield* freePort
    yield* ServerProcess.spawn("hostile-http", {
      command: process.execPath,
      args: [NodePath.join(fixtures, "deep-answer-http.mjs")],
      env: { PORT: String(port), ...env }
    })
    yield* awaitListening(port)
    return McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp` })
  })

const nested = (levels: number): unknown => {
  let value: unknown = []
  for (let i = 1; i < levels; i++) value = [value]
  return value
}

/** A logger that keeps the warnings logged, to add beside the test's own. */
const warningLog = () => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ message, logLevel }) => {
    if (logLevel === "Warn") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  return { warnings, capture: Logger.layer([logger], { mergeWithExisting: true }) }
}

describe("a hostile MCP server", () => {
  it.live("an answer over the line limit fails its call at once, naming its size; the session stays in step", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* started("huge", hostile("huge-answer.mjs"))
      const pid = (yield* toolset.state).pid
      const { error, millis } = yield* failureOf(toolset, "huge")
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ToolCallFailed")
      assert.match(error.message, /^huge\/huge: /)
      // Failed as it passed the limit, before the rest of its 20 MiB arrived.
      assert.match(error.message, /more than 1\d\.\d MiB, over the limit of 16 MiB/)
      assert.include(error.message, "the call ran")
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "in step" })), "in step")
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.pid, pid)
      yield* close
    })
  )

  it.live("a result nested 100 000 deep fails its call at once, naming the limit; the session stays in step", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* started("deep", hostile("deep-answer.mjs"))
      const { error, millis } = yield* failureOf(toolset, "deep")
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ToolCallFailed")
      assert.include(error.message, "nested deeper than 64")
      assert.include(error.message, "the call ran")
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "in step" })), "in step")
      assert.strictEqual((yield* toolset.state).state, "Ready")
      yield* close
    })
  )

  it.live(
    "a result nested 100 000 deep over streamable HTTP, as JSON or as an event, fails its call at once; the session stays up",
    () =>
      Effect.gen(function* () {
        for (const env of [{}, { HOSTILE_SSE: "1" }]) {
          const spec = yield* httpFixture(env)
          const { toolset, close } = yield* started("remote", spec)
          const { error, millis } = yield* failureOf(toolset, "deep")
          assert.isBelow(millis, 10_000)
          assert.strictEqual(error._tag, "ToolCallFailed")
          assert.include(error.message, "nested deeper than 64")
          assert.match(error.message, /the (call|request) ran/)
          assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "in step" })), "in step")
          yield* close
        }
      })
  )

  it.live("a listing nested 100 000 deep in an event stream fails the start, naming the limit, not the stack", () =>
    Effect.gen(function* () {
      const spec = yield* httpFixture({ HOSTILE_SSE: "1", HOSTILE_DEEP_LIST: "1" })
      const toolset = yield* McpToolset.make({ name: "remote", spec, policy: fastPolicy({ restart: "never" }) })
      const error = yield* Effect.flip(toolset.start)
      assert.include(error.message, "nested deeper than 64 levels")
      assert.notInclude(error.message, "call stack")
    }).pipe(Effect.scoped)
  )

  it.live(
    "an answer past 16 MiB over streamable HTTP fails its call as it passes the limit; the session stays up",
    () =>
      Effect.gen(function* () {
        const spec = yield* httpFixture()
        const { toolset, close } = yield* started("remote", spec)
        const { error, millis } = yield* failureOf(toolset, "huge")
        assert.isBelow(millis, 10_000)
        assert.strictEqual(error._tag, "ToolCallFailed")
        assert.match(error.message, /more than 16\.\d MiB, over the limit of 16 MiB; the call ran/)
        assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "in step" })), "in step")
        yield* close
      })
  )

  it.live(
    "a session stream whose one event never ends costs at most the limit per event, not all the memory there is",
    () =>
      Effect.gen(function* () {
        const spec = yield* httpFixture({ HOSTILE_GET: "endless" })
        const before = process.memoryUsage().rss
        const { toolset, close } = yield* started("remote", spec)
        // Unbounded, the stream grew this process by hundreds of MB a second until it died.
        let peak = before
        for (let i = 0; i < 20; i++) {
          yield* Effect.sleep("200 millis")
          peak = Math.max(peak, process.memoryUsage().rss)
          yield* Effect.ignore(toolset.callTool("echo", { message: "still" }))
        }
        assert.isBelow((peak - before) / 2 ** 20, 400)
        yield* close
      })
  )

  it.live("arguments nested 100 000 deep are refused before they are sent: the call did not run", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* started("everything", everythingStdio())
      const { error, millis } = yield* failureOf(toolset, "echo", { message: nested(100_000) })
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ToolCallFailed")
      assert.include(error.message, "nested deeper than 64")
      assert.include(error.message, "did not run")
      // The same through the fast path the gateway takes.
      const now = yield* Effect.promise(
        () => toolset.callToolNow("echo", { message: nested(100_000) }) ?? Promise.resolve(undefined)
      )
      assert.isTrue(now !== undefined && Exit.isFailure(now) && String(now.cause).includes("did not run"))
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "fine" })), "Echo: fine")
      yield* close
    })
  )

  it.live("a server that closes its stdout and stays alive: the call fails at once and the toolset restarts", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* started("closer", hostile("stdout-closed.mjs"))
      const pid = (yield* toolset.state).pid ?? 0
      const { error, millis } = yield* failureOf(toolset, "close_stdout")
      assert.isBelow(millis, 10_000)
      assert.strictEqual(error._tag, "ServerCrashed")
      assert.include(error.message, "stdout")
      const again = yield* until(toolset, (s) => s.state === "Ready" && s.pid !== pid)
      assert.strictEqual(again.restarts, 1)
      assert.isFalse(ServerProcess.isAlive(pid))
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "back" })), "back")
      yield* close
    })
  )

  it.live("a listing keeps each name once, none empty, at most 10,000; the count is what can be called", () => {
    const { warnings, capture } = warningLog()
    return Effect.gen(function* () {
      const { toolset, close } = yield* started("odd", hostile("odd-listing.mjs", { HOSTILE_EXTRA: "10005" }))
      const listing = yield* toolset.tools
      const names = listing.items.map((tool) => tool.name)
      // Before: 10,008 tools counted, `echo` twice (one uncallable), a tool named "" offered as `odd_`.
      assert.strictEqual(names.length, McpConnector.maxListing)
      assert.strictEqual(new Set(names).size, names.length)
      assert.notInclude(names, "")
      assert.strictEqual(listing.items[0]?.description, "Echoes its message")
      assert.strictEqual((yield* toolset.state).toolCount, McpConnector.maxListing)
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "still here" })), "still here")
      yield* close
      const [warning] = warnings.filter((w) => w.includes("the first of each kept"))
      assert.include(warning, 'odd: the server listed 1 name(s) more than once, the first of each kept: "echo"')
      assert.include(warning, "listed 1 item(s) without a name, left out")
      assert.include(warning, "listed 6 item(s) past what a listing keeps (10000 items, 32 MiB), left out")
    }).pipe(Effect.provide(capture))
  })

  it.live("a tool MCP's schema rejects, or one that weighs megabytes, costs only itself; the rest are offered", () => {
    const { warnings, capture } = warningLog()
    return Effect.gen(function* () {
      // Before: the whole listing refused for one bad tool, the toolset restarting for ever with no tool.
      const { toolset, close } = yield* started("bad", hostile("bad-listing.mjs"))
      const names = (yield* toolset.tools).items.map((tool) => tool.name)
      assert.deepStrictEqual(names, ["echo", "light"])
      assert.strictEqual((yield* toolset.state).state, "Ready")
      assert.strictEqual(textOf(yield* toolset.callTool("echo", { message: "still here" })), "still here")
      yield* close
      const warning = warnings.find((w) => w.includes("schema rejects")) ?? ""
      assert.include(
        warning,
        `listed 2 tool(s) whose definition MCP's schema rejects, left out: "null_schema", "bad_required"`
      )
      assert.include(warning, `listed 2 item(s) of more than 1 MiB each, left out: "heavy_1", "heavy_2"`)
    }).pipe(Effect.provide(capture))
  })

  it.live("a flood of lines that are not JSON-RPC is counted in one warning; the answer after it arrives", () => {
    const { warnings, capture } = warningLog()
    return Effect.gen(function* () {
      const { toolset, close } = yield* started("flood", hostile("invalid-flood.mjs", { HOSTILE_LINES: "100000" }))
      assert.strictEqual(textOf(yield* toolset.callTool("flood", {})), "flooded 100000")
      yield* close
      const about = warnings.filter((w) => w.includes("not JSON-RPC"))
      assert.isAtLeast(about.length, 1)
      assert.isAtMost(about.length, 3)
      const counted = about.reduce((sum, w) => sum + Number(/(\d+) lines?/.exec(w)?.[1] ?? 0), 0)
      assert.strictEqual(counted, 100_000)
    }).pipe(Effect.provide(capture))
  })
})

describe("the environment a server inherits", () => {
  it.live("holds none of Toolvisor's own variables, but what the config sets passes", () =>
    Effect.gen(function* () {
      const own = { TOOLVISOR_HTTP_TOKEN: "gateway-token-123", TOOLVISOR_CLUSTER_KEY: "cluster-key-456" }
      const saved = Object.keys(own).map((key) => [key, process.env[key]] as const)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const [key, value] of saved) {
            if (value === undefined) delete process.env[key]
            else process.env[key] = value
          }
        })
      )
      Object.assign(process.env, own, { TOOLVISOR_STATE_DIR: "/tmp/toolvisor-state" })
      const spec = McpSpec.Stdio.make({
        command: process.execPath,
        args: everythingStdio().args,
        env: { TOOLVISOR_INPUT_API_KEY: "asked-for" }
      })
      const { toolset, close } = yield* started("everything", spec)
      const env = textOf(yield* toolset.callTool("get-env", {}))
      assert.notInclude(env, "gateway-token-123")
      assert.notInclude(env, "cluster-key-456")
      assert.notInclude(env, "TOOLVISOR_STATE_DIR")
      assert.include(env, "asked-for")
      assert.include(env, "TOOLVISOR_OWNER")
      yield* close
    })
  )
})
