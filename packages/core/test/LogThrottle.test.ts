/** Warnings a peer can cause at will are logged once per window and kind, with the count held back. */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { TestClock } from "effect/testing"
import * as LogThrottle from "../src/internal/logThrottle.ts"

describe("LogThrottle", () => {
  it.effect("logs the first of a kind, holds the rest of the window back, and counts them in the next", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const logger = Logger.make(({ message }) => {
        lines.push(String(Array.isArray(message) ? message[0] : message))
      })
      const throttle = LogThrottle.make(10_000)
      const warn = (kind: string, message: string) =>
        throttle.warn(kind, message).pipe(Effect.provide(Logger.layer([logger])))
      // A server that sent 30,000 requests to decline wrote 30,000 warnings.
      for (let i = 0; i < 1_000; i++) yield* warn("sampling", `declined #${i}`)
      yield* warn("roots", "declined roots")
      yield* TestClock.adjust("10 seconds")
      yield* warn("sampling", "declined again")
      assert.deepStrictEqual(lines, ["declined #0", "declined roots", "declined again (and 999 more like it before)"])
    })
  )

  it.effect("info lines share the throttle and keep their level", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        lines.push(`${logLevel} ${String(Array.isArray(message) ? message[0] : message)}`)
      })
      const throttle = LogThrottle.make(10_000)
      const info = (message: string) => throttle.info("roots", message).pipe(Effect.provide(Logger.layer([logger])))
      yield* info("declined roots")
      yield* info("declined roots again")
      yield* TestClock.adjust("10 seconds")
      yield* info("declined roots later")
      assert.deepStrictEqual(lines, ["Info declined roots", "Info declined roots later (and 1 more like it before)"])
    })
  )
})
