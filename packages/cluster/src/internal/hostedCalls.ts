/**
 * How a runner runs the calls of one hosted toolset, so that each answer tells the truth about
 * whether the call ran (`CallOutcome`) and only the shard's owner runs anything (`Fence`):
 * 1. admission: a toolset another runner holds is stopped here and the call refused; without
 *    the store, or between owners, only tools safe to repeat run;
 * 2. a call to a tool that is not safe to repeat is recorded in the call ledger, whose fenced
 *    insert also says whether an earlier delivery of the same call started it;
 * 3. the hand-off to the server, after which any failure may have run.
 * A refusal says "not run" only when no delivery of the call can have run it: the cluster
 * re-delivers a call whose runner died to the next owner, so a refusal there asks the ledger, or,
 * when it cannot, judges by when the caller sent the call (`sentAt`) against when this toolset
 * came to this runner.
 */
import { LifecycleError, State, Toolset } from "@toolvisor/core"
import * as Clock from "effect/Clock"
import type * as ShardId from "effect/cluster/ShardId"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as CallOutcome from "../CallOutcome.ts"
import type * as CallLedger from "./callLedger.ts"
import type * as Fence from "./fence.ts"
import * as Orphans from "./orphans.ts"
import type { Call, Opened } from "./toolsetEntity.ts"

export interface Hosted {
  readonly spec: Opened
  /** Masked by its secrets (see `Toolsets.make`): what the entity answers is already redacted. */
  readonly toolset: Toolset.Toolset
}

/**
 * Stops a toolset with its server killed at once rather than asked to finish: for a toolset that
 * must not act a moment longer (another runner holds it, or a shutdown ran out of time).
 */
export const halt = (h: Hosted, why: string) =>
  Effect.gen(function* () {
    const server = (yield* h.toolset.state).pid
    // Stopping first, so the Supervisor does not take the killed server for a crash to restart.
    const stopping = yield* Effect.forkChild(h.toolset.stop, { startImmediately: true })
    if (server !== undefined) yield* Orphans.killServer(server, `of ${h.spec.name}, ${why}`)
    yield* Fiber.join(stopping)
  })

export interface Options {
  readonly runner: string
  readonly shard: ShardId.ShardId
  /** When this toolset came to this runner (the entity's activation). */
  readonly activatedAt: number
  /** How far a caller's clock may be ahead of this runner's. */
  readonly skew: Duration.Duration
  readonly ledger: CallLedger.Ledger
  readonly fence: Fence.Service
  /** The hosted toolset, once its spec arrived. */
  readonly current: Effect.Effect<Hosted, LifecycleError.LifecycleError>
  /** Waits (bounded) until the toolset serves or has given up. */
  readonly settled: (toolset: Toolset.Toolset) => Effect.Effect<void>
  /** Starts the toolset, keeping at it by its policy. */
  readonly keepStarted: (h: Hosted) => Effect.Effect<void>
}

/** Calls started here, remembered this long (a re-delivery comes within a call's deadline). */
const rememberFor = Duration.toMillis(Duration.minutes(10))

