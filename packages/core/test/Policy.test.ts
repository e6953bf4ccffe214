import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { TestClock } from "effect/testing"
import * as LifecycleError from "../src/LifecycleError.ts"
import * as Policy from "../src/Policy.ts"

const ms = (duration: Duration.Duration | undefined): number | undefined =>
  duration === undefined ? undefined : Duration.toMillis(duration)

const decodeDuration = (text: string): number =>
  Duration.toMillis(Schema.decodeUnknownSync(Policy.DurationString)(text))

/** The message of the error a decode throws, with every issue reported. */
const failureOf = (schema: Schema.ConstraintDecoder<unknown>, input: unknown): string => {
  try {
    Schema.decodeUnknownSync(schema)(input, { errors: "all" })
  } catch (error) {
    if (error instanceof Error) return error.message
  }
  return assert.fail(`expected ${JSON.stringify(input)} to be rejected`)
}

const policyOf = (input: unknown): Policy.Policy => Policy.fromLifecycleUnknownSync(input)

/** A policy with a given backoff, over the resilient defaults. */
const withBackoff = (backoff: Partial<Policy.Backoff>, maxRestarts = 5): Policy.Policy => ({
  ...Policy.defaults,
  maxRestarts,
  backoff: { ...Policy.defaults.backoff, ...backoff }
})

/** A Random service whose every draw is `r`. */
const fixedRandom = (r: number): Random.Random => ({ nextDoubleUnsafe: () => r, nextIntUnsafe: () => 0 })

/** Reads the delay sequence of a schedule without sleeping (the guide's §3 helper). */
const scheduleDelays = <O, I, E>(schedule: Schedule.Schedule<O, I, E>, input: I, max = 50) =>
  Effect.gen(function* () {
    const step = yield* Schedule.toStep(schedule)
    const out: Array<number> = []
    for (let now = 0; out.length < max; ) {
      const r = yield* Effect.result(step(now, input))
      if (r._tag === "Failure") break
      const millis = Duration.toMillis(r.success[1])
      out.push(Math.round(millis))
      now += millis
    }
    return out
  })

