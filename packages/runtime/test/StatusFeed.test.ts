/**
 * The status feed and its HTTP routes over a hand-written registry whose transitions the test
 * publishes: fan-out to 100 subscribers while one stops reading, resuming from an id, the
 * heartbeat, and the Host/token checks — no processes, so thousands of events cost nothing.
 */

import * as NodeCrypto from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Policy, type State } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HttpRouter from "effect/http/HttpRouter"
import * as Latch from "effect/Latch"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as HttpGate from "../src/HttpGate.ts"
import * as StatusFeed from "../src/internal/statusFeed.ts"
import * as StatusHttp from "../src/StatusHttp.ts"
import * as ToolsetRegistry from "../src/ToolsetRegistry.ts"

const snapshot = (state: State.State, since: number) => ({
  name: "fx",
  kind: "mcp-stdio",
  state,
  since,
  restarts: 0,
  attempt: 0,
  toolsVersion: 0
})

const unused = Effect.die("not used by the status feed")

/** A registry whose `events` are what the test publishes; nothing else is live. */
const fakeRegistry = (events: PubSub.PubSub<ToolsetRegistry.ToolsetEvent>): ToolsetRegistry.Registry => ({
  agent: "root",
  agents: Effect.succeed(["root"]),
  start: Effect.void,
  snapshot: Effect.succeed([snapshot("Ready", 0)]),
  status: Stream.empty,
  events: Stream.fromPubSub(events),
  catalog: (agent) =>
    Effect.fail(new ToolsetRegistry.UnknownAgent({ agent: agent ?? "root", message: "no catalog", known: [] })),
  catalogChanges: () => Stream.empty,
  callTool: () => unused,
  callToolNow: () => undefined,
  searchTools: () => unused,
  startToolset: () => Effect.void,
  stopToolset: () => Effect.void,
  restartToolset: (name) =>
    name === "fx"
      ? Effect.void
      : Effect.fail(
          new ToolsetRegistry.UnknownToolset({ toolset: name, message: `no toolset ${name}`, known: ["fx"] })
        ),
  inspect: (name) =>
    name === "fx"
      ? Effect.succeed({
          toolset: "fx",
          policy: Policy.defaults,
          tools: { complete: true, names: ["echo"] },
          stderr: ["listening"]
        })
      : Effect.fail(
          new ToolsetRegistry.UnknownToolset({ toolset: name, message: `no toolset ${name}`, known: ["fx"] })
        ),
  reprobe: unused,
  reload: () => unused,
  prompts: () => unused,
  getPrompt: () => unused,
  resources: () => unused,
  readResource: () => unused,
  getPromptNow: () => undefined,
  readResourceNow: () => undefined,
  subscribe: () => Stream.empty,
  complete: () => unused,
  logs: Stream.empty,
  listingChanges: Stream.empty
})

const transition = (i: number): ToolsetRegistry.ToolsetEvent => ({
  toolset: "fx",
  from: i % 2 === 0 ? "Ready" : "Restarting",
  snapshot: snapshot(i % 2 === 0 ? "Restarting" : "Ready", i)
})

/** A feed over a fake registry, and a way to publish `n` transitions into it. */
const setup = (options: StatusFeed.Options = {}) =>
  Effect.gen(function* () {
    const events = yield* PubSub.unbounded<ToolsetRegistry.ToolsetEvent>()
    const registry = fakeRegistry(events)
    const feed = yield* StatusFeed.make(registry, options)
    // The feed subscribes in a fiber of its own: publish only once it listens.
    yield* Effect.yieldNow
    const publish = (from: number, n: number, extra: Partial<State.StatusSnapshot> = {}) =>
      Effect.forEach(
        Array.from({ length: n }, (_, i) => {
          const t = transition(from + i)
          return { ...t, snapshot: { ...t.snapshot, ...extra } }
        }),
        (e) => PubSub.publish(events, e),
        {
          discard: true
        }
      )
    /** Until the feed has numbered `n` events: a new subscriber's snapshot carries the last id. */
    const numbered = (n: number) =>
      Effect.gen(function* () {
        for (;;) {
          const [first] = yield* feed.subscribe().pipe(Stream.take(1), Stream.runCollect)
          if ((first?.id ?? 0) >= n) return
          yield* Effect.yieldNow
        }
      })
    return { feed, publish, numbered }
  })

