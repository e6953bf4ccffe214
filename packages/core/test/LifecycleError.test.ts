import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as LifecycleError from "../src/LifecycleError.ts"

type ByTag = { readonly [K in LifecycleError.Tag]: Extract<LifecycleError.LifecycleError, { readonly _tag: K }> }

const cause = new Error("the underlying failure")

/** One instance of every class, keyed by tag: the type makes the table total over the union. */
const samples: ByTag = {
  TransportError: new LifecycleError.TransportError({ toolset: "mcp", message: "transport failure", cause }),
  ServerUnavailable: new LifecycleError.ServerUnavailable({ toolset: "mcp", message: "server unavailable", cause }),
  ServerCrashed: new LifecycleError.ServerCrashed({ toolset: "mcp", message: "server crashed", cause }),
  InitTimeout: new LifecycleError.InitTimeout({
    toolset: "mcp",
    message: "initialize timed out",
    cause,
    afterMillis: 5
  }),
  InitNotification: new LifecycleError.InitNotification({ toolset: "mcp", message: "initialized failed", cause }),
  CapabilityMissing: new LifecycleError.CapabilityMissing({ toolset: "mcp", message: "no capability", cause }),
  AuthRequired: new LifecycleError.AuthRequired({ toolset: "mcp", message: "authentication required", cause }),
  SessionMissing: new LifecycleError.SessionMissing({ toolset: "mcp", message: "session missing", cause }),
  NotStarted: new LifecycleError.NotStarted({ toolset: "mcp", message: "toolset not started", cause }),
  CallTimeout: new LifecycleError.CallTimeout({ toolset: "mcp", message: "call timed out", cause, afterMillis: 9 })
}

const all: ReadonlyArray<LifecycleError.LifecycleError> = Object.values(samples)

const encode = Schema.encodeSync(LifecycleError.LifecycleError)
const decode = Schema.decodeUnknownSync(LifecycleError.LifecycleError)

const roundTrip = (error: LifecycleError.LifecycleError): LifecycleError.LifecycleError =>
  decode(JSON.parse(JSON.stringify(encode(error))))

