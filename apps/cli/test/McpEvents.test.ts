/**
 * One session's event store on the TestClock, at its default bounds (512 events, 1 MiB, 5
 * minutes): a replay sends what followed the client's last event on that event's stream, in order
 * and without priming events; past any bound the oldest events go, and an id that went is
 * unknown (the gateway then answers 400 and the client opens a new stream).
 */
import { assert, describe, it } from "@effect/vitest"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import * as McpEvents from "../src/McpEvents.ts"

const progress = (n: number, padding = ""): JSONRPCMessage => ({
  jsonrpc: "2.0",
  method: "notifications/progress",
  params: { progressToken: "p", progress: n, ...(padding === "" ? {} : { message: padding }) }
})

/** A store read from the test's clock, and a replay that collects what it sends. */
const setup = Effect.gen(function* () {
  const clock = yield* Clock.Clock
  const store = McpEvents.make(McpEvents.defaults, () => clock.currentTimeMillisUnsafe())
  const replay = (after: string) =>
    Effect.tryPromise(async () => {
      const sent: Array<[string, JSONRPCMessage]> = []
      const stream = await store.replayEventsAfter(after, {
        send: async (id, message) => {
          sent.push([id, message])
        }
      })
      return { stream, sent }
    })
  const known = (id: string) => Effect.promise(() => store.getStreamIdForEventId?.(id) ?? Promise.resolve(undefined))
  const store_ = (stream: string, message: JSONRPCMessage) => Effect.promise(() => store.storeEvent(stream, message))
  return { store: store_, replay, known }
})

/** A priming event as the SDK stores it: an empty object in place of a message. */
const priming: JSONRPCMessage = JSON.parse("{}")

describe("McpEvents", () => {
  it.effect("a stream is finished once its answer is stored: what followed an id of it, or nothing", () =>
    Effect.gen(function* () {
      const store = McpEvents.make()
      const put = (stream: string, message: JSONRPCMessage) => Effect.promise(() => store.storeEvent(stream, message))
      const first = yield* put("post-1", progress(1))
      yield* put("get", progress(9))
      const second = yield* put("post-1", progress(2))
      // Still running: the SDK's stream waits for the rest.
      assert.isUndefined(store.finishedAfter(first))
      const answer = yield* put("post-1", { jsonrpc: "2.0", id: 2, result: {} })
      assert.deepStrictEqual(
        store.finishedAfter(first)?.map((missed) => missed.id),
        [second, answer]
      )
      assert.deepStrictEqual(store.finishedAfter(answer), [])
      assert.isUndefined(store.finishedAfter("999"))
    })
  )

  it.effect("a replay sends what followed the last event on its stream, in order, without priming events", () =>
    Effect.gen(function* () {
      const { store, replay } = yield* setup
      const first = yield* store("a", priming)
      const ids: Array<string> = []
      for (const n of [1, 2, 3]) {
        ids.push(yield* store("a", progress(n)))
        yield* store("b", progress(100 + n))
      }
      yield* store("a", priming)
      const { stream, sent } = yield* replay(ids[0] ?? "")
      assert.strictEqual(stream, "a")
      assert.deepStrictEqual(sent, [
        [ids[1], progress(2)],
        [ids[2], progress(3)]
      ])
      assert.deepStrictEqual(
        (yield* replay(first)).sent.map(([, m]) => m),
        [progress(1), progress(2), progress(3)]
      )
    })
  )

  it.effect("keeps the last 512 events: the oldest go, and an id that went is unknown", () =>
    Effect.gen(function* () {
      const { store, replay, known } = yield* setup
      const ids: Array<string> = []
      for (let n = 0; n < McpEvents.defaults.events + 10; n++) ids.push(yield* store("a", progress(n)))
      for (const gone of ids.slice(0, 10)) assert.isUndefined(yield* known(gone))
      assert.strictEqual(yield* known(ids[10] ?? ""), "a")
      const { sent } = yield* replay(ids[10] ?? "")
      assert.strictEqual(sent.length, McpEvents.defaults.events - 1)
      assert.deepStrictEqual(sent.at(-1), [ids.at(-1), progress(McpEvents.defaults.events + 9)])
      const unknown = yield* Effect.flip(replay(ids[0] ?? ""))
      assert.include(String(unknown.cause), `no event ${ids[0]}`)
    })
  )

  it.effect("keeps at most 1 MiB: the oldest go first, and an event bigger than that is not kept at all", () =>
    Effect.gen(function* () {
      const { store, replay, known } = yield* setup
      // Four events of a quarter MiB each do not fit: the first goes when the fourth comes.
      const quarter = "x".repeat(McpEvents.defaults.bytes / 4 - 100)
      const ids: Array<string> = []
      for (const n of [1, 2, 3, 4]) ids.push(yield* store("a", progress(n, quarter)))
      assert.isUndefined(yield* known(ids[0] ?? ""))
      assert.deepStrictEqual(
        (yield* replay(ids[1] ?? "")).sent.map(([, m]) => m),
        [progress(3, quarter), progress(4, quarter)]
      )
      const huge = yield* store("a", progress(5, "x".repeat(McpEvents.defaults.bytes)))
      assert.isUndefined(yield* known(huge))
      // What was kept stays: one event too big for the store does not empty it.
      assert.strictEqual(yield* known(ids[3] ?? ""), "a")
    })
  )

  it.effect("counts bytes, not UTF-16 units", () =>
    Effect.gen(function* () {
      const { store, known } = yield* setup
      // Four events a little under a quarter MiB each fit; one of as many "é" weighs two of them.
      const count = McpEvents.defaults.bytes / 4 - 200
      const ids: Array<string> = []
      for (const n of [1, 2, 3, 4]) ids.push(yield* store("a", progress(n, "x".repeat(count))))
      assert.strictEqual(yield* known(ids[0] ?? ""), "a")
      const wide = yield* store("a", progress(5, "é".repeat(count)))
      assert.isUndefined(yield* known(ids[0] ?? ""))
      assert.isUndefined(yield* known(ids[1] ?? ""))
      assert.strictEqual(yield* known(ids[2] ?? ""), "a")
      assert.strictEqual(yield* known(wide), "a")
    })
  )

  it.effect("keeps events 5 minutes: older ones go, on the next store or lookup", () =>
    Effect.gen(function* () {
      const { store, replay, known } = yield* setup
      const old = yield* store("a", progress(1))
      yield* TestClock.adjust("4 minutes")
      const recent = yield* store("a", progress(2))
      yield* TestClock.adjust("61 seconds")
      assert.isUndefined(yield* known(old))
      assert.strictEqual(yield* known(recent), "a")
      const last = yield* store("a", progress(3))
      assert.deepStrictEqual(
        (yield* replay(recent)).sent.map(([id]) => id),
        [last]
      )
      yield* TestClock.adjust("301 seconds")
      assert.isUndefined(yield* known(recent))
      assert.isUndefined(yield* known(last))
    })
  )
})