describe("Policy", () => {
  describe("DurationString", () => {
    it("decodes 250ms, 30s, 1.5s, 5m, 1h and 0", () => {
      assert.strictEqual(decodeDuration("250ms"), 250)
      assert.strictEqual(decodeDuration("30s"), 30_000)
      assert.strictEqual(decodeDuration("1.5s"), 1_500)
      assert.strictEqual(decodeDuration("5m"), 300_000)
      assert.strictEqual(decodeDuration("1h"), 3_600_000)
      assert.strictEqual(decodeDuration("0"), 0)
    })

    it("rejects 30 sec, abc and -1s with a message naming the expected format", () => {
      for (const text of ["30 sec", "abc", "-1s", "", "1d", "s", "0.5"]) {
        assert.include(failureOf(Policy.DurationString, text), "Expected a duration like 250ms, 30s, 5m or 1h", text)
      }
    })

    it("rejects a number where a string is expected", () => {
      assert.throws(() => Schema.decodeUnknownSync(Policy.DurationString)(30))
    })

    it("encodes a duration to milliseconds, which decode back to the same duration", () => {
      const encoded = Schema.encodeSync(Policy.DurationString)(Duration.seconds(30))
      assert.strictEqual(encoded, "30000ms")
      assert.strictEqual(decodeDuration(encoded), 30_000)
    })

    it("rejects a duration past what milliseconds hold exactly, saying so; a tiny one round-trips", () => {
      // Both used to decode, then fail to encode (`1e+23ms`, `1e-7ms`) with a bare SchemaError.
      assert.include(
        failureOf(Policy.DurationString, "99999999999999999999s"),
        "Expected a duration of at most 9007199254740991ms"
      )
      for (const text of ["0.0000001s", "999999999h"]) {
        const millis = decodeDuration(text)
        assert.strictEqual(decodeDuration(Schema.encodeSync(Policy.DurationString)(Duration.millis(millis))), millis)
      }
    })
  })

  describe("Lifecycle schema", () => {
    it("accepts a full block", () => {
      const decoded = Schema.decodeUnknownSync(Policy.Lifecycle)({
        profile: "strict",
        restart: "on_failure",
        max_restarts: 5,
        backoff: { initial: "1s", max: "30s", multiplier: 2, jitter: 0.2, reset_after: "1m" },
        startup_timeout: "30s",
        call_timeout: "60s",
        required: true,
        health: { interval: "10s", timeout: "2s", failures: 2 }
      })
      assert.strictEqual(decoded.profile, "strict")
      assert.strictEqual(ms(decoded.backoff?.reset_after), 60_000)
      assert.strictEqual(ms(decoded.health?.interval), 10_000)
    })

    it("accepts an empty block", () => {
      assert.deepStrictEqual(Schema.decodeUnknownSync(Policy.Lifecycle)({}), {})
    })

    it("rejects a bad profile, naming the field", () => {
      const message = failureOf(Policy.Lifecycle, { profile: "paranoid" })
      assert.include(message, '["profile"]')
      assert.include(message, '"resilient" | "strict" | "best-effort"')
    })

    it("rejects a bad restart value, naming the field", () => {
      const message = failureOf(Policy.Lifecycle, { restart: "sometimes" })
      assert.include(message, '["restart"]')
      assert.include(message, '"never" | "on_failure" | "always"')
    })

    it("rejects jitter 2, naming the field path", () => {
      const message = failureOf(Policy.Lifecycle, { backoff: { jitter: 2 } })
      assert.include(message, "Expected a jitter between 0 and 1")
      assert.include(message, '["backoff"]["jitter"]')
    })

    it("rejects max_restarts -2, naming the field", () => {
      const message = failureOf(Policy.Lifecycle, { max_restarts: -2 })
      assert.include(message, "Expected -1 (unlimited) or more")
      assert.include(message, '["max_restarts"]')
    })

    it("rejects multiplier 0.5, naming the field path", () => {
      const message = failureOf(Policy.Lifecycle, { backoff: { multiplier: 0.5 } })
      assert.include(message, "Expected a multiplier >= 1")
      assert.include(message, '["backoff"]["multiplier"]')
    })

    it("rejects a bad duration, naming the field path", () => {
      const message = failureOf(Policy.Lifecycle, { startup_timeout: "30 sec", backoff: { initial: "soon" } })
      assert.include(message, '["startup_timeout"]')
      assert.include(message, '["backoff"]["initial"]')
    })

    it("with errors: all, reports every bad field at once", () => {
      const message = failureOf(Policy.Lifecycle, {
        profile: "paranoid",
        restart: "sometimes",
        max_restarts: -2,
        backoff: { multiplier: 0.5, jitter: 2 }
      })
      for (const path of ['["profile"]', '["restart"]', '["max_restarts"]', '["backoff"]["multiplier"]']) {
        assert.include(message, path)
      }
      assert.include(message, '["backoff"]["jitter"]')
    })

    it("rejects a fractional max_restarts and a health block without interval", () => {
      assert.include(failureOf(Policy.Lifecycle, { max_restarts: 1.5 }), '["max_restarts"]')
      assert.include(failureOf(Policy.Lifecycle, { health: { failures: 2 } }), '["health"]["interval"]')
    })

    it("fromLifecycleUnknownSync throws on a bad block", () => {
      assert.throws(() => policyOf({ backoff: { jitter: 2 } }))
    })
  })

  describe("profiles", () => {
    it("no block is resilient: on_failure, 5 restarts, 1s..32s x2, no jitter, reset after 30s, not required", () => {
      for (const policy of [Policy.fromLifecycle(), Policy.fromLifecycle({}), policyOf({}), Policy.defaults]) {
        assert.strictEqual(policy.restart, "on_failure")
        assert.strictEqual(policy.maxRestarts, 5)
        assert.strictEqual(ms(policy.backoff.initial), 1_000)
        assert.strictEqual(ms(policy.backoff.max), 32_000)
        assert.strictEqual(policy.backoff.multiplier, 2)
        assert.strictEqual(policy.backoff.jitter, 0)
        assert.strictEqual(ms(policy.backoff.resetAfter), 30_000)
        assert.isFalse(policy.required)
        assert.isUndefined(policy.health)
      }
    })

    it("the resilient profile is the same as no block", () => {
      assert.deepStrictEqual(policyOf({ profile: "resilient" }), policyOf({}))
    })

    it("strict: restart never, required, startup timeout 30s", () => {
      const policy = policyOf({ profile: "strict" })
      assert.strictEqual(policy.restart, "never")
      assert.isTrue(policy.required)
      assert.strictEqual(ms(policy.startupTimeout), 30_000)
    })

    it("best-effort: restart never, not required", () => {
      const policy = policyOf({ profile: "best-effort" })
      assert.strictEqual(policy.restart, "never")
      assert.isFalse(policy.required)
    })

    it("explicit overrides are all applied: always / 12 / 500ms / 10s / 1.5 / 0.3", () => {
      const policy = policyOf({
        restart: "always",
        max_restarts: 12,
        backoff: { initial: "500ms", max: "10s", multiplier: 1.5, jitter: 0.3 }
      })
      assert.strictEqual(policy.restart, "always")
      assert.strictEqual(policy.maxRestarts, 12)
      assert.strictEqual(ms(policy.backoff.initial), 500)
      assert.strictEqual(ms(policy.backoff.max), 10_000)
      assert.strictEqual(policy.backoff.multiplier, 1.5)
      assert.strictEqual(policy.backoff.jitter, 0.3)
    })

    it("explicit overrides win over a profile", () => {
      const policy = policyOf({ profile: "strict", restart: "on_failure", max_restarts: -1, startup_timeout: "5s" })
      assert.strictEqual(policy.restart, "on_failure")
      assert.strictEqual(policy.maxRestarts, -1)
      assert.strictEqual(ms(policy.startupTimeout), 5_000)
      assert.isTrue(policy.required)
    })

    it("partial overrides keep the profile defaults", () => {
      const policy = policyOf({ max_restarts: 7, backoff: { jitter: 0.1 } })
      assert.strictEqual(policy.maxRestarts, 7)
      assert.strictEqual(policy.backoff.jitter, 0.1)
      const resilient = policyOf({})
      assert.deepStrictEqual({ ...policy, maxRestarts: 5, backoff: { ...policy.backoff, jitter: 0 } }, resilient)
    })

    it("strict with required: false is not required", () => {
      assert.isFalse(policyOf({ profile: "strict", required: false }).required)
      assert.isTrue(policyOf({ profile: "best-effort", required: true }).required)
    })

    it('startup_timeout "0" means no deadline', () => {
      assert.isUndefined(policyOf({ startup_timeout: "0" }).startupTimeout)
      assert.isUndefined(policyOf({ profile: "strict", startup_timeout: "0" }).startupTimeout)
      assert.isUndefined(policyOf({ call_timeout: "0ms" }).callTimeout)
    })

    it("call_timeout is taken as given", () => {
      assert.strictEqual(ms(policyOf({ call_timeout: "45s" }).callTimeout), 45_000)
      assert.strictEqual(ms(policyOf({ profile: "strict", call_timeout: "1.5s" }).callTimeout), 1_500)
    })

    it("a health block fills in a 5s timeout and 3 failures", () => {
      const health = policyOf({ health: { interval: "10s" } }).health
      assert.deepStrictEqual(
        health === undefined ? undefined : [ms(health.interval), ms(health.timeout), health.failures],
        [10_000, 5_000, 3]
      )
      const explicit = policyOf({ health: { interval: "1m", timeout: "1s", failures: 1 } }).health
      assert.strictEqual(explicit?.failures, 1)
      assert.strictEqual(ms(explicit?.timeout), 1_000)
    })
  })

  describe("hasBudget", () => {
    it("allows maxRestarts reconnects per episode", () => {
      const policy = Policy.defaults
      for (let attempt = 0; attempt < 5; attempt++) assert.isTrue(Policy.hasBudget(policy, attempt), `${attempt}`)
      assert.isFalse(Policy.hasBudget(policy, 5))
      assert.isFalse(Policy.hasBudget(policy, 6))
    })

    it("max_restarts 0 allows none and -1 allows any number", () => {
      assert.isFalse(Policy.hasBudget(policyOf({ max_restarts: 0 }), 0))
      assert.isTrue(Policy.hasBudget(policyOf({ max_restarts: -1 }), 0))
      assert.isTrue(Policy.hasBudget(policyOf({ max_restarts: -1 }), 1_000_000))
    })
  })

  describe("delays", () => {
    it("the defaults give 1s, 2s, 4s, 8s, 16s", () => {
      assert.deepStrictEqual(
        Policy.delays(Policy.defaults).map(Duration.toMillis),
        [1_000, 2_000, 4_000, 8_000, 16_000]
      )
    })

    it("nominalDelay grows by the multiplier and caps at max: attempt 6 is 32s", () => {
      assert.strictEqual(ms(Policy.nominalDelay(Policy.defaults, 0)), 1_000)
      assert.strictEqual(ms(Policy.nominalDelay(Policy.defaults, 5)), 32_000)
      assert.strictEqual(ms(Policy.nominalDelay(Policy.defaults, 6)), 32_000)
      assert.strictEqual(ms(Policy.nominalDelay(Policy.defaults, 100)), 32_000)
      const slow = withBackoff({ initial: Duration.millis(500), multiplier: 1.5, max: Duration.seconds(10) })
      assert.strictEqual(ms(Policy.nominalDelay(slow, 2)), 1_125)
    })

    it("an unlimited budget is cut at the limit", () => {
      const unlimited = policyOf({ max_restarts: -1 })
      assert.strictEqual(Policy.delays(unlimited).length, 20)
      const cut = Policy.delays(unlimited, 8).map(Duration.toMillis)
      assert.deepStrictEqual(cut, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 32_000, 32_000])
    })

    it("no budget plans no delays", () => {
      assert.deepStrictEqual(Policy.delays(policyOf({ max_restarts: 0 })), [])
    })

    it("the delays ignore jitter", () => {
      assert.deepStrictEqual(
        Policy.delays(policyOf({ backoff: { jitter: 0.5 } })).map(Duration.toMillis),
        [1_000, 2_000, 4_000, 8_000, 16_000]
      )
    })
  })

  describe("jitter", () => {
    const policy = withBackoff({ initial: Duration.millis(100), jitter: 0.5 })
    const nominal = Policy.nominalDelay(policy, 0)

    it("with jitter 0.5 around 100ms, the highest draw gives about 150ms and the lowest 50ms", () => {
      assert.closeTo(Duration.toMillis(Policy.jitter(policy, nominal, 1 - Number.EPSILON)), 150, 1e-6)
      assert.strictEqual(ms(Policy.jitter(policy, nominal, 0)), 50)
      assert.strictEqual(ms(Policy.jitter(policy, nominal, 0.5)), 100)
    })

    it("jitter 0 leaves the delay unchanged", () => {
      const plain = withBackoff({ initial: Duration.millis(100), jitter: 0 })
      for (const r of [0, 0.25, 0.999]) assert.strictEqual(ms(Policy.jitter(plain, nominal, r)), 100)
    })

    it("jitter never takes a capped delay above max", () => {
      const capped = withBackoff({ initial: Duration.seconds(1), max: Duration.seconds(2), jitter: 0.5 })
      const top = Policy.nominalDelay(capped, 10)
      assert.strictEqual(ms(top), 2_000)
      assert.strictEqual(ms(Policy.jitter(capped, top, 1 - Number.EPSILON)), 2_000)
      assert.strictEqual(ms(Policy.jitter(capped, top, 0)), 1_000)
    })

    it("jitter never goes below 0, even when it is above 1", () => {
      const wild: Policy.Policy = withBackoff({ initial: Duration.millis(100), jitter: 3 })
      assert.strictEqual(ms(Policy.jitter(wild, nominal, 0)), 0)
      assert.strictEqual(ms(Policy.jitter(withBackoff({ jitter: 1 }), nominal, 0)), 0)
    })

    it("every draw for every attempt stays within [0, max]", () => {
      const capped = withBackoff({ initial: Duration.millis(300), max: Duration.seconds(5), jitter: 1 })
      for (let attempt = 0; attempt < 12; attempt++) {
        const d = Policy.nominalDelay(capped, attempt)
        for (let i = 0; i <= 100; i++) {
          const r = Math.min(i / 100, 1 - Number.EPSILON)
          const millis = Duration.toMillis(Policy.jitter(capped, d, r))
          assert.isAtLeast(millis, 0)
          assert.isAtMost(millis, 5_000)
        }
      }
    })
  })

  describe("delay", () => {
    const policy = withBackoff({ initial: Duration.millis(100), jitter: 0.5 })

    it.effect("draws its jitter from Effect's Random", () =>
      Effect.gen(function* () {
        const low = yield* Policy.delay(policy, 0).pipe(Effect.provideService(Random.Random, fixedRandom(0)))
        assert.strictEqual(ms(low), 50)
        const mid = yield* Policy.delay(policy, 1).pipe(Effect.provideService(Random.Random, fixedRandom(0.5)))
        assert.strictEqual(ms(mid), 200)
        const high = yield* Policy.delay(policy, 2).pipe(Effect.provideService(Random.Random, fixedRandom(0.75)))
        assert.strictEqual(ms(high), 500)
      })
    )

    it.effect("a seeded Random keeps every delay within ±jitter of its nominal value and is reproducible", () =>
      Effect.gen(function* () {
        const draw = Effect.forEach([0, 1, 2, 3, 4, 5, 6, 7], (attempt) => Policy.delay(policy, attempt))
        const first = yield* draw.pipe(Random.withSeed("toolvisor"))
        const again = yield* draw.pipe(Random.withSeed("toolvisor"))
        assert.deepStrictEqual(first.map(Duration.toMillis), again.map(Duration.toMillis))
        first.forEach((d, attempt) => {
          const nominal = Duration.toMillis(Policy.nominalDelay(policy, attempt))
          assert.isAtLeast(Duration.toMillis(d), nominal * 0.5)
          assert.isAtMost(Duration.toMillis(d), Math.min(nominal * 1.5, 32_000))
        })
      })
    )

    it.effect("without jitter it is the nominal delay and does not depend on Random", () =>
      Effect.gen(function* () {
        const d = yield* Policy.delay(Policy.defaults, 3).pipe(Effect.provideService(Random.Random, fixedRandom(0)))
        assert.strictEqual(ms(d), 8_000)
      })
    )
  })

  describe("schedule", () => {
    it.effect("resilient gives 1s, 2s, 4s, 8s, 16s and then stops: five recurrences", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(
          yield* scheduleDelays(Policy.schedule(Policy.defaults), undefined),
          [1_000, 2_000, 4_000, 8_000, 16_000]
        )
      })
    )

    it.effect("max_restarts 0 does not recur at all", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* scheduleDelays(Policy.schedule(policyOf({ max_restarts: 0 })), undefined), [])
      })
    )

    it.effect("an unlimited budget keeps recurring at the cap", () =>
      Effect.gen(function* () {
        const out = yield* scheduleDelays(Policy.schedule(policyOf({ max_restarts: -1 })), undefined, 9)
        assert.deepStrictEqual(out, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 32_000, 32_000, 32_000])
      })
    )

    it.effect("the schedule's delays follow the same formula as delays()", () =>
      Effect.gen(function* () {
        const policy = policyOf({ max_restarts: 12, backoff: { initial: "500ms", max: "10s", multiplier: 1.5 } })
        const planned = Policy.delays(policy).map((d) => Math.round(Duration.toMillis(d)))
        assert.deepStrictEqual(yield* scheduleDelays(Policy.schedule(policy), undefined), planned)
      })
    )

    it.effect("with jitter, the schedule draws from Random and stays within bounds", () =>
      Effect.gen(function* () {
        const policy = policyOf({ backoff: { jitter: 0.5 } })
        const low = yield* scheduleDelays(Policy.schedule(policy), undefined).pipe(
          Effect.provideService(Random.Random, fixedRandom(0))
        )
        assert.deepStrictEqual(low, [500, 1_000, 2_000, 4_000, 8_000])
        const seeded = yield* scheduleDelays(Policy.schedule(policy), undefined).pipe(Random.withSeed(7))
        assert.strictEqual(seeded.length, 5)
        seeded.forEach((d, attempt) => {
          const nominal = 1_000 * 2 ** attempt
          assert.isAtLeast(d, nominal * 0.5)
          assert.isAtMost(d, nominal * 1.5)
        })
      })
    )

    it.effect("under Effect.retry an always-failing effect is attempted 1 + maxRestarts times", () =>
      Effect.gen(function* () {
        const attempts = yield* Ref.make(0)
        const failing = Ref.updateAndGet(attempts, (n) => n + 1).pipe(
          Effect.flatMap((n) =>
            Effect.fail(new LifecycleError.ServerCrashed({ toolset: "fake", message: `crash ${n}` }))
          )
        )
        const fiber = yield* failing.pipe(Effect.retry(Policy.schedule(Policy.defaults)), Effect.forkChild)
        yield* TestClock.adjust("0 millis")
        assert.strictEqual(yield* Ref.get(attempts), 1)
        yield* TestClock.adjust("999 millis")
        assert.strictEqual(yield* Ref.get(attempts), 1)
        yield* TestClock.adjust("1 millis")
        assert.strictEqual(yield* Ref.get(attempts), 2)
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual(yield* Ref.get(attempts), 3)
        yield* TestClock.adjust("1 hour")
        const exit = yield* Fiber.await(fiber)
        assert.isTrue(Exit.isFailure(exit))
        assert.strictEqual(yield* Ref.get(attempts), 1 + Policy.defaults.maxRestarts)
      })
    )

    it.effect("under Effect.retry, max_restarts 2 means three attempts and the last error is returned", () =>
      Effect.gen(function* () {
        const attempts = yield* Ref.make(0)
        const failing = Ref.updateAndGet(attempts, (n) => n + 1).pipe(
          Effect.flatMap((n) => Effect.fail(new LifecycleError.TransportError({ toolset: "x", message: `${n}` })))
        )
        const fiber = yield* failing.pipe(
          Effect.retry(Policy.schedule(policyOf({ max_restarts: 2 }))),
          Effect.flip,
          Effect.forkChild
        )
        yield* TestClock.adjust("1 minute")
        const error = yield* Fiber.join(fiber)
        assert.strictEqual(error.message, "3")
        assert.strictEqual(yield* Ref.get(attempts), 3)
      })
    )
  })
})
