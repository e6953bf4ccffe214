/**
 * The registry's prompts, resources, completions, subscriptions and log messages, over two
 * real server-everything processes: one prefixed (its prompts are `b_*`), one not; both list the
 * same resource URIs, so the second's are reported as shadowed.
 */
import { assert, describe, it } from "@effect/vitest"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { server as everything } from "../../../test/support/Everything.ts"
import { config, fixtureEntry, open, statusOf, untilBoard } from "../../../test/support/Registry.ts"
import * as Surfaces from "../src/Surfaces.ts"

const document = "demo://resource/static/document/architecture.md"

const entry = (name: string, prefix?: string) =>
  fixtureEntry(name, {
    command: process.execPath,
    ...(prefix === undefined ? {} : { prefix }),
    lifecycle: { backoff: { initial: "1500ms", max: "1500ms" } }
  })

/** The fixture entry, running server-everything instead. */
const everythingEntry = (name: string, prefix?: string) => {
  const base = entry(name, prefix)
  return {
    ...base,
    transport: { ...base.transport, args: [everything, "stdio"] },
    signature: `${base.signature}:everything`
  }
}

describe("registry: prompts, resources, completions, subscriptions, logs", () => {
  it.live("named and routed like tools; clashes reported; kept and waited for across a SIGKILL", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([everythingEntry("a"), everythingEntry("b", "b")]))
      yield* registry.start
      const prompts = yield* registry.prompts()
      const names = prompts.prompts.map((p) => p.name)
      assert.include(names, "simple-prompt")
      assert.include(names, "b_simple-prompt")
      assert.deepStrictEqual(prompts.clashes, [])
      const got = yield* registry.getPrompt("b_args-prompt", { city: "Lyon" })
      const content = got.messages[0]?.content
      assert.include(content?.type === "text" ? content.text : "", "Lyon")
      const unknown = yield* Effect.flip(registry.getPrompt("simple-promp"))
      assert.strictEqual(unknown._tag, "UnknownPrompt")
      assert.include(unknown._tag === "UnknownPrompt" ? unknown.near : [], "simple-prompt")

      const resources = yield* registry.resources()
      assert.include(
        resources.resources.map((r) => r.item.uri),
        document
      )
      assert.isTrue(resources.resources.every((r) => r.toolset === "a"))
      assert.include(
        resources.clashes.map((c) => `${c.name} ${c.toolset} ${c.shadowedBy}`),
        `${document} b a`
      )
      // Inspecting either toolset shows the clash, as the log and `validate --check` say it.
      for (const toolset of ["a", "b"]) {
        const inspected = yield* registry.inspect(toolset)
        assert.include(
          (inspected.clashes ?? []).map(({ kind, clash }) => Surfaces.clashMessage(kind, clash)),
          `resource "${document}" of b is shadowed by a (the first in config order wins)`
        )
      }
      const read = yield* registry.readResource("demo://resource/dynamic/text/3")
      assert.strictEqual(read.contents.length, 1)
      const missing = yield* Effect.flip(registry.readResource("nowhere://x"))
      assert.strictEqual(missing._tag, "UnknownResource")
      const typo = yield* Effect.flip(registry.readResource(`${document}x`))
      assert.include(typo._tag === "UnknownResource" ? typo.near : [], document)
      assert.include(typo.message, `did you mean ${document}`)
      const completion = yield* registry.complete({
        ref: { type: "ref/prompt", name: "b_completable-prompt" },
        argument: { name: "department", value: "S" }
      })
      assert.deepStrictEqual(completion.values, ["Sales", "Support"])

      // The version moves only when a listing changes: a second look keeps it.
      assert.strictEqual((yield* registry.prompts()).version, prompts.version)

      const pid = (yield* statusOf(registry, "a"))?.pid ?? 0
      process.kill(pid, "SIGKILL")
      yield* untilBoard(registry, (board) => board.some((s) => s.name === "a" && s.state !== "Ready"))
      const during = yield* registry.resources()
      assert.isFalse(during.complete)
      assert.isTrue(during.resources.some((r) => r.item.uri === document && r.lastKnown))
      assert.strictEqual(during.version, resources.version)
      const duringPrompts = yield* registry.prompts()
      assert.strictEqual(duringPrompts.version, prompts.version)
      const again = yield* registry.readResource(document)
      assert.strictEqual(again.contents[0]?.uri, document)
      yield* close
    })
  )

  it.live(
    "sent at once (getPromptNow, readResourceNow): routed by the kept catalogs, masked; else left to the runtime",
    () =>
      Effect.gen(function* () {
        const secret = "sk-live-abcdef123456"
        const a = { ...everythingEntry("a"), secrets: [secret] }
        const { registry, close } = yield* open(config([a, everythingEntry("b", "b")]))
        yield* registry.start
        // No catalog kept yet: the runtime path builds it (and names what is unknown).
        assert.isUndefined(registry.getPromptNow("b_args-prompt", { city: "Lyon" }))
        // A route taken on the runtime path is kept once what it was built from settles (the
        // registry hears of the listings its first build read after that build): polled by
        // asking at once, or through the runtime (which keeps the route) while it cannot be.
        const viaRuntime = yield* registry.getPrompt("b_args-prompt", { city: "Lyon" })
        const sentAtOnce = <A, E>(send: () => Promise<Exit.Exit<A, E>> | undefined, build: Effect.Effect<unknown>) =>
          Effect.suspend(() => {
            const sent = send()
            return sent === undefined
              ? Effect.as(build, false)
              : Effect.as(
                  Effect.promise(() => sent),
                  true
                )
          }).pipe(
            Effect.repeat({ until: (sent) => sent, schedule: Schedule.spaced("20 millis") }),
            Effect.timeout("20 seconds")
          )
        yield* sentAtOnce(() => registry.getPromptNow("simple-prompt"), Effect.ignore(registry.prompts()))
        yield* sentAtOnce(() => registry.readResourceNow(document), Effect.ignore(registry.resources()))
        const now = <A, E>(what: string, sent: Promise<Exit.Exit<A, E>> | undefined) =>
          sent === undefined
            ? Effect.die(`${what}: the route is kept and its toolset live, so it is sent at once`)
            : Effect.promise(() => sent)
        const prompt = yield* now("b_args-prompt", registry.getPromptNow("b_args-prompt", { city: "Lyon" }))
        assert.deepStrictEqual(prompt, Exit.succeed(viaRuntime))
        // What the server says back is masked, as on the runtime path.
        const leaked = yield* now("args-prompt", registry.getPromptNow("args-prompt", { city: secret }))
        assert.isTrue(Exit.isSuccess(leaked))
        assert.notInclude(JSON.stringify(leaked), secret)
        const read = yield* now("a read", registry.readResourceNow("demo://resource/dynamic/text/3"))
        assert.strictEqual(Exit.isSuccess(read) ? read.value.contents.length : 0, 1)
        assert.isUndefined(registry.getPromptNow("simple-promp"))
        assert.isUndefined(registry.readResourceNow("nowhere://x"))

        process.kill((yield* statusOf(registry, "a"))?.pid ?? 0, "SIGKILL")
        yield* untilBoard(registry, (board) => board.some((s) => s.name === "a" && s.state !== "Ready"))
        assert.isUndefined(registry.readResourceNow(document))
        assert.isUndefined(registry.getPromptNow("simple-prompt"))
        yield* close
      })
  )

  it.live("a subscription through the registry is restored after a SIGKILL; server logs arrive on one stream", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* open(config([everythingEntry("a")]))
      yield* registry.start
      const logs = yield* Queue.unbounded<string>()
      yield* registry.logs.pipe(
        Stream.runForEach((event) => Queue.offer(logs, `${event.toolset} ${event.level}`)),
        Effect.forkChild({ startImmediately: true })
      )
      yield* registry.callTool("toggle-simulated-logging", {})
      assert.match(yield* Queue.take(logs), /^a \w+$/)

      // A call through the registry carries a progress listener to the server and back, in order.
      const progress: Array<string> = []
      yield* registry.callTool("trigger-long-running-operation", { duration: 0.3, steps: 3 }, undefined, {
        onProgress: (p) => progress.push(`${p.progress}/${p.total}`)
      })
      assert.deepStrictEqual(progress, ["1/3", "2/3", "3/3"])

      const updates = yield* Queue.unbounded<string>()
      yield* registry.subscribe(document).pipe(
        Stream.runForEach((update) => Queue.offer(updates, update.reason)),
        Effect.forkChild({ startImmediately: true })
      )
      yield* registry.callTool("toggle-subscriber-updates", {})
      assert.strictEqual(yield* Queue.take(updates), "updated")
      const pid = (yield* statusOf(registry, "a"))?.pid ?? 0
      process.kill(pid, "SIGKILL")
      assert.strictEqual(yield* Queue.take(updates), "reconnected")
      yield* untilBoard(registry, (board) => board.some((s) => s.name === "a" && s.state === "Ready"))
      yield* registry.callTool("toggle-subscriber-updates", {})
      assert.strictEqual(yield* Queue.take(updates), "updated")
      yield* close
    })
  )
  it.live(
    "what a server adds is routed at once and what it removes is unknown; missing templates are asked for once",
    () =>
      Effect.gen(function* () {
        const { registry, close } = yield* open(config([fixtureEntry("fx", { env: { FIXTURE_SURFACES: "1" } })]))
        yield* registry.start
        const requests = Effect.map(registry.callTool("requests", {}), (result): Record<string, number> => {
          const first = result.content[0]
          return JSON.parse(typeof first?.text === "string" ? first.text : "{}")
        })
        for (let i = 0; i < 5; i++) {
          const read = yield* registry.readResource("fixture://note")
          assert.strictEqual(read.contents[0]?.uri, "fixture://note")
        }
        // The fixture has no templates ("method not found"): asked once, not once per read.
        assert.strictEqual((yield* requests)["resources/templates/list"], 1)
        assert.isTrue((yield* registry.resources()).complete)

        const changes = yield* Queue.unbounded<McpSurfaces.ListingChange>()
        yield* registry.listingChanges.pipe(
          Stream.runForEach((change) => Queue.offer(changes, change)),
          Effect.forkChild({ startImmediately: true })
        )
        yield* registry.getPrompt("greet", { who: "Ada" })
        const before = (yield* registry.prompts()).version
        yield* registry.callTool("add_prompt", { name: "fresh" })
        const fresh = yield* registry.getPrompt("fresh")
        const content = fresh.messages[0]?.content
        assert.strictEqual(content?.type === "text" ? content.text : "", "Prompt fresh")
        assert.isAbove((yield* registry.prompts()).version, before)
        assert.deepStrictEqual(yield* Queue.take(changes), { toolset: "fx", kind: "prompts" })
        yield* registry.callTool("remove", { name: "greet" })
        const gone = yield* Effect.flip(registry.getPrompt("greet", { who: "Ada" }))
        assert.strictEqual(gone._tag, "UnknownPrompt")

        yield* registry.callTool("add_resource", { uri: "fixture://added" })
        const added = yield* registry.readResource("fixture://added")
        assert.strictEqual(added.contents[0]?.uri, "fixture://added")
        yield* registry.callTool("remove", { name: "fixture://note" })
        const removed = yield* Effect.flip(registry.readResource("fixture://note"))
        assert.strictEqual(removed._tag, "UnknownResource")
        // The status never changed: only the listings did.
        assert.strictEqual((yield* statusOf(registry, "fx"))?.state, "Ready")
        yield* close
      })
  )
})