describe("StatusFeed", () => {
  it.effect("100 subscribers get every event in order while one that stopped reading is cut off, bounded", () =>
    Effect.gen(function* () {
      const { feed, publish } = yield* setup({ subscriberBuffer: 16 })
      const total = 2_000
      // Forked from this fiber (not from an Effect.forEach worker, whose end would interrupt them).
      const fast: Array<Fiber.Fiber<ReadonlyArray<StatusFeed.Event>>> = []
      for (let i = 0; i < 100; i++) {
        fast.push(
          yield* feed
            .subscribe(0)
            .pipe(Stream.take(total), Stream.runCollect, Effect.forkChild({ startImmediately: true }))
        )
      }
      const gate = yield* Latch.make()
      let slowSeen = 0
      const slow = yield* feed.subscribe(0).pipe(
        Stream.runForEach(() =>
          Effect.andThen(
            Effect.sync(() => slowSeen++),
            Latch.await(gate)
          )
        ),
        Effect.forkChild({ startImmediately: true })
      )
      while ((yield* feed.subscribers) < 101) yield* Effect.yieldNow
      yield* publish(0, total)
      for (const fiber of fast) {
        const got = yield* Fiber.join(fiber)
        assert.strictEqual(got.length, total)
        assert.deepStrictEqual(
          got.map((e) => e.id),
          Array.from({ length: total }, (_, i) => i + 1)
        )
      }
      // The slow one was dropped while the others went on; released, it ends with what it had.
      yield* Latch.open(gate)
      yield* Fiber.join(slow)
      assert.isBelow(slowSeen, 16 + 2)
      assert.strictEqual(yield* feed.subscribers, 0)
    }).pipe(Effect.scoped)
  )

  it.effect("resumes after Last-Event-ID from the history, or starts from a snapshot once it is gone", () =>
    Effect.gen(function* () {
      const { feed, publish, numbered } = yield* setup({ history: 4 })
      yield* publish(0, 10)
      yield* numbered(10)
      const resumed = yield* feed.subscribe(7).pipe(Stream.take(3), Stream.runCollect)
      assert.deepStrictEqual(
        resumed.map((e) => [e.id, e.event]),
        [
          [8, "transition"],
          [9, "transition"],
          [10, "transition"]
        ]
      )
      const tooOld = yield* feed.subscribe(2).pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(
        tooOld.map((e) => [e.id, e.event]),
        [[10, "snapshot"]]
      )
      assert.include(tooOld[0]?.data ?? "", '"toolset":"fx"')
    }).pipe(Effect.scoped)
  )

  it.effect("an id of an earlier process (a restart) resumes nothing: the client gets a snapshot", () =>
    Effect.gen(function* () {
      const before = yield* setup()
      yield* before.publish(0, 10)
      yield* before.numbered(10)
      // The restart: a new process, a new feed, its own first events.
      yield* TestClock.adjust("3 seconds")
      const after = yield* setup()
      const [start] = yield* after.feed.subscribe().pipe(Stream.take(1), Stream.runCollect)
      yield* after.publish(0, 12)
      yield* after.numbered((start?.id ?? 0) + 12)
      const [resumed] = yield* after.feed.subscribe(9).pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual([resumed?.event, resumed?.id], ["snapshot", (start?.id ?? 0) + 12])
      assert.isAbove(start?.id ?? 0, 10)
    }).pipe(Effect.scoped)
  )

  it.effect("a new subscriber's snapshot carries each toolset's states over the last hour", () =>
    Effect.gen(function* () {
      const { feed, publish, numbered } = yield* setup()
      yield* publish(0, 4)
      yield* numbered(4)
      const [first] = yield* feed.subscribe().pipe(Stream.take(1), Stream.runCollect)
      const data = JSON.parse(first?.data ?? "{}")
      assert.deepStrictEqual(
        data.timelines.fx.map((entry: { readonly state: string }) => entry.state),
        ["Ready", "Restarting", "Ready", "Restarting", "Ready"]
      )
      assert.strictEqual(data.timelines.fx[4].at, new Date(3).toISOString())
    }).pipe(Effect.scoped)
  )

  it.effect("a snapshot names the config, the agent, when the feed began and each toolset's policy", () =>
    Effect.gen(function* () {
      const { feed } = yield* setup({ config: "agent.yaml" })
      const [first] = yield* feed.subscribe().pipe(Stream.take(1), Stream.runCollect)
      const data = JSON.parse(first?.data ?? "{}")
      assert.strictEqual(data.config, "agent.yaml")
      assert.strictEqual(data.agent, "root")
      assert.strictEqual(data.startedAt, new Date(0).toISOString())
      assert.deepInclude(data.policies.fx, { restart: "on_failure", maxRestarts: 5 })
      assert.strictEqual(data.policies.fx.backoff.resetAfterMs, 30_000)
      assert.strictEqual(data.toolsets[0].attempt, 0)
    }).pipe(Effect.scoped)
  )

  it.effect("a timeline keeps the state each was entered from and the error it was entered with, cut short", () =>
    Effect.gen(function* () {
      const { feed, publish, numbered } = yield* setup()
      const crash = { tag: "ServerCrashed", message: `fx: server exited unexpectedly (code 3); ${"x".repeat(5_000)}` }
      yield* publish(0, 1, { lastError: crash })
      yield* publish(1, 1)
      yield* numbered(2)
      const [first] = yield* feed.subscribe().pipe(Stream.take(1), Stream.runCollect)
      const entries = JSON.parse(first?.data ?? "{}").timelines.fx
      assert.deepStrictEqual(
        entries.map(
          (e: { readonly state: string; readonly from?: string; readonly error?: { readonly tag: string } }) => [
            e.from,
            e.state,
            e.error?.tag
          ]
        ),
        [
          [undefined, "Ready", undefined],
          ["Ready", "Restarting", "ServerCrashed"],
          ["Restarting", "Ready", undefined]
        ]
      )
      assert.isBelow(entries[1].error.message.length, 1_100)
      assert.isTrue(entries[1].error.message.startsWith("fx: server exited unexpectedly (code 3)"))
    }).pipe(Effect.scoped)
  )
})

