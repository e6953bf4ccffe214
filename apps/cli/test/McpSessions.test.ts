/**
 * The session table on the TestClock: a session nobody uses is closed between `idle` and 1.5 ×
 * `idle`, one with a request or stream open never is, the cap counts sessions being opened, and
 * closing the scope closes whatever is left.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { TestClock } from "effect/testing"
import * as McpSessions from "../src/McpSessions.ts"

/** A session that records its closing and, as the transport's onclose does, leaves the table. */
const session = (closed: Array<string>, id: string, table: () => McpSessions.Table<McpSessions.Session>) => ({
  close: Effect.sync(() => {
    closed.push(id)
    table().remove(id)
  })
})

const setup = (options: McpSessions.Options) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const table = yield* McpSessions.make(options).pipe(Scope.provide(scope))
    const closed: Array<string> = []
    const add = (id: string) => {
      const opening = table.open()
      if (opening === undefined) return false
      opening.add(
        id,
        session(closed, id, () => table)
      )
      opening.done()
      return true
    }
    return { table, closed, add, close: Scope.close(scope, Exit.void) }
  })

describe("McpSessions", () => {
  it.effect("closes a session unused for `idle` within 1.5 × idle, and not before idle", () =>
    Effect.gen(function* () {
      const { table, closed, add } = yield* setup({ idle: Duration.seconds(10), max: 10 })
      add("a")
      yield* TestClock.adjust("9 seconds")
      assert.deepStrictEqual(closed, [])
      add("b")
      yield* TestClock.adjust("6 seconds")
      assert.deepStrictEqual(closed, ["a"])
      assert.strictEqual(table.size(), 1)
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(closed, ["a", "b"])
      assert.strictEqual(table.size(), 0)
      assert.isUndefined(table.enter("a"))
    })
  )

  it.effect("a session with a request or stream open is never idle; its idle time starts when the last ends", () =>
    Effect.gen(function* () {
      const { table, closed, add } = yield* setup({ idle: Duration.seconds(10), max: 10 })
      add("streaming")
      assert.isDefined(table.enter("streaming"))
      assert.isDefined(table.enter("streaming"))
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(closed, [])
      table.leave("streaming")
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(closed, [])
      table.leave("streaming")
      yield* TestClock.adjust("9 seconds")
      assert.deepStrictEqual(closed, [])
      yield* TestClock.adjust("6 seconds")
      assert.deepStrictEqual(closed, ["streaming"])
    })
  )

  it.effect("the cap counts sessions open and being opened; a place is freed by a close or a failed initialize", () =>
    Effect.gen(function* () {
      const { table, add } = yield* setup({ idle: Duration.minutes(10), max: 2 })
      assert.isTrue(add("a"))
      const pending = table.open()
      assert.isDefined(pending)
      assert.isUndefined(table.open())
      // The initialize failed: no session took the place.
      pending?.done()
      pending?.done()
      assert.isTrue(add("b"))
      assert.isFalse(add("c"))
      assert.strictEqual(table.size(), 2)
      table.remove("a")
      assert.isTrue(add("c"))
    })
  )

  it.effect("closing the scope closes every session left and stops sweeping", () =>
    Effect.gen(function* () {
      const { table, closed, add, close } = yield* setup({ idle: Duration.seconds(10), max: 10 })
      add("a")
      add("b")
      table.enter("b")
      yield* close
      assert.sameMembers(closed, ["a", "b"])
      assert.strictEqual(table.size(), 0)
    })
  )
})
