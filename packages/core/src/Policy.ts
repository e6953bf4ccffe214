/**
 * The restart policy of a toolset: the user-facing `lifecycle` block (a Schema, with profiles and
 * field-by-field overrides), the resolved `Policy` the Supervisor runs on, and the backoff that
 * turns an attempt number into a delay. The delay formula lives in one function, shared by the
 * Supervisor, the `Schedule` and the display of planned delays.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

const unitMillis: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

const durationPattern = /^(\d+(?:\.\d+)?)(ms|s|m|h)$|^0$/

const millisOf = (text: string): number => {
  const [, amount = "0", unit = "ms"] = durationPattern.exec(text) ?? []
  return Number(amount) * (unitMillis[unit] ?? 1)
}

/** Milliseconds as the pattern reads them: never in exponent notation (`1e-7`, `1e+21`). */
const millisText = (millis: number): string =>
  Number.isInteger(millis) ? String(millis) : millis.toFixed(20).replace(/0+$/, "").replace(/\.$/, "")

/** A duration written as `250ms`, `30s`, `1.5s`, `5m`, `1h` (or `0` for none). */
export const DurationString = Schema.String.pipe(
  Schema.check(Schema.isPattern(durationPattern, { message: "Expected a duration like 250ms, 30s, 5m or 1h" })),
  // Longer than any wait that means something, and past what a number of milliseconds holds exactly.
  Schema.check(
    Schema.makeFilter((text: string) => millisOf(text) <= Number.MAX_SAFE_INTEGER, {
      message: "Expected a duration of at most 9007199254740991ms (285,616 years); 0 means none"
    })
  ),
  Schema.decodeTo(
    Schema.Duration,
    SchemaTransformation.transform({
      decode: (text) => Duration.millis(millisOf(text)),
      encode: (duration) => `${millisText(Duration.toMillis(duration))}ms`
    })
  )
)

/** When a session that ended is reconnected: `never`, `on_failure` (not after a clean exit) or `always`. */
export const Restart = Schema.Literals(["never", "on_failure", "always"])
export type Restart = typeof Restart.Type

/** A named set of defaults a `lifecycle` block starts from, so most configs need write only `profile:`. */
export const Profile = Schema.Literals(["resilient", "strict", "best-effort"])
export type Profile = typeof Profile.Type

/** The `lifecycle` block as a user writes it: every field optional, each one overriding the profile. */
export const Lifecycle = Schema.Struct({
  profile: Schema.optionalKey(Profile),
  restart: Schema.optionalKey(Restart),
  max_restarts: Schema.optionalKey(
    Schema.Int.pipe(Schema.check(Schema.isGreaterThanOrEqualTo(-1, { message: "Expected -1 (unlimited) or more" })))
  ),
  backoff: Schema.optionalKey(
    Schema.Struct({
      initial: Schema.optionalKey(DurationString),
      max: Schema.optionalKey(DurationString),
      multiplier: Schema.optionalKey(
        Schema.Number.pipe(Schema.check(Schema.isGreaterThanOrEqualTo(1, { message: "Expected a multiplier >= 1" })))
      ),
      jitter: Schema.optionalKey(
        Schema.Number.pipe(
          Schema.check(Schema.isBetween({ minimum: 0, maximum: 1 }, { message: "Expected a jitter between 0 and 1" }))
        )
      ),
      reset_after: Schema.optionalKey(DurationString)
    })
  ),
  startup_timeout: Schema.optionalKey(DurationString),
  call_timeout: Schema.optionalKey(DurationString),
  required: Schema.optionalKey(Schema.Boolean),
  health: Schema.optionalKey(
    Schema.Struct({
      interval: DurationString,
      timeout: Schema.optionalKey(DurationString),
      failures: Schema.optionalKey(Schema.Int.pipe(Schema.check(Schema.isGreaterThanOrEqualTo(1))))
    })
  )
}).annotate({ identifier: "Lifecycle", description: "How a toolset is started, supervised and restarted" })

export type Lifecycle = typeof Lifecycle.Type

/** The delays between reconnects: each `multiplier` times the last, from `initial` up to `max`. */
export interface Backoff {
  readonly initial: Duration.Duration
  readonly max: Duration.Duration
  readonly multiplier: number
  /** Fraction of the delay drawn uniformly either side of it: 0.2 means ±20%. */
  readonly jitter: number
  /** How long Ready must last before the restart budget and the backoff step reset (flap guard). */
  readonly resetAfter: Duration.Duration
}

/** Periodic probes of a live session: a server that hangs without exiting is found and restarted. */
export interface Health {
  readonly interval: Duration.Duration
  readonly timeout: Duration.Duration
  /** Consecutive failed probes that force a restart. */
  readonly failures: number
}

/** The resolved policy the Supervisor runs on. `undefined` timeouts mean "no deadline". */
export interface Policy {
  readonly restart: Restart
  /** Reconnects allowed per episode; -1 is unlimited. */
  readonly maxRestarts: number
  readonly backoff: Backoff
  readonly startupTimeout: Duration.Duration | undefined
  readonly callTimeout: Duration.Duration | undefined
  readonly required: boolean
  readonly health: Health | undefined
}

const defaultBackoff: Backoff = {
  initial: Duration.seconds(1),
  max: Duration.seconds(32),
  multiplier: 2,
  jitter: 0,
  resetAfter: Duration.seconds(30)
}