describe("Surfaces.matches", () => {
  it("a URI fits a template by its fixed parts", () => {
    assert.isTrue(Surfaces.matches("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/3"))
    assert.isFalse(Surfaces.matches("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/3"))
    assert.isTrue(Surfaces.matches("file:///{+path}", "file:///a/b.txt"))
    assert.isFalse(Surfaces.matches("demo://x/{id}", "demo://x/"))
  })
})

describe("Surfaces.uriRouter", () => {
  const offered = <A>(toolset: string, item: A) => ({ toolset, item, lastKnown: false })
  const catalog: Surfaces.ResourceCatalog = {
    complete: true,
    resources: [offered("a", { uri: "demo://x/listed", name: "listed" })],
    templates: [
      offered("b", { uriTemplate: "demo://x/{id}", name: "any x" }),
      offered("c", { uriTemplate: "demo://{kind}/{id}", name: "anything" })
    ],
    clashes: [],
    unsupported: [],
    version: 1
  }
  it("routes a listed URI to its toolset before any template, else to the first template that fits", () => {
    const route = Surfaces.uriRouter(catalog)
    assert.strictEqual(route("demo://x/listed"), "a")
    assert.strictEqual(route("demo://x/3"), "b")
    assert.strictEqual(route("demo://y/3"), "c")
    assert.isUndefined(route("other://y/3"))
    for (const uri of ["demo://x/listed", "demo://x/3", "demo://y/3", "other://y/3"]) {
      assert.strictEqual(Surfaces.routeUri(catalog, uri), route(uri))
    }
  })
})