export const make = (options: Options) => {
  const { runner, shard, ledger, fence } = options
  /** Call ids started here, with when. */
  const started = new Map<string, number>()
  /** The runner that holds this toolset's shard now, once the fence found it moved. */
  let lostTo: string | undefined

  const remember = (callId: string, now: number) => {
    started.set(callId, now)
    for (const [id, at] of started) {
      if (now - at < rememberFor) break
      started.delete(id)
    }
  }

  /** Stops a toolset whose shard another runner holds (`halt`); calls are refused until it comes back. */
  const lose = (h: Hosted, holder: string) =>
    Effect.suspend(() => {
      if (lostTo !== undefined) return Effect.void
      lostTo = holder
      return halt(h, `held by ${holder} now`)
    })

  /**
   * The answer to a call refused before its hand-off: `error` (not run) if no delivery of it can
   * have run, otherwise `CallOutcomeUnknown`.
   */
  const refuse = (
    named: CallOutcome.Call,
    sentAt: number,
    error: Toolset.ToolError | LifecycleError.LifecycleError
  ): Effect.Effect<never, Toolset.ToolError | LifecycleError.LifecycleError> =>
    Effect.gen(function* () {
      if (started.has(named.callId)) {
        return yield* CallOutcome.unknown(named, `it was started on runner ${runner} earlier`)
      }
      const firstDeliveredHere = sentAt >= options.activatedAt + Duration.toMillis(options.skew)
      const earlier = yield* Effect.result(ledger.lookup(named.callId))
      if (earlier._tag === "Success" && earlier.success !== undefined) {
        return yield* CallOutcome.unknown(
          named,
          `it was started on runner ${earlier.success.runner} at ${earlier.success.startedAt.toISOString()}, which stopped before answering, so it is not run again`
        )
      }
      if (earlier._tag === "Success" || firstDeliveredHere) return yield* Effect.fail(error)
      return yield* CallOutcome.unknown(
        named,
        `it was refused here (${error.message}), and it was sent before this runner took the toolset over, while the store that records where calls ran is unreachable`
      )
    })

  /**
   * Whether this runner may run a call now (`Fence`); a refusal here sent nothing. A toolset
   * found held by another runner is stopped first; one found back here is started again.
   */
  const admit = (h: Hosted, tool: string, guarded: boolean) =>
    Effect.flatMap(fence.verdict(shard), (verdict): Effect.Effect<void, LifecycleError.LifecycleError> => {
      switch (verdict._tag) {
        case "Owner":
          if (lostTo === undefined) return Effect.void
          lostTo = undefined
          return Effect.andThen(options.keepStarted(h), options.settled(h.toolset))
        case "Lost":
          return Effect.andThen(
            lose(h, verdict.holder),
            Effect.fail(
              LifecycleError.notStarted(
                h.spec.name,
                `${verdict.holder} holds it now, not runner ${runner}, so "${tool}" was not run here`
              )
            )
          )
        case "Outage":
          return guarded
            ? Effect.fail(
                new LifecycleError.TransportError({
                  toolset: h.spec.name,
                  message: `${h.spec.name}: the cluster's store is unreachable and "${tool}" is not safe to repeat, so it was not run`
                })
              )
            : Effect.void
        case "Unowned":
          return guarded
            ? Effect.fail(
                LifecycleError.notStarted(
                  h.spec.name,
                  `no runner holds it right now (it is moving), so "${tool}" was not run`
                )
              )
            : Effect.void
      }
    })

  /**
   * Records a call that is not safe to repeat before it runs. The insert takes effect only while
   * this runner holds the shard, and the call is sent only if no pause came between the two that
   * could have outlasted the lease.
   */
  const record = (h: Hosted, named: CallOutcome.Call) =>
    Effect.gen(function* () {
      const asked = yield* Clock.currentTimeMillis
      const began = yield* ledger
        .begin({ requestId: named.callId, toolset: h.spec.name, tool: named.tool, runner, shard })
        .pipe(
          Effect.mapError(
            (cause) =>
              new LifecycleError.TransportError({
                toolset: h.spec.name,
                message: `${h.spec.name}: the call ledger is unavailable, so "${named.tool}" was not run: ${cause.message}`,
                cause
              })
          )
        )
      switch (began._tag) {
        case "Repeated":
          return yield* CallOutcome.unknown(
            named,
            `it was already started on runner ${began.runner} at ${began.startedAt.toISOString()}, which stopped before answering, so it is not run again`
          )
        case "NotOwner":
          return yield* LifecycleError.notStarted(
            h.spec.name,
            `runner ${runner} no longer holds it, so "${named.tool}" was not run`
          )
        case "Started":
          if ((yield* Clock.currentTimeMillis) - asked > Duration.toMillis(fence.sendWithin)) {
            return yield* LifecycleError.notStarted(
              h.spec.name,
              `runner ${runner} was held up after recording "${named.tool}" and may have lost it meanwhile, so it was not run`
            )
          }
      }
    })

  /** Everything before the hand-off; its failures are "not run" for this delivery. */
  const prepare = (h: Hosted, named: CallOutcome.Call) =>
    Effect.gen(function* () {
      yield* options.settled(h.toolset)
      const listing = yield* h.toolset.tools
      const guarded = !Toolset.isSafeToRepeat(listing.items.find((t) => t.name === named.tool))
      yield* admit(h, named.tool, guarded)
      const now = yield* h.toolset.state
      if (!State.isUsable(now.state)) {
        const why = now.lastError === undefined ? "" : `: ${now.lastError.message}`
        return yield* LifecycleError.notStarted(h.spec.name, `is ${now.state} on runner ${runner}${why}`)
      }
      if (guarded) yield* record(h, named)
    })

  /** Runs a call, keeping `CallOutcome`'s table true. */
  const call = (payload: Call) =>
    Effect.gen(function* () {
      const h = yield* Effect.catch(options.current, (error) =>
        refuse({ toolset: error.toolset, tool: payload.tool, callId: payload.callId }, payload.sentAt, error)
      )
      const named = { toolset: h.spec.name, tool: payload.tool, callId: payload.callId }
      yield* Effect.catch(prepare(h, named), (error) =>
        error._tag === "CallOutcomeUnknown" ? Effect.fail(error) : refuse(named, payload.sentAt, error)
      )
      remember(payload.callId, yield* Clock.currentTimeMillis)
      return yield* h.toolset
        .callTool(payload.tool, payload.args)
        .pipe(Effect.mapError((error) => CallOutcome.afterHandOff(named, error)))
    })

  /** Whether this runner has found another one holding the toolset's shard (and stopped it here). */
  const lost = () => lostTo !== undefined

  return { call, lose, lost }
}
