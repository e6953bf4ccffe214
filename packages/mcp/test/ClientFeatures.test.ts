/**
 * Sampling, elicitation and roots against a real server (server-everything over stdio): the
 * client declares what the app provides and nothing else, the server's requests reach the
 * provided service with the toolset and the call's origin, the server sees the answers, a request
 * whose call has no known origin is declined, and all of it holds after a SIGKILL of the server.
 */
import * as NodeOs from "node:os"
import * as NodeUrl from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { CallOrigin, Redaction } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Elicitation from "../src/Elicitation.ts"
import * as McpSpec from "../src/McpSpec.ts"
import type * as McpToolset from "../src/McpToolset.ts"
import * as Roots from "../src/Roots.ts"
import type * as Sampling from "../src/Sampling.ts"
import { everythingStdio, openEverything, textOf, until } from "./helpers.ts"

const open = openEverything

const toolNames = (toolset: McpToolset.McpToolset) =>
  Effect.map(toolset.tools, (listing) => listing.items.map((tool) => tool.name))

const alice: CallOrigin.CallOrigin = { key: "session-alice" }

/** A sampling service that records what it was asked and answers with a fixed text. */
const recordingSampling = (
  seen: Array<Sampling.Request>,
  options: Partial<Sampling.Service> = {}
): Sampling.Service => ({
  createMessage: (request) =>
    Effect.sync(() => {
      seen.push(request)
      return {
        role: "assistant" as const,
        content: { type: "text" as const, text: "sampled: 42" },
        model: "test-model"
      }
    }),
  tools: false,
  withoutOrigin: "decline",
  ...options
})