describe("StatusHttp", () => {
  const handler = (gate: HttpGate.Options = { host: "127.0.0.1" }) =>
    Effect.gen(function* () {
      const events = yield* PubSub.unbounded<ToolsetRegistry.ToolsetEvent>()
      const app = StatusHttp.layer({ heartbeat: "50 millis" }).pipe(
        Layer.provide([Layer.succeed(ToolsetRegistry.ToolsetRegistry)(fakeRegistry(events)), HttpGate.layer(gate)])
      )
      const web = HttpRouter.toWebHandler(app, { disableLogger: true })
      yield* Effect.addFinalizer(() => Effect.promise(() => web.dispose()))
      // A web Request has no Host of its own; a client's always does.
      return (path: string, init: { readonly method?: string; readonly headers?: Record<string, string> } = {}) =>
        Effect.promise(() =>
          web.handler(
            new Request(`http://127.0.0.1:8809${path}`, {
              ...init,
              headers: { host: "127.0.0.1:8809", ...init.headers }
            })
          )
        )
    })

  it.effect("an idle event stream sends a heartbeat", () =>
    Effect.gen(function* () {
      const request = yield* handler()
      const response = yield* request("/events")
      assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
      const body = response.body
      if (body === null) return assert.fail("no body")
      const text = yield* Effect.promise(async () => {
        const reader = body.pipeThrough(new TextDecoderStream()).getReader()
        let seen = ""
        while (!(seen.includes(": heartbeat") && seen.includes("event: snapshot"))) {
          const { value, done } = await reader.read()
          if (done) break
          seen += value
        }
        await reader.cancel()
        return seen
      })
      assert.include(text, "event: snapshot")
      assert.include(text, ": heartbeat")
    }).pipe(Effect.scoped)
  )

  it.effect(
    "a token guards every route but the probes and the page, on loopback or off; 404 for an unknown toolset",
    () =>
      Effect.gen(function* () {
        const local = yield* handler({ host: "127.0.0.1", token: "tok-123" })
        assert.strictEqual((yield* local("/status")).status, 401)
        assert.strictEqual((yield* local("/status", { headers: { authorization: "Bearer tok-123" } })).status, 200)
        assert.strictEqual((yield* local("/healthz")).status, 200)
        assert.strictEqual((yield* local("/")).status, 200)
        assert.strictEqual((yield* local("/toolsets/fx/restart", { method: "POST" })).status, 401)
        const authorized = { method: "POST", headers: { authorization: "Bearer tok-123" } }
        assert.strictEqual((yield* local("/toolsets/fx/restart", authorized)).status, 200)
        assert.strictEqual((yield* local("/toolsets/nope/restart", authorized)).status, 404)
        assert.strictEqual((yield* local("/toolsets/fx/explode", authorized)).status, 404)
        assert.strictEqual((yield* local("/stats")).status, 401)
        assert.strictEqual((yield* local("/toolsets/fx")).status, 401)
        assert.strictEqual((yield* local("/favicon.svg")).status, 200)
        const exposed = yield* handler({ host: "0.0.0.0", token: "tok-123" })
        assert.strictEqual((yield* exposed("/status")).status, 401)
        assert.strictEqual((yield* exposed("/status", { headers: { authorization: "Bearer tok-123" } })).status, 200)
        assert.strictEqual((yield* exposed("/healthz")).status, 200)
      }).pipe(Effect.scoped)
  )

  it.effect("one toolset's details: its policy, offered tools and stderr, as JSON; 404 for an unknown one", () =>
    Effect.gen(function* () {
      const request = yield* handler()
      const response = yield* request("/toolsets/fx")
      assert.strictEqual(response.status, 200)
      const body = JSON.parse(yield* Effect.promise(() => response.text()))
      assert.deepStrictEqual(body.tools, { complete: true, names: ["echo"] })
      assert.deepStrictEqual(body.stderr, ["listening"])
      assert.strictEqual(body.policy.callTimeoutMs, 60_000)
      assert.isNull(body.policy.health)
      assert.strictEqual((yield* request("/toolsets/nope")).status, 404)
      const stats = yield* request("/stats")
      assert.deepStrictEqual(yield* Effect.promise(() => stats.json()), { bucketMillis: 60_000, toolsets: {} })
    }).pipe(Effect.scoped)
  )

  it.effect("the page's policy allows exactly the inline script and style it serves, by their hashes", () =>
    Effect.gen(function* () {
      const request = yield* handler()
      const response = yield* request("/")
      const html = yield* Effect.promise(() => response.text())
      const policy = response.headers.get("content-security-policy") ?? ""
      const inline = (tag: string) => {
        const found = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(html)?.[1]
        return found === undefined ? assert.fail(`no inline ${tag}`) : found
      }
      const hash = (text: string) => `'sha256-${NodeCrypto.createHash("sha256").update(text).digest("base64")}'`
      assert.include(policy, `script-src ${hash(inline("script"))};`)
      assert.include(policy, `style-src ${hash(inline("style"))};`)
      assert.notInclude(policy, "unsafe-inline")
      assert.strictEqual(html.match(/<script>/g)?.length, 1)
      const icon = yield* request("/favicon.svg")
      assert.strictEqual(icon.headers.get("content-type"), "image/svg+xml")
      assert.include(yield* Effect.promise(() => icon.text()), "<svg")
    }).pipe(Effect.scoped)
  )
})
