/**
 * The shared reprobe's bounds, on a real registry over a server script that counts its starts:
 * one reprobe per cooldown however often it is asked (a host calling a dead toolset's tool in a
 * loop), and the names it brought back once the server can start. Time is the TestClock's.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/testing/TestClock"
import * as Reprobe from "../src/Reprobe.ts"
import { config, fixtureEntry, fixtureServer, open, statusOf } from "./helpers.ts"

describe("Reprobe", () => {
  it.effect("within the cooldown a reprobe starts nothing; past it, one start brings the toolset back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-reprobe-"))
        const script = NodePath.join(dir, "server.sh")
        const starts = NodePath.join(dir, "starts")
        const count = () => (NodeFs.existsSync(starts) ? NodeFs.readFileSync(starts, "utf8").split("\n").length - 1 : 0)
        NodeFs.writeFileSync(script, `#!/bin/sh\necho start >> "${starts}"\nexit 1\n`, { mode: 0o755 })
        const entry = fixtureEntry("late", { command: script, lifecycle: { profile: "best-effort" } })
        const { registry, close } = yield* open(config([entry]))
        yield* registry.start
        assert.strictEqual(count(), 1)
        const reprobe = yield* Reprobe.make(registry, { cooldown: "10 seconds" })

        assert.deepStrictEqual(yield* reprobe.reprobe, [])
        assert.strictEqual(count(), 2, "the first reprobe tried again")
        NodeFs.writeFileSync(script, `#!/bin/sh\nexec "${process.execPath}" "${fixtureServer}"\n`, { mode: 0o755 })
        yield* TestClock.adjust("9 seconds")
        assert.deepStrictEqual(yield* reprobe.reprobe, [])
        assert.strictEqual(count(), 2, "no start within the cooldown")
        assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Stopped")

        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(yield* reprobe.reprobe, ["late"])
        assert.strictEqual((yield* statusOf(registry, "late"))?.state, "Ready")
        assert.deepStrictEqual(yield* reprobe.reprobe, [], "nothing is down: nothing to do")
        yield* close
      })
    )
  )
})