describe("client features of server-everything", () => {
  it.live("without a provider nothing is declared, so the server offers no tool that needs one", () =>
    Effect.gen(function* () {
      const { toolset, close } = yield* open({ features: {} })
      const names = yield* toolNames(toolset)
      assert.include(names, "echo")
      for (const name of ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"]) {
        assert.notInclude(names, name)
      }
      const refused = yield* Effect.flip(toolset.callTool("trigger-sampling-request", { prompt: "hi" }))
      assert.strictEqual(refused._tag, "ToolNotFound")
      yield* close
    })
  )

  it.live("a sampling request is answered by the provided service, with the toolset and the call's origin", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const { toolset, close } = yield* open({ features: { sampling: recordingSampling(seen) } })
      const names = yield* toolNames(toolset)
      assert.include(names, "trigger-sampling-request")
      assert.notInclude(names, "trigger-elicitation-request")
      const result = yield* toolset
        .callTool("trigger-sampling-request", { prompt: "the answer?", maxTokens: 20 })
        .pipe(CallOrigin.attach(alice))
      assert.include(textOf(result), "sampled: 42")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0]?.toolset, "everything")
      assert.deepStrictEqual(seen[0]?.origin, alice)
      assert.strictEqual(seen[0]?.params.maxTokens, 20)
      const content = seen[0]?.params.messages[0]?.content
      assert.include(content !== undefined && "text" in content ? String(content.text) : "", "the answer?")
      yield* close
    })
  )

  it.live("a secret the configs hold is masked in what a server asks before the service sees it", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const secret = "Zx9kQ2mP7vL4nR8tY1wE"
      const { toolset, close } = yield* open({ features: { sampling: recordingSampling(seen) } }).pipe(
        Effect.provideService(Redaction.Current, Redaction.make([secret]))
      )
      yield* toolset
        .callTool("trigger-sampling-request", { prompt: `summarize the account of key ${secret}` })
        .pipe(CallOrigin.attach(alice))
      // Handed on as the server wrote it, the prompt took the secret to the model.
      const asked = JSON.stringify(seen[0]?.params)
      assert.notInclude(asked, secret)
      assert.include(asked, `summarize the account of key ${Redaction.mask}`)
      yield* close
    })
  )

  it.live("at most 4 of a server's sampling requests are answered at once; the rest are refused, not queued", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      let inService = 0
      let most = 0
      const slow = recordingSampling([], {
        createMessage: () =>
          Effect.gen(function* () {
            inService += 1
            most = Math.max(most, inService)
            yield* Deferred.await(release)
            inService -= 1
            return { role: "assistant" as const, content: { type: "text" as const, text: "sampled" }, model: "m" }
          })
      })
      const { toolset, close } = yield* open({ features: { sampling: slow } })
      const calls = yield* Effect.forEach(
        Array.from({ length: 6 }, (_, i) => i),
        (i) =>
          Effect.forkChild(
            toolset.callTool("trigger-sampling-request", { prompt: `p${i}` }).pipe(CallOrigin.attach(alice)),
            {
              startImmediately: true
            }
          )
      )
      // Four get in and wait; the two past the bound are refused at once, so their calls end first.
      yield* Effect.sync(
        () => inService === 4 && calls.filter((call) => call.pollUnsafe() !== undefined).length === 2
      ).pipe(Effect.repeat({ until: (settled) => settled, schedule: Schedule.spaced("10 millis"), times: 1000 }))
      yield* Deferred.succeed(release, undefined)
      const results = yield* Fiber.joinAll(calls)
      assert.strictEqual(most, 4)
      const texts = results.map(textOf)
      assert.strictEqual(texts.filter((t) => t.includes("sampled")).length, 4)
      assert.strictEqual(texts.filter((t) => t.includes("4 are being answered already")).length, 2)
      yield* close
    })
  )

  it.live("the fast path (callToolNow) carries its origin too", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const { toolset, close } = yield* open({ features: { sampling: recordingSampling(seen) } })
      const exit = yield* Effect.promise(
        () =>
          toolset.callToolNow("trigger-sampling-request", { prompt: "fast" }, undefined, alice) ??
          Promise.reject(new Error("the toolset is ready: the call should be sent at once"))
      )
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(seen[0]?.origin, alice)
      yield* close
    })
  )

  it.live("a request whose call named no origin is declined by default, and handled when the service says so", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const declining = yield* open({ features: { sampling: recordingSampling(seen) } })
      const declined = yield* declining.toolset.callTool("trigger-sampling-request", { prompt: "who?" })
      assert.isTrue(declined.isError)
      assert.include(textOf(declined), "declined")
      assert.strictEqual(seen.length, 0)
      yield* declining.close
      const handling = yield* open({ features: { sampling: recordingSampling(seen, { withoutOrigin: "handle" }) } })
      const handled = yield* handling.toolset.callTool("trigger-sampling-request", { prompt: "anyone" })
      assert.include(textOf(handled), "sampled: 42")
      assert.strictEqual(seen[0]?.origin, undefined)
      yield* handling.close
    })
  )

  it.live("while calls of two origins are in flight, whose request it is cannot be told: it is declined", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const { toolset, close } = yield* open({ features: { sampling: recordingSampling(seen) } })
      const long = yield* toolset
        .callTool("trigger-long-running-operation", { duration: 5, steps: 5 })
        .pipe(CallOrigin.attach({ key: "session-bob" }), Effect.forkChild({ startImmediately: true }))
      const declined = yield* toolset
        .callTool("trigger-sampling-request", { prompt: "mine?" })
        .pipe(CallOrigin.attach(alice))
      assert.include(textOf(declined), "declined")
      assert.strictEqual(seen.length, 0)
      yield* Fiber.interrupt(long)
      yield* close
    })
  )

  it.live("elicitation in form and URL modes reaches the service decoded; the server sees the answer", () =>
    Effect.gen(function* () {
      const seen: Array<Elicitation.Request> = []
      const elicitation: Elicitation.Service = {
        elicit: (request) =>
          Effect.sync(() => {
            seen.push(request)
            return request.params.mode === "form"
              ? { action: "accept" as const, content: { name: "Ada Lovelace", check: true } }
              : { action: "accept" as const }
          }),
        modes: { form: true, url: true },
        withoutOrigin: "decline"
      }
      const { toolset, close } = yield* open({ features: { elicitation } })
      const form = yield* toolset.callTool("trigger-elicitation-request", {}).pipe(CallOrigin.attach(alice))
      assert.include(textOf(form), "User provided the requested information")
      assert.include(JSON.stringify(form.content), "Ada Lovelace")
      const asked = seen[0]
      assert.strictEqual(asked?.params.mode, "form")
      if (asked?.params.mode === "form") assert.property(asked.params.requestedSchema.properties, "name")
      assert.deepStrictEqual(asked?.origin, alice)
      const url = yield* toolset
        .callTool("trigger-url-elicitation", { url: "https://example.com/login" })
        .pipe(CallOrigin.attach(alice))
      assert.include(textOf(url), "completed the URL elicitation")
      const opened = seen[1]?.params
      assert.strictEqual(opened?.mode === "url" ? opened.url : "", "https://example.com/login")
      // What the server sends is checked before the app sees it: a URL to open must be http(s).
      const hostile = yield* toolset
        .callTool("trigger-url-elicitation", { url: "file:///etc/passwd" })
        .pipe(CallOrigin.attach(alice))
      assert.isTrue(hostile.isError)
      assert.include(textOf(hostile), "elicitation/create refused")
      assert.strictEqual(seen.length, 2)
      yield* close
    })
  )

  it.live("roots from a provided layer: each toolset's defaults (the folder its server runs in)", () =>
    Effect.gen(function* () {
      const folder = NodeOs.tmpdir()
      const spec = McpSpec.Stdio.make({ ...everythingStdio(), cwd: folder })
      const { toolset, close } = yield* open({ spec }).pipe(Effect.provide(Roots.layer))
      const listed = yield* toolset.callTool("get-roots-list", {})
      assert.include(textOf(listed), NodeUrl.pathToFileURL(folder).href)
      assert.notInclude(yield* toolNames(toolset), "trigger-sampling-request")
      yield* close
    })
  )

  it.live("roots of the app's own: a change is notified and the server asks again", () =>
    Effect.gen(function* () {
      const current = yield* SubscriptionRef.make<ReadonlyArray<string>>(["/srv/first"])
      const roots = Roots.make(
        () => Effect.map(SubscriptionRef.get(current), (folders) => folders.map(Roots.ofFolder)),
        Stream.map(Stream.drop(SubscriptionRef.changes(current), 1), () => undefined)
      )
      const { toolset, close } = yield* open({ features: { roots } })
      assert.include(textOf(yield* toolset.callTool("get-roots-list", {})), "file:///srv/first")
      const logs = yield* Effect.forkChild(
        Stream.runHead(Stream.filter(toolset.logs, (log) => String(log.data).startsWith("Roots updated"))),
        { startImmediately: true }
      )
      yield* SubscriptionRef.set(current, ["/srv/second"])
      yield* Fiber.join(logs)
      assert.include(textOf(yield* toolset.callTool("get-roots-list", {})), "file:///srv/second")
      yield* close
    })
  )

  it.live(
    "roots the app declines: the server gets an error, not a list, and asks again for a call, with its origin",
    () =>
      Effect.gen(function* () {
        const asked: Array<string | undefined> = []
        const roots = Roots.make((request) => {
          asked.push(request.origin?.key)
          return request.origin === undefined
            ? Effect.fail(new Roots.Declined({ toolset: request.toolset, message: "no call asked for them" }))
            : Effect.succeed([Roots.ofFolder(`/srv/${request.origin.key}`)])
        })
        const { toolset, close } = yield* open({ features: { roots } })
        // server-everything asks once it is up, when no call is in flight: declined, so it keeps no list and asks again.
        yield* Effect.sleep("50 millis").pipe(Effect.repeat({ until: () => asked.length > 0 }))
        const listed = yield* toolset.callTool("get-roots-list", {}).pipe(CallOrigin.attach(alice))
        assert.include(textOf(listed), "file:///srv/session-alice")
        assert.deepStrictEqual(asked, [undefined, "session-alice"])
        yield* close
      })
  )

  it.live("across a SIGKILL the next session declares the same capabilities and is answered the same way", () =>
    Effect.gen(function* () {
      const seen: Array<Sampling.Request> = []
      const { toolset, close } = yield* open({ features: { sampling: recordingSampling(seen) } })
      const pid = (yield* toolset.state).pid ?? 0
      process.kill(pid, "SIGKILL")
      yield* until(toolset, (s) => s.state === "Ready" && s.pid !== pid)
      assert.include(yield* toolNames(toolset), "trigger-sampling-request")
      const result = yield* toolset
        .callTool("trigger-sampling-request", { prompt: "again" })
        .pipe(CallOrigin.attach(alice))
      assert.include(textOf(result), "sampled: 42")
      assert.deepStrictEqual(seen[0]?.origin, alice)
      yield* close
    })
  )
})