/**
 * The profiles. Every profile has a startup and a call deadline: a server that hangs on
 * `initialize` must never stall start-up, and a request must never wait forever.
 */
export const profiles: { readonly [P in Profile]: Policy } = {
  resilient: {
    restart: "on_failure",
    maxRestarts: 5,
    backoff: defaultBackoff,
    startupTimeout: Duration.seconds(60),
    callTimeout: Duration.seconds(60),
    required: false,
    health: undefined
  },
  strict: {
    restart: "never",
    maxRestarts: 5,
    backoff: defaultBackoff,
    startupTimeout: Duration.seconds(30),
    callTimeout: Duration.seconds(60),
    required: true,
    health: undefined
  },
  "best-effort": {
    restart: "never",
    maxRestarts: 5,
    backoff: defaultBackoff,
    startupTimeout: Duration.seconds(30),
    callTimeout: Duration.seconds(60),
    required: false,
    health: undefined
  }
}

/** The default policy: `resilient`. */
export const defaults: Policy = profiles.resilient

const orNone = (duration: Duration.Duration): Duration.Duration | undefined =>
  Duration.isZero(duration) ? undefined : duration

/** Resolves a decoded `lifecycle` block: the profile's values, then each explicit field over them. */
export const fromLifecycle = (lifecycle: Lifecycle = {}): Policy => {
  const base = profiles[lifecycle.profile ?? "resilient"]
  const backoff = lifecycle.backoff ?? {}
  return {
    restart: lifecycle.restart ?? base.restart,
    maxRestarts: lifecycle.max_restarts ?? base.maxRestarts,
    backoff: {
      initial: backoff.initial ?? base.backoff.initial,
      max: backoff.max ?? base.backoff.max,
      multiplier: backoff.multiplier ?? base.backoff.multiplier,
      jitter: backoff.jitter ?? base.backoff.jitter,
      resetAfter: backoff.reset_after ?? base.backoff.resetAfter
    },
    startupTimeout: lifecycle.startup_timeout === undefined ? base.startupTimeout : orNone(lifecycle.startup_timeout),
    callTimeout: lifecycle.call_timeout === undefined ? base.callTimeout : orNone(lifecycle.call_timeout),
    required: lifecycle.required ?? base.required,
    health:
      lifecycle.health === undefined
        ? base.health
        : {
            interval: lifecycle.health.interval,
            timeout: lifecycle.health.timeout ?? Duration.seconds(5),
            failures: lifecycle.health.failures ?? 3
          }
  }
}

/** Decodes an encoded `lifecycle` block (`"30s"` strings) and resolves it; throws on bad input. */
export const fromLifecycleUnknownSync = (input: unknown): Policy =>
  fromLifecycle(Schema.decodeUnknownSync(Lifecycle)(input))

/** True when another reconnect is allowed after `attempt` reconnects in this episode. */
export const hasBudget = (policy: Policy, attempt: number): boolean =>
  policy.maxRestarts < 0 || attempt < policy.maxRestarts

/** The delay before reconnect `attempt` (0-based), before jitter: `min(initial·multiplier^n, max)`. */
export const nominalDelay = (policy: Policy, attempt: number): Duration.Duration => {
  const { initial, max, multiplier } = policy.backoff
  const millis = Duration.toMillis(initial) * multiplier ** attempt
  return Duration.millis(Math.min(millis, Duration.toMillis(max)))
}

/**
 * Applies jitter to a nominal delay with a draw `r` in [0, 1): the offset is uniform in
 * [-jitter·d, +jitter·d] and the result is clamped to [0, max], so `max` is a hard cap.
 */
export const jitter = (policy: Policy, nominal: Duration.Duration, r: number): Duration.Duration => {
  const d = Duration.toMillis(nominal)
  const offset = (r * 2 - 1) * Math.min(policy.backoff.jitter, 1) * d
  return Duration.millis(Math.min(Math.max(d + offset, 0), Duration.toMillis(policy.backoff.max)))
}

/** The delay before reconnect `attempt`, with jitter drawn from Effect's `Random` (seed it in tests). */
export const delay = (policy: Policy, attempt: number): Effect.Effect<Duration.Duration> => {
  const nominal = nominalDelay(policy, attempt)
  return policy.backoff.jitter > 0
    ? Effect.map(Random.next, (r) => jitter(policy, nominal, r))
    : Effect.succeed(nominal)
}

/**
 * The planned delays before each reconnect of one episode, without jitter: for tests and for
 * display. An unlimited budget is cut at `limit` entries.
 */
export const delays = (policy: Policy, limit = 20): ReadonlyArray<Duration.Duration> => {
  const count = policy.maxRestarts < 0 ? limit : Math.min(policy.maxRestarts, limit)
  return Array.from({ length: count }, (_, attempt) => nominalDelay(policy, attempt))
}

/**
 * The policy as a `Schedule` for `Effect.retry`: one recurrence per reconnect the budget allows,
 * waiting `delay(policy, n)`; its output is the delay it waited.
 */
export const schedule = (policy: Policy): Schedule.Schedule<Duration.Duration> =>
  Schedule.fromStepWithMetadata(
    Effect.succeed((meta: Schedule.InputMetadata<unknown>) =>
      hasBudget(policy, meta.attempt - 1)
        ? Effect.map(delay(policy, meta.attempt - 1), (d): [Duration.Duration, Duration.Duration] => [d, d])
        : Cause.done(Duration.zero)
    )
  )
