import { assert, describe, it } from "@effect/vitest"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as ToolCache from "../src/internal/toolCache.ts"

class ListFailed extends Data.TaggedError("ListFailed")<{ readonly version: number }> {}

/**
 * An in-memory server: every list call takes one second (under the TestClock) and returns the next version of its
 * listing ("v1", "v2", ...). The version is taken when the call starts, so a result names the fetch that made it.
 */
const makeServer = (options?: { readonly failing?: ReadonlyArray<number> }) => {
  let version = 0
  let interrupted = 0
  const list: Effect.Effect<string, ListFailed> = Effect.suspend(() => {
    version += 1
    const at = version
    return Effect.sleep("1 second").pipe(
      Effect.andThen(
        options?.failing?.includes(at) ? Effect.fail(new ListFailed({ version: at })) : Effect.succeed(`v${at}`)
      ),
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          interrupted += 1
        })
      )
    )
  })
  return { list, interrupted: () => interrupted }
}

/** Starts a get now, so the fetch it triggers is in flight before the test moves the clock. */
const forkGet = <A, E>({ get }: ToolCache.ToolCache<A, E>) => get.pipe(Effect.forkChild({ startImmediately: true }))

describe("ToolCache", () => {
  it.effect("the first get fetches; a second get returns the cached value without fetching", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      assert.strictEqual(yield* cache.fetches, 0)
      const first = yield* forkGet(cache)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(first), "v1")
      assert.strictEqual(yield* cache.fetches, 1)
      assert.strictEqual(yield* cache.get, "v1")
      assert.strictEqual(yield* cache.fetches, 1)
    })
  )

  it.effect("concurrent gets of one generation share one fetch", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      const readers = yield* Effect.all([cache.get, cache.get, cache.get], { concurrency: "unbounded" }).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      yield* TestClock.adjust("500 millis")
      const late = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* Fiber.join(readers), ["v1", "v1", "v1"])
      assert.strictEqual(yield* Fiber.join(late), "v1")
      assert.strictEqual(yield* cache.fetches, 1)
    })
  )

  it.effect("current is undefined before the first fetch and after invalidate, and the value once fetched", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      assert.isUndefined(yield* cache.current)
      const reader = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      assert.isUndefined(yield* cache.current, "a fetch in flight is not current yet")
      assert.isUndefined(cache.currentUnsafe())
      yield* TestClock.adjust("500 millis")
      yield* Fiber.join(reader)
      assert.strictEqual(yield* cache.current, "v1")
      assert.strictEqual(cache.currentUnsafe(), "v1", "the synchronous read sees the same listing")
      yield* cache.invalidate
      assert.isUndefined(yield* cache.current)
      assert.isUndefined(cache.currentUnsafe())
      assert.strictEqual(yield* cache.fetches, 1, "current never fetches")
    })
  )

  it.effect("invalidate makes the next get fetch again", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      const first = yield* forkGet(cache)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(first), "v1")
      yield* cache.invalidate
      const second = yield* forkGet(cache)
      assert.strictEqual(yield* cache.fetches, 2)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(second), "v2")
      assert.strictEqual(yield* cache.current, "v2")
      cache.invalidateUnsafe()
      assert.isUndefined(yield* cache.current)
      const third = yield* forkGet(cache)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(third), "v3")
      assert.strictEqual(yield* cache.fetches, 3)
    })
  )

  it.effect("an invalidation during a fetch is not lost: the raced result is not stored and the get refetches", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      const reader = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      yield* cache.invalidate
      yield* TestClock.adjust("500 millis")
      assert.isUndefined(yield* cache.current, "the raced listing v1 is not kept")
      assert.strictEqual(yield* cache.fetches, 2, "the get that started the raced fetch fetched again")
      assert.isUndefined(reader.pollUnsafe(), "the get waits for the refetch")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(reader), "v2")
      assert.strictEqual(yield* cache.current, "v2")
      assert.strictEqual(yield* cache.fetches, 2)
    })
  )

  it.effect("a failed fetch is not cached, its typed error reaches the caller, and the next get fetches again", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer({ failing: [1] }).list)
      const failing = yield* Effect.flip(cache.get).pipe(Effect.forkChild({ startImmediately: true }))
      yield* TestClock.adjust("1 second")
      const error = yield* Fiber.join(failing)
      assert.instanceOf(error, ListFailed)
      assert.strictEqual(error.version, 1)
      assert.isUndefined(yield* cache.current)
      const retry = yield* forkGet(cache)
      assert.strictEqual(yield* cache.fetches, 2)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(retry), "v2")
      assert.strictEqual(yield* cache.current, "v2")
    })
  )

  it.effect("a reader interrupted mid-fetch does not cancel the fetch for the other readers", () =>
    Effect.gen(function* () {
      const server = makeServer()
      const cache = yield* ToolCache.make(server.list)
      const quitter = yield* forkGet(cache)
      const waiter = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      yield* Fiber.interrupt(quitter)
      const quit = yield* Fiber.await(quitter)
      assert.isTrue(Exit.hasInterrupts(quit))
      yield* TestClock.adjust("500 millis")
      assert.strictEqual(yield* Fiber.join(waiter), "v1")
      assert.strictEqual(yield* cache.fetches, 1)
      assert.strictEqual(server.interrupted(), 0)
      assert.strictEqual(yield* cache.current, "v1")
    })
  )

  it.effect("a server changing its list nonstop cannot livelock a reader: get gives up with the last value", () =>
    Effect.gen(function* () {
      const server = makeServer()
      let listChanged = () => {}
      // Every list response is followed by a list_changed notification, so every fetch is raced.
      const cache = yield* ToolCache.make(server.list.pipe(Effect.tap(() => Effect.sync(() => listChanged()))))
      listChanged = cache.invalidateUnsafe
      const reader = yield* forkGet(cache)
      yield* TestClock.adjust("1 minute")
      const value = yield* Fiber.join(reader)
      const fetches = yield* cache.fetches
      assert.isAtMost(fetches, 4)
      assert.strictEqual(fetches, 4, "one fetch and three retries")
      assert.strictEqual(value, `v${fetches}`, "the value of the last fetch")
      assert.isUndefined(yield* cache.current, "a raced value is returned but not stored")
    })
  )

  it.effect("stored emits the last stored value, then every value stored afterwards in order, never a raced one", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer().list)
      const early = yield* cache.stored.pipe(
        Stream.take(3),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      const first = yield* forkGet(cache)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(first), "v1")
      yield* cache.invalidate
      const raced = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      yield* cache.invalidate
      yield* TestClock.adjust("1500 millis")
      assert.strictEqual(yield* Fiber.join(raced), "v3", "v2 was raced")
      const late = yield* cache.stored.pipe(
        Stream.take(2),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* cache.invalidate
      const third = yield* forkGet(cache)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(third), "v4")
      assert.deepStrictEqual(yield* Fiber.join(early), ["v1", "v3", "v4"])
      assert.deepStrictEqual(yield* Fiber.join(late), ["v3", "v4"])
    })
  )

  it.effect("closing the cache's scope interrupts a fetch in flight", () =>
    Effect.gen(function* () {
      const server = makeServer()
      const scope = yield* Scope.make()
      const cache = yield* ToolCache.make(server.list).pipe(Scope.provide(scope))
      const reader = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      assert.strictEqual(yield* cache.fetches, 1)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(server.interrupted(), 1)
      yield* TestClock.adjust("1 second")
      assert.isUndefined(yield* cache.current)
      const released = yield* Fiber.await(reader)
      assert.isTrue(Exit.isFailure(released))
    })
  )

  it.effect("closing the cache's scope releases a reader waiting on the fetch in flight", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const cache = yield* ToolCache.make(makeServer().list).pipe(Scope.provide(scope))
      const reader = yield* forkGet(cache)
      yield* TestClock.adjust("500 millis")
      yield* Scope.close(scope, Exit.void)
      const waited = yield* Fiber.await(reader).pipe(
        Effect.timeoutOption("1 second"),
        Effect.forkChild({ startImmediately: true })
      )
      yield* TestClock.adjust("1 second")
      assert.isTrue(Option.isSome(yield* Fiber.join(waited)), "the reader hangs forever")
    })
  )

  it.effect("a get after the cache's scope closed does not hang", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const cache = yield* ToolCache.make(makeServer().list).pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      const waited = yield* Effect.exit(cache.get).pipe(
        Effect.timeoutOption("1 second"),
        Effect.forkChild({ startImmediately: true })
      )
      yield* TestClock.adjust("1 second")
      assert.isTrue(Option.isSome(yield* Fiber.join(waited)), "the get hangs forever")
    })
  )

  it.effect("a fetch that fails after an invalidation raced it is retried, like a raced success", () =>
    Effect.gen(function* () {
      const cache = yield* ToolCache.make(makeServer({ failing: [1] }).list)
      const reader = yield* Effect.exit(cache.get).pipe(Effect.forkChild({ startImmediately: true }))
      yield* TestClock.adjust("500 millis")
      yield* cache.invalidate
      yield* TestClock.adjust("1500 millis")
      assert.deepStrictEqual(yield* Fiber.join(reader), Exit.succeed("v2"))
      assert.strictEqual(yield* cache.fetches, 2)
    })
  )
})
