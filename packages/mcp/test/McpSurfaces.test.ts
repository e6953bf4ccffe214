/**
 * Prompts, resources, completions, log messages and resource subscriptions of a real server
 * (server-everything over stdio), and what supervision adds to them across a SIGKILL of it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type * as McpSurfaces from "../src/McpSurfaces.ts"
import type * as McpToolset from "../src/McpToolset.ts"
import { fastPolicy, fixture, openEverything, textOf, until } from "./helpers.ts"

const document = "demo://resource/static/document/architecture.md"

const open = openEverything

/** Kills the server and waits until the toolset has noticed. */
const kill = (toolset: McpToolset.McpToolset) =>
  Effect.gen(function* () {
    const pid = (yield* toolset.state).pid ?? 0
    process.kill(pid, "SIGKILL")
    yield* until(toolset, (s) => s.state !== "Ready")
    return pid
  })

/** How many requests of each method the fixture (run with FIXTURE_SURFACES) has served. */
const requestsOf = (toolset: McpToolset.McpToolset) =>
  Effect.map(toolset.callTool("requests", {}), (result): Record<string, number> => JSON.parse(textOf(result)))

describe("MCP surfaces of server-everything", () => {
  it.live("resources (listed, templates, read), prompts (listed, got) and completions", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open()
      const resources = yield* toolset.resources
      assert.isTrue(resources.complete, resources.complete ? "" : resources.reason.message)
      assert.include(
        resources.items.map((r) => r.uri),
        document
      )
      const templates = yield* toolset.resourceTemplates
      assert.include(
        templates.items.map((t) => t.uriTemplate),
        "demo://resource/dynamic/text/{resourceId}"
      )
      const read = yield* toolset.readResource(document)
      assert.strictEqual(read.contents[0]?.uri, document)
      const dynamic = yield* toolset.readResource("demo://resource/dynamic/text/7")
      assert.strictEqual(dynamic.contents.length, 1)
      const prompts = yield* toolset.prompts
      assert.deepStrictEqual(prompts.items.map((p) => p.name).sort(), [
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
        "simple-prompt"
      ])
      const prompt = yield* toolset.getPrompt("args-prompt", { city: "Paris" })
      const content = prompt.messages[0]?.content
      assert.include(content?.type === "text" ? content.text : "", "Paris")
      const completion = yield* toolset.complete({
        ref: { type: "ref/prompt", name: "completable-prompt" },
        argument: { name: "name", value: "" },
        context: { arguments: { department: "Sales" } }
      })
      assert.deepStrictEqual(completion.values, ["David", "Eve", "Frank"])
      const missing = yield* Effect.flip(toolset.getPrompt("no-such-prompt"))
      assert.strictEqual(missing._tag, "McpRequestFailed")
      assert.strictEqual(missing._tag === "McpRequestFailed" ? missing.method : "", "prompts/get")
      // The server's SDK words its error as the client's SDK does again: the prefix is said once.
      const invalid = yield* Effect.flip(toolset.getPrompt("args-prompt", {}))
      assert.include(
        invalid.message,
        "everything/args-prompt: MCP error -32602: Invalid arguments for prompt args-prompt"
      )
      yield* close
    })
  )

  it.live("a call's progress notifications arrive in order; its _meta reaches the server", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open()
      const seen: Array<McpToolset.Progress> = []
      const result = yield* toolset.callToolWith(
        "trigger-long-running-operation",
        { duration: 0.3, steps: 3 },
        { onProgress: (progress) => seen.push(progress) }
      )
      assert.include(textOf(result), "Steps: 3")
      assert.deepStrictEqual(
        seen.map((p) => [p.progress, p.total]),
        [
          [1, 3],
          [2, 3],
          [3, 3]
        ]
      )
      yield* close
      const fixtured = yield* open({ name: "fixture", spec: fixture() })
      const echoed = yield* fixtured.toolset.callToolWith("meta", {}, { _meta: { trace: "t-1" } })
      assert.deepStrictEqual(JSON.parse(textOf(echoed)), { trace: "t-1" })
      yield* fixtured.close
    })
  )

  it.live("the server's log messages arrive as typed events, at the configured level", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ logLevel: "debug" })
      const first = yield* Effect.forkChild(Stream.runHead(toolset.logs), { startImmediately: true })
      yield* toolset.callTool("toggle-simulated-logging", {})
      const event = yield* Fiber.join(first)
      assert.isTrue(event._tag === "Some")
      if (event._tag === "Some") {
        assert.strictEqual(event.value.toolset, "everything")
        assert.include(
          ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"],
          event.value.level
        )
        assert.isString(event.value.data)
      }
      yield* close
    })
  )

  it.live("across a SIGKILL: listings are kept (incomplete), a read waits for Ready and succeeds", () =>
    Effect.gen(function* () {
      // A backoff long enough that the listings are read before the server is back.
      const { toolset, close } = yield* open({ policy: fastPolicy({ backoff: { initial: "1500ms", max: "1500ms" } }) })
      const before = yield* toolset.resources
      const prompts = yield* toolset.prompts
      yield* kill(toolset)
      const during = yield* toolset.resources
      assert.isFalse(during.complete)
      assert.deepStrictEqual(during.items, before.items)
      const promptsDuring = yield* toolset.prompts
      assert.isFalse(promptsDuring.complete)
      assert.deepStrictEqual(promptsDuring.items, prompts.items)
      // Made while the server is down: waits for the new session rather than failing.
      const read = yield* toolset.readResource(document)
      assert.strictEqual(read.contents[0]?.uri, document)
      const got = yield* toolset.getPrompt("simple-prompt")
      assert.isAtLeast(got.messages.length, 1)
      assert.strictEqual((yield* toolset.state).state, "Ready")
      yield* close
    })
  )

  it.live("a server that answers ping with an error is alive: probed, never restarted for it", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({
        name: "fixture",
        spec: fixture({ FIXTURE_SURFACES: "1", FIXTURE_NO_PING: "1" }),
        policy: fastPolicy({ health: { interval: "50ms", failures: 1 } })
      })
      const pid = (yield* toolset.state).pid
      // "Method not found" counted as a failed probe: Degraded, then a restart every few probes.
      yield* Effect.repeat(requestsOf(toolset), { until: (served) => (served.ping ?? 0) >= 10 })
      const status = yield* toolset.state
      assert.strictEqual(status.state, "Ready")
      assert.strictEqual(status.pid, pid)
      assert.strictEqual(status.restarts, 0)
      yield* close
    })
  )

  it.live(
    "a request nested too deep to write fails at once as invalid params, every way it is sent; the session stays",
    () =>
      Effect.gen(function* () {
        const { toolset, close } = yield* open({ name: "fixture", spec: fixture({ FIXTURE_SURFACES: "1" }) })
        const pid = (yield* toolset.state).pid
        let deep: Record<string, unknown> = { leaf: 1 }
        for (let i = 0; i < 10_000; i++) deep = { a: deep }
        // Written as it was, JSON.stringify overflowed: the request passed for a lost session and
        // waited for a new one — a tool call until call_timeout, a read or a prompt for ever.
        const now = <A, E>(sent: Promise<Exit.Exit<A, E>> | undefined) =>
          sent === undefined ? Effect.die("the toolset is live") : Effect.flatten(Effect.promise(() => sent))
        const failures = [
          yield* Effect.flip(toolset.callToolWith("echo", { message: "x" }, { _meta: deep })),
          yield* Effect.flip(toolset.readResource("fixture://note", { _meta: deep })),
          yield* Effect.flip(now(toolset.readResourceNow("fixture://note", { _meta: deep }))),
          yield* Effect.flip(toolset.getPrompt("greet", { who: "x" }, { _meta: deep })),
          yield* Effect.flip(now(toolset.getPromptNow("greet", { who: "x" }, { _meta: deep })))
        ]
        for (const error of failures) {
          assert.include(["ToolCallFailed", "McpRequestFailed"], error._tag)
          assert.strictEqual("code" in error ? error.code : undefined, -32602)
          assert.include(
            error.message,
            "nests deeper than 64 levels in its arguments or _meta, the limit; it was not sent"
          )
        }
        const read = yield* toolset.readResource("fixture://note", { _meta: { trace: "shallow" } })
        assert.strictEqual(read.contents[0]?.uri, "fixture://note")
        const status = yield* toolset.state
        assert.strictEqual(status.pid, pid)
        assert.strictEqual(status.restarts, 0)
        yield* close
      })
  )

  it.live("sent at once while live: the same answers and typed errors; one sent on a killed session is recovered", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ policy: fastPolicy({ backoff: { initial: "1500ms", max: "1500ms" } }) })
      const now = <A, E>(sent: Promise<Exit.Exit<A, E>> | undefined) =>
        sent === undefined ? Effect.die("the toolset is live: the request is sent at once") : Effect.promise(() => sent)
      const prompt = yield* now(toolset.getPromptNow("args-prompt", { city: "Paris" }))
      assert.isTrue(Exit.isSuccess(prompt))
      const content = Exit.isSuccess(prompt) ? prompt.value.messages[0]?.content : undefined
      assert.include(content?.type === "text" ? content.text : "", "Paris")
      const missing = yield* now(toolset.getPromptNow("no-such-prompt"))
      const error = Exit.isFailure(missing) ? Cause.findErrorOption(missing.cause) : undefined
      assert.strictEqual(error?._tag === "Some" ? error.value._tag : "", "McpRequestFailed")
      // Killed, and asked before the toolset can notice: sent on the dead session, recovered on the next one.
      process.kill((yield* toolset.state).pid ?? 0, "SIGKILL")
      const read = yield* now(toolset.readResourceNow(document))
      assert.strictEqual(Exit.isSuccess(read) ? read.value.contents[0]?.uri : String(read.cause), document)
      assert.strictEqual((yield* toolset.state).restarts, 1)
      // Not live: left to the runtime path, which waits for Ready.
      yield* kill(toolset)
      assert.isUndefined(toolset.getPromptNow("simple-prompt"))
      assert.isUndefined(toolset.readResourceNow(document))
      yield* close
    })
  )

  it.live("a subscription gets updates, is made again after a SIGKILL, and says the resource may have changed", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open()
      const updates = yield* Queue.unbounded<McpSurfaces.ResourceUpdate>()
      yield* toolset.subscribe(document).pipe(
        Stream.runForEach((update) => Queue.offer(updates, update)),
        Effect.forkChild({ startImmediately: true })
      )
      // The server sends an update at once when updates are turned on, then every 5 s.
      yield* toolset.callTool("toggle-subscriber-updates", {})
      const got = [yield* Queue.take(updates)]
      yield* kill(toolset)
      got.push(yield* Queue.take(updates))
      // The new server has no updates running: turn them on there too.
      yield* toolset.callTool("toggle-subscriber-updates", {})
      got.push(yield* Queue.take(updates))
      assert.deepStrictEqual(
        got.map((u) => u.reason),
        ["updated", "reconnected", "updated"]
      )
      assert.isTrue(got.every((u) => u.uri === document && u.toolset === "everything"))
      yield* close
    })
  )

  it.live("a server with resources but no templates: templates are an empty listing, asked for once", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "fixture", spec: fixture({ FIXTURE_SURFACES: "1" }) })
      for (let i = 0; i < 5; i++) {
        const templates = yield* toolset.resourceTemplates
        assert.isTrue(templates.complete, templates.complete ? "" : templates.reason.message)
        assert.deepStrictEqual(templates.items, [])
        const read = yield* toolset.readResource("fixture://note")
        assert.strictEqual(read.contents[0]?.uri, "fixture://note")
      }
      assert.strictEqual((yield* requestsOf(toolset))["resources/templates/list"], 1)
      yield* close
    })
  )

  it.live("a listing that changed is announced: when the server says so, and when it was read again", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ name: "fixture", spec: fixture({ FIXTURE_SURFACES: "1" }) })
      const changes = yield* Queue.unbounded<McpSurfaces.ListingChange>()
      yield* toolset.listingChanges.pipe(
        Stream.runForEach((change) => Queue.offer(changes, change)),
        Effect.forkChild({ startImmediately: true })
      )
      // The next change of `kind`. Others may come first: a listing the session reads after connecting
      // is announced too, and it can land after the subscription started.
      const next = Effect.fnUntraced(function* (kind: McpSurfaces.ListingChange["kind"]) {
        let change = yield* Queue.take(changes)
        while (change.kind !== kind) change = yield* Queue.take(changes)
        return change
      })
      const before = toolset.listingsVersion()
      yield* toolset.callTool("add_prompt", { name: "fresh" })
      // Heard at once (the notification arrives before the call's answer), then read again.
      assert.isAbove(toolset.listingsVersion(), before)
      assert.deepStrictEqual(yield* next("prompts"), { toolset: "fixture", kind: "prompts" })
      const prompts = yield* toolset.prompts
      assert.include(
        prompts.items.map((p) => p.name),
        "fresh"
      )
      // What came before is dropped: the resources change taken next is the one this call makes.
      yield* Queue.clear(changes)
      const beforeResource = toolset.listingsVersion()
      yield* toolset.callTool("add_resource", { uri: "fixture://added" })
      assert.isAbove(toolset.listingsVersion(), beforeResource)
      assert.deepStrictEqual(yield* next("resources"), { toolset: "fixture", kind: "resources" })
      const resources = yield* toolset.resources
      assert.include(
        resources.items.map((r) => r.uri),
        "fixture://added"
      )
      yield* close
    })
  )
})
