import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as State from "../src/State.ts"

const states: ReadonlyArray<State.State> = ["Stopped", "Starting", "Ready", "Degraded", "Restarting", "Failed"]

const full: State.StatusSnapshot = {
  name: "gopls",
  kind: "lsp",
  state: "Ready",
  since: 1_700_000_000_000,
  lastError: { tag: "ServerCrashed", message: "gopls: server crashed: exit 2" },
  restarts: 3,
  attempt: 1,
  toolsVersion: 2,
  pid: 4242,
  toolCount: 7
}

describe("State", () => {
  describe("states", () => {
    it("there are exactly six states", () => {
      assert.deepStrictEqual(State.State.literals, states)
      for (const state of states) assert.isTrue(Schema.is(State.State)(state), state)
    })

    it("a state outside the six is rejected", () => {
      assert.isFalse(Schema.is(State.State)("Running"))
      assert.isFalse(Schema.is(State.State)("ready"))
      assert.throws(() => Schema.decodeUnknownSync(State.State)(2))
    })

    it("isTerminal holds only for Stopped and Failed", () => {
      assert.deepStrictEqual(states.filter(State.isTerminal), ["Stopped", "Failed"])
    })

    it("isUsable holds only for Ready and Degraded", () => {
      assert.deepStrictEqual(states.filter(State.isUsable), ["Ready", "Degraded"])
    })

    it("no state is both terminal and usable", () => {
      for (const state of states) assert.isFalse(State.isTerminal(state) && State.isUsable(state), state)
    })
  })

  describe("StatusSnapshot", () => {
    it("encodes to plain JSON and decodes back to an equal snapshot", () => {
      const encoded = Schema.encodeSync(State.StatusSnapshot)(full)
      assert.deepStrictEqual(encoded, {
        name: "gopls",
        kind: "lsp",
        state: "Ready",
        since: 1_700_000_000_000,
        lastError: { tag: "ServerCrashed", message: "gopls: server crashed: exit 2" },
        restarts: 3,
        attempt: 1,
        toolsVersion: 2,
        pid: 4242,
        toolCount: 7
      })
      const decoded = Schema.decodeUnknownSync(State.StatusSnapshot)(JSON.parse(JSON.stringify(encoded)))
      assert.deepStrictEqual(decoded, full)
    })

    it("the optional fields may be absent", () => {
      const decoded = Schema.decodeUnknownSync(State.StatusSnapshot)({
        name: "fs",
        kind: "mcp",
        state: "Stopped",
        since: 0,
        restarts: 0,
        attempt: 0,
        toolsVersion: 0
      })
      assert.strictEqual(decoded.state, "Stopped")
      assert.isUndefined(decoded.lastError)
      assert.isUndefined(decoded.pid)
      assert.isUndefined(decoded.toolCount)
      assert.isFalse("lastError" in decoded)
      const encoded = Schema.encodeSync(State.StatusSnapshot)(decoded)
      assert.deepStrictEqual(Object.keys(encoded).sort(), [
        "attempt",
        "kind",
        "name",
        "restarts",
        "since",
        "state",
        "toolsVersion"
      ])
    })

    it("decoding rejects a bad state, a fractional restart count and a missing name", () => {
      const base = { name: "fs", kind: "mcp", state: "Ready", since: 0, restarts: 0, attempt: 0, toolsVersion: 0 }
      const decode = Schema.decodeUnknownSync(State.StatusSnapshot)
      assert.doesNotThrow(() => decode(base))
      assert.throws(() => decode({ ...base, state: "Exploded" }))
      assert.throws(() => decode({ ...base, restarts: 1.5 }))
      const { name: _name, ...nameless } = base
      assert.throws(() => decode(nameless))
    })

    it("a Transition carries the previous state and the new snapshot, and round-trips", () => {
      const transition: State.Transition = { from: "Restarting", snapshot: full }
      const encoded = Schema.encodeSync(State.Transition)(transition)
      assert.strictEqual(encoded.from, "Restarting")
      assert.strictEqual(encoded.snapshot.state, "Ready")
      const decoded = Schema.decodeUnknownSync(State.Transition)(encoded)
      assert.deepStrictEqual(decoded, transition)
    })
  })
})
