/**
 * The behaviour of the `Toolset` entity: a thin host around the same supervised toolset the local
 * registry runs. The cluster decides where an entity lives; the toolset's own Supervisor keeps
 * its server alive there. Handlers only delegate, except for two things only a host can know:
 * a fresh activation (after a move) waits for its spec and for Ready before serving calls, and a
 * call the cluster re-delivers after a runner died is refused unless the tool is safe to repeat.
 */
import { LifecycleError, State, type Toolset } from "@toolvisor/core"
import { Toolsets } from "@toolvisor/runtime"
import * as Clock from "effect/Clock"
import * as Entity from "effect/cluster/Entity"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Sealing from "../Sealing.ts"
import * as CallLedger from "./callLedger.ts"
import * as Fence from "./fence.ts"
import * as HostedCalls from "./hostedCalls.ts"
import * as LaneServer from "./laneServer.ts"
import * as Orphans from "./orphans.ts"
import { buildable, heartbeat, type Observed, open, type Spec, ToolsetEntity } from "./toolsetEntity.ts"

/** How a runner hosts its toolsets; part of `ClusterRunner.Options`. */
export interface Options {
  /**
   * How long a message to a freshly activated entity waits for its spec (the replayed `Ensure`)
   * and for the toolset to be usable; re-delivered calls can arrive before either (default 30 s).
   */
  readonly activationWait?: Duration.Input
  /** The cluster key, to open toolset configs that clients sealed (see `Sealing`). */
  readonly key?: Sealing.Key
  /**
   * How far a client's clock may be ahead of this runner's (default 5 s): a call refused on a
   * runner that took its toolset over after the call was sent is answered "may have run".
   */
  readonly clockSkew?: Duration.Input
}

type Hosted = HostedCalls.Hosted

/**
 * The entity's behaviour on this runner, over the call ledger and the fence. Messages are
 * handled concurrently (an `Ensure` and a watch stay open for the toolset's life), and an
 * entity is never passivated for being idle: its toolset's server would stop with it.
 */