describe("LifecycleError", () => {
  describe("classes", () => {
    it("every class carries its toolset, message and cause", () => {
      assert.strictEqual(all.length, 10)
      for (const error of all) {
        assert.strictEqual(error.toolset, "mcp", error._tag)
        assert.isString(error.message, error._tag)
        assert.isNotEmpty(error.message, error._tag)
        assert.strictEqual(error.cause, cause, error._tag)
      }
    })

    it("every class is an Error, so it has a stack and prints its message", () => {
      for (const error of all) {
        assert.instanceOf(error, Error, error._tag)
        assert.include(String(error), error.message)
      }
    })

    it("the cause is optional", () => {
      const error = new LifecycleError.SessionMissing({ toolset: "remote", message: "session missing" })
      assert.isUndefined(error.cause)
    })

    it("the tags are distinct and each is the key it is filed under", () => {
      const tags = all.map((error) => error._tag)
      assert.strictEqual(new Set(tags).size, tags.length)
      for (const [tag, error] of Object.entries(samples)) assert.strictEqual(error._tag, tag)
    })

    it("no error is an instance of another class", () => {
      for (const a of all) {
        for (const b of all) {
          if (a !== b) assert.notStrictEqual(a.constructor, b.constructor, `${a._tag} vs ${b._tag}`)
        }
      }
    })

    it.effect("an error can be yielded to fail and caught by its tag", () =>
      Effect.gen(function* () {
        const program = Effect.gen(function* () {
          return yield* samples.AuthRequired
        })
        const caught = yield* program.pipe(Effect.catchTag("AuthRequired", (e) => Effect.succeed(`login ${e.toolset}`)))
        assert.strictEqual(caught, "login mcp")
        const flipped = yield* Effect.flip(program)
        assert.strictEqual(flipped, samples.AuthRequired)
      })
    )
  })

  describe("schema", () => {
    it("isLifecycleError recognises every class and rejects look-alikes", () => {
      for (const error of all) assert.isTrue(LifecycleError.isLifecycleError(error), error._tag)
      assert.isFalse(LifecycleError.isLifecycleError(new Error("transport failure")))
      assert.isFalse(LifecycleError.isLifecycleError({ _tag: "TransportError", toolset: "mcp", message: "m" }))
      assert.isFalse(LifecycleError.isLifecycleError(null))
      assert.isFalse(LifecycleError.isLifecycleError("TransportError"))
    })

    it("the union encodes each class to its tag, fields and an encoded cause", () => {
      for (const error of all) {
        const encoded = encode(error)
        assert.strictEqual(encoded._tag, error._tag)
        assert.strictEqual(encoded.toolset, "mcp")
        assert.strictEqual(encoded.message, error.message)
        assert.deepStrictEqual(encoded.cause, { name: "Error", message: "the underlying failure" })
      }
    })

    it("the union decodes each encoded class back to an instance of the same class", () => {
      for (const error of all) {
        const decoded = roundTrip(error)
        assert.strictEqual(decoded.constructor, error.constructor, error._tag)
        assert.strictEqual(decoded._tag, error._tag)
        assert.strictEqual(decoded.toolset, error.toolset)
        assert.strictEqual(decoded.message, error.message)
        assert.instanceOf(decoded.cause, Error)
        assert.strictEqual(decoded.cause.message, "the underlying failure")
      }
    })

    it("the class-specific fields survive a round trip", () => {
      const unavailable = new LifecycleError.ServerUnavailable({
        toolset: "gopls",
        message: "exited",
        exitCode: 127,
        signal: null,
        stderr: ["gopls: command not found"]
      })
      const decoded = roundTrip(unavailable)
      assert.instanceOf(decoded, LifecycleError.ServerUnavailable)
      assert.strictEqual(decoded.exitCode, 127)
      assert.isNull(decoded.signal)
      assert.deepStrictEqual(decoded.stderr, ["gopls: command not found"])
      assert.isUndefined(decoded.cause)

      const crashed = roundTrip(
        new LifecycleError.ServerCrashed({ toolset: "gopls", message: "killed", exitCode: null, signal: "SIGKILL" })
      )
      assert.instanceOf(crashed, LifecycleError.ServerCrashed)
      assert.strictEqual(crashed.signal, "SIGKILL")

      const auth = roundTrip(
        new LifecycleError.AuthRequired({ toolset: "remote", message: "auth", challenge: 'Bearer realm="mcp"' })
      )
      assert.instanceOf(auth, LifecycleError.AuthRequired)
      assert.strictEqual(auth.challenge, 'Bearer realm="mcp"')

      const unclassified = roundTrip(
        new LifecycleError.TransportError({ toolset: "x", message: "?", unclassified: true })
      )
      assert.instanceOf(unclassified, LifecycleError.TransportError)
      assert.isTrue(unclassified.unclassified)

      const timeout = roundTrip(new LifecycleError.InitTimeout({ toolset: "x", message: "slow", afterMillis: 30_000 }))
      assert.instanceOf(timeout, LifecycleError.InitTimeout)
      assert.strictEqual(timeout.afterMillis, 30_000)

      const capability = roundTrip(
        new LifecycleError.CapabilityMissing({ toolset: "x", message: "none", capability: "tools/list" })
      )
      assert.instanceOf(capability, LifecycleError.CapabilityMissing)
      assert.strictEqual(capability.capability, "tools/list")
    })

    it("the optional fields are absent from the encoding when they are not set", () => {
      const encoded = encode(new LifecycleError.ServerUnavailable({ toolset: "x", message: "gone" }))
      assert.deepStrictEqual(encoded, { _tag: "ServerUnavailable", toolset: "x", message: "gone" })
    })

    it("the union rejects an unknown tag and a missing toolset", () => {
      assert.throws(() => decode({ _tag: "Exploded", toolset: "x", message: "m" }))
      assert.throws(() => decode({ _tag: "TransportError", message: "m" }))
      assert.throws(() => decode({ _tag: "InitTimeout", toolset: "x", message: "m" }))
    })
  })

  describe("isTransient / isPermanent", () => {
    it("AuthRequired and CapabilityMissing are permanent", () => {
      assert.isTrue(LifecycleError.isPermanent(samples.AuthRequired))
      assert.isTrue(LifecycleError.isPermanent(samples.CapabilityMissing))
      assert.isFalse(LifecycleError.isTransient(samples.AuthRequired))
      assert.isFalse(LifecycleError.isTransient(samples.CapabilityMissing))
    })

    it("every other class is transient", () => {
      const transient: ReadonlyArray<LifecycleError.Tag> = [
        "TransportError",
        "ServerUnavailable",
        "ServerCrashed",
        "InitTimeout",
        "InitNotification",
        "SessionMissing",
        "NotStarted",
        "CallTimeout"
      ]
      for (const tag of transient) {
        assert.isTrue(LifecycleError.isTransient(samples[tag]), tag)
        assert.isFalse(LifecycleError.isPermanent(samples[tag]), tag)
      }
    })

    it("the two are total over the union: each error is exactly one of them", () => {
      for (const error of all) {
        assert.notStrictEqual(LifecycleError.isTransient(error), LifecycleError.isPermanent(error), error._tag)
      }
    })
  })

  describe("the errors the Supervisor builds", () => {
    it("notStarted leads its message with the toolset's name and keeps the error that stopped it", () => {
      const stopped = LifecycleError.notStarted("fs", "not running (Failed)", samples.ServerUnavailable)
      assert.strictEqual(stopped._tag, "NotStarted")
      assert.strictEqual(stopped.toolset, "fs")
      assert.strictEqual(stopped.message, "fs: not running (Failed)")
      assert.strictEqual(stopped.cause, samples.ServerUnavailable)
    })

    it("crashedInFlight carries the server's exit code, signal and stderr when it crashed", () => {
      const exit = new LifecycleError.ServerCrashed({
        toolset: "fs",
        message: "fs: server exited unexpectedly (signal SIGKILL)",
        exitCode: null,
        signal: "SIGKILL",
        stderr: ["Error: out of memory"]
      })
      const crash = LifecycleError.crashedInFlight("fs", exit)
      assert.strictEqual(
        crash.message,
        "fs: session ended while the request was in flight: fs: server exited unexpectedly (signal SIGKILL)"
      )
      assert.strictEqual(crash.cause, exit)
      assert.strictEqual(crash.signal, "SIGKILL")
      assert.isNull(crash.exitCode)
      assert.deepStrictEqual(crash.stderr, ["Error: out of memory"])
    })

    it("crashedInFlight after a clean close or another error has no exit fields", () => {
      const clean = LifecycleError.crashedInFlight("fs", undefined)
      assert.strictEqual(clean.message, "fs: session ended while the request was in flight")
      assert.isFalse("signal" in clean || "exitCode" in clean || "stderr" in clean)
      const lost = LifecycleError.crashedInFlight("fs", samples.TransportError)
      assert.strictEqual(lost.message, "fs: session ended while the request was in flight: transport failure")
      assert.isFalse("signal" in lost)
    })
  })
})