export const layer = (options: Options = {}) =>
  ToolsetEntity.toLayer(
    Effect.gen(function* () {
      const address = yield* Entity.CurrentAddress
      const runner = Orphans.runnerId(yield* Entity.CurrentRunnerAddress)
      const scope = yield* Scope.Scope
      const ledger = yield* CallLedger.CallLedger
      const fence = yield* Fence.Fence
      const shard = address.shardId
      const wait = Duration.fromInputUnsafe(options.activationWait ?? "30 seconds")
      const activatedAt = yield* Clock.currentTimeMillis
      const incarnation = `${runner}/${activatedAt.toString(36)}`
      const lanes = Option.getOrUndefined(yield* Effect.serviceOption(LaneServer.LaneServer))
      const observed = yield* SubscriptionRef.make({
        runner,
        incarnation,
        seq: 0,
        ...(lanes === undefined ? {} : { lane: lanes.address })
      } as Observed)
      const hosted = yield* Deferred.make<Hosted>()
      let installed: Hosted | undefined
      const stopped = yield* Ref.make(yield* Deferred.make<void>())
      const lock = yield* Semaphore.make(1)
      const entity = address.entityId

      /** Builds the toolset once per activation; its server processes carry the runner's mark. */
      const install = (sealed: Spec) =>
        lock
          .withPermits(1)(
            Effect.gen(function* () {
              if (installed !== undefined) return installed
              const spec = open(sealed, options.key)
              if (typeof spec === "string") {
                return yield* new LifecycleError.ServerUnavailable({ toolset: sealed.name, message: spec })
              }
              const { toolset } = yield* Toolsets.make(buildable(spec, Orphans.mark(runner)))
              yield* toolset.changes.pipe(
                Stream.runForEach((snapshot) =>
                  SubscriptionRef.update(observed, (o) => ({
                    ...o,
                    snapshot,
                    seq: o.seq + 1
                  }))
                ),
                Effect.forkIn(scope, { startImmediately: true })
              )
              installed = { spec, toolset }
              const h = installed
              // Runs before the toolset's own finalizers. A server is asked to finish only while
              // the store says this runner holds its shard; otherwise it is killed: its shard went
              // to another runner, or may at any moment (a store restart dropped the lock), and
              // that runner may be starting its own copy already.
              yield* Effect.addFinalizer(() =>
                fence.release(shard, h.toolset.stop, (verdict) => HostedCalls.halt(h, haltReason(verdict)))
              )
              yield* fence.host({
                shard,
                name: spec.name,
                onLost: (holder) => calls.lose(h, holder),
                halt: HostedCalls.halt(h, "as its runner's shutdown ran out of time")
              })
              // Closed before the toolset stops: calls on the lane finish first, as the cluster's do.
              if (lanes !== undefined) yield* lanes.host(entity, calls.call, () => !fence.lost(shard) && !calls.lost())
              yield* Deferred.succeed(hosted, installed)
              return installed
            })
          )
          .pipe(Scope.provide(scope))

      const notStarted = (message: string) => LifecycleError.notStarted(entity, message)

      /** The hosted toolset, waiting (bounded) for a replayed `Ensure` on a fresh activation. */
      const current = Effect.suspend(() => (installed !== undefined ? Effect.succeed(installed) : awaitInstalled))
      const awaitInstalled = Deferred.await(hosted).pipe(
        Effect.timeoutOption(wait),
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notStarted(`not started on runner ${runner} (no start request arrived)`)),
            onSome: Effect.succeed
          })
        )
      )

      /** Waits (bounded) until the toolset serves or has given up, so a call does not race a restart. */
      const settled = (toolset: Toolset.Toolset) =>
        Effect.flatMap(toolset.state, (now) => (State.isUsable(now.state) ? Effect.void : settling(toolset)))
      const settling = (toolset: Toolset.Toolset) =>
        toolset.changes.pipe(
          Stream.filter((s) => State.isUsable(s.state) || State.isTerminal(s.state)),
          Stream.runHead,
          Effect.timeoutOption(wait),
          Effect.asVoid
        )

      /**
       * Starts the toolset; an optional one whose start fails keeps retrying by its policy inside
       * its Supervisor, which `Stop` ends.
       */
      const keepStarted = (h: Hosted) =>
        h.toolset.start.pipe(
          Effect.tapError((error) => Effect.logWarning(`did not start: ${error.message}`)),
          Effect.ignore
        )

      const calls = HostedCalls.make({
        runner,
        shard,
        activatedAt,
        skew: Duration.fromInputUnsafe(options.clockSkew ?? "5 seconds"),
        ledger,
        fence,
        current,
        settled,
        keepStarted
      })

      return ToolsetEntity.of({
        Ensure: ({ payload }) =>
          Effect.gen(function* () {
            yield* install(payload.spec).pipe(
              Effect.matchEffect({
                // Held open all the same: another runner (or this one, set up right) may run it later.
                onFailure: (error) => Effect.logError(error.message),
                // Started at once, so the toolset is Starting before this request is done: a call
                // re-delivered right behind it waited for a toolset Stopped and failed "is Stopped".
                onSuccess: (h) => Effect.forkIn(keepStarted(h), scope, { startImmediately: true })
              })
            )
            yield* Deferred.await(yield* Ref.get(stopped))
          }),
        Start: ({ payload }) => Effect.flatMap(install(payload.spec), (h) => h.toolset.start),
        Stop: () =>
          lock.withPermits(1)(
            Effect.gen(function* () {
              if (installed !== undefined) yield* installed.toolset.stop
              const previous = yield* Ref.getAndSet(stopped, yield* Deferred.make<void>())
              yield* Deferred.succeed(previous, undefined)
            })
          ),
        Restart: () => Effect.flatMap(current, (h) => h.toolset.restart),
        Status: () => SubscriptionRef.get(observed),
        WatchStatus: () =>
          Stream.merge(
            SubscriptionRef.changes(observed),
            Stream.tick(heartbeat).pipe(Stream.mapEffect(() => SubscriptionRef.get(observed)))
          ),
        ListTools: () => Effect.flatMap(current, (h) => h.toolset.tools),
        CallTool: ({ payload }) => calls.call(payload)
      })
    }),
    { concurrency: "unbounded", maxIdleTime: Duration.infinity }
  )

/** The host alone with an in-memory call ledger: for the in-process test runner. */
export const layerMemory = (options: Options = {}) =>
  layer(options).pipe(Layer.provide([CallLedger.layerMemory, Fence.layerAlone]))

/** Why a toolset whose shard this runner may not hold is killed at its entity's close. */
const haltReason = (verdict: Fence.Verdict): string => {
  switch (verdict._tag) {
    case "Lost":
      return `as its shard went to ${verdict.holder}`
    case "Unowned":
      return "as this runner no longer holds its shard"
    default:
      return "as the store cannot confirm this runner still holds its shard"
  }
}
