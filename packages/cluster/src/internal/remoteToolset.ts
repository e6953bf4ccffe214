/**
 * A toolset whose supervisor runs on a cluster runner, seen through its entity's client as an
 * ordinary `Toolset`, so the registry, catalog and LSP router work unchanged. Three things differ
 * from a local toolset: every request has a deadline (during a failover the cluster client would
 * otherwise retry silently until the new owner answers); status arrives on a watch that is
 * re-opened whenever it ends, as it does when the toolset moves; and calls go over the call lane
 * of the runner the watch last saw hosting it, when there is one (`LaneClient`).
 */
import * as NodeCrypto from "node:crypto"
import type { AgentConfig } from "@toolvisor/config"
import { LifecycleError, State, type Toolset } from "@toolvisor/core"
import { Toolsets } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as CallOutcome from "../CallOutcome.ts"
import * as Sealing from "../Sealing.ts"
import * as LaneClient from "./laneClient.ts"
import {
  type Call,
  entityId,
  heartbeat,
  type Observed,
  type Spec,
  type ToolsetEntity,
  toSpec
} from "./toolsetEntity.ts"

/** The client of the `Toolset` entity: a toolset's handle from its entity id. */
export type Client = Effect.Success<typeof ToolsetEntity.client>

/** Deadlines of the cluster requests, and the key that seals a toolset's secrets. */
export interface Options {
  /** Deadline of requests that do no tool work (status, stop, listing); added to start and call deadlines. */
  readonly requestTimeout?: Duration.Input
  /** Pause before a watch that ended is opened again. */
  readonly rewatchDelay?: Duration.Input
  /** The cluster key: seals the secrets in a toolset's persisted start request (see `Sealing`). */
  readonly key?: Sealing.Key
}

/**
 * The toolset of a config entry, as a client of its entity: its status watch runs in the
 * current scope, and closing the scope stops the watch, not the toolset.
 */
export const make = (
  client: Client,
  config: AgentConfig.ToolsetConfig,
  options: Options = {}
): Effect.Effect<Toolsets.Built, never, Scope.Scope> =>
  Effect.gen(function* () {
    const spec: Spec = toSpec(config, options.key)
    if (options.key === undefined && config.secrets.length > 0) {
      yield* Effect.logWarning(
        `${config.name}: values from the environment will be stored in the cluster's database in the clear; set ${Sealing.envKey} on clients and runners to seal them`
      )
    }
    const id = entityId(spec)
    const lanes = Option.getOrUndefined(yield* Effect.serviceOption(LaneClient.LaneClient))
    const entity = client(id)
    const name = config.name
    const kind = Toolsets.kind(config)
    const requestTimeout = Duration.fromInputUnsafe(options.requestTimeout ?? "10 seconds")
    const within = (limit: Duration.Duration | undefined) =>
      limit === undefined ? undefined : Duration.sum(limit, requestTimeout)

    // Until its first reading the toolset's state is not known. An eager one is started with the
    // registry: Starting, so a call made meanwhile waits for it, as for a local toolset, instead of
    // failing "not ready (Stopped)" while it is Ready on its runner.
    const latest = yield* SubscriptionRef.make<State.StatusSnapshot>({
      name,
      kind,
      state: config.lazy ? "Stopped" : "Starting",
      since: yield* Clock.currentTimeMillis,
      restarts: 0,
      attempt: 0,
      toolsVersion: 0
    })
    const transitions = yield* PubSub.unbounded<State.Transition>()

    const publish = (next: State.StatusSnapshot) =>
      Effect.flatMap(SubscriptionRef.getAndSet(latest, next), (previous) =>
        previous.state === next.state
          ? Effect.void
          : PubSub.publish(transitions, { from: previous.state, snapshot: next })
      )

    /** While the toolset moves, it shows as Restarting with the reason, rather than as it was. */
    const relocating = (why: string) =>
      Effect.flatMap(SubscriptionRef.get(latest), (s) =>
        State.isTerminal(s.state)
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) =>
              publish({
                ...s,
                state: "Restarting",
                since: now,
                lastError: { tag: "Relocating", message: `${name}: ${why}` }
              })
            )
      )

    /**
     * The last reading seen. A reading from another runner than the last one is a move, shown as
     * `Relocating` from one runner to the other before the new owner's own readings.
     */
    let seen = { runner: "", incarnation: "", seq: -1 }
    /**
     * The call lane of the runner hosting the toolset, as its watch confirms it. A reading from a
     * new incarnation is not enough: a runner back from a pause answers the watches queued for it
     * with what it hosted before, until its fence stops that copy a moment later. Its next reading
     * (a heartbeat, at most a second later) then shows it serving or not.
     */
    let lane: string | undefined
    /** Told when the watch goes silent (a paused or dead runner): calls on its lane are re-delivered. */
    const onLeave = new Set<() => void>()
    const leave = () => {
      lane = undefined
      for (const silent of [...onLeave]) silent()
    }
    /** Only a runner serving the toolset takes its calls on its lane; otherwise the cluster routes them. */
    const laneOf = (o: Observed) => (o.snapshot !== undefined && State.isUsable(o.snapshot.state) ? o.lane : undefined)
    const observe = (o: Observed) => {
      const fresh = o.incarnation !== seen.incarnation
      if (!fresh && o.seq <= seen.seq) {
        if (o.seq === seen.seq) lane = laneOf(o)
        return Effect.void
      }
      const from = seen.runner
      seen = { runner: o.runner, incarnation: o.incarnation, seq: o.seq }
      const moved = from !== "" && from !== o.runner
      lane = fresh ? undefined : laneOf(o)
      const move = moved ? relocating(`moving from runner ${from} to runner ${o.runner}`) : Effect.void
      const snapshot = o.snapshot
      if (snapshot === undefined) {
        return moved ? move : relocating(`waiting for runner ${o.runner} to take it over`)
      }
      return Effect.andThen(
        move,
        Effect.flatMap(SubscriptionRef.get(latest), (shown) =>
          // A new owner builds the toolset (Stopped) and starts it at once, as does the first runner
          // while a start is on its way: not worth showing.
          (shown.lastError?.tag === "Relocating" || (shown.state === "Starting" && starting > 0)) &&
          snapshot.state === "Stopped" &&
          snapshot.lastError === undefined
            ? Effect.void
            : publish({ ...snapshot, name })
        )
      )
    }

    const rewatchDelay = Duration.fromInputUnsafe(options.rewatchDelay ?? "250 millis")
    yield* entity.WatchStatus().pipe(
      Stream.timeout(Duration.times(heartbeat, 3)),
      Stream.runForEach(observe),
      Effect.catchCause((cause) => Effect.logDebug("status watch broke", cause)),
      Effect.andThen(Effect.sync(leave)),
      Effect.andThen(
        Effect.suspend(() =>
          relocating(`moving from runner ${seen.runner || "unknown"}, which stopped answering or let it go`)
        )
      ),
      Effect.andThen(Effect.sleep(rewatchDelay)),
      Effect.forever,
      Effect.annotateLogs({ toolset: name }),
      Effect.forkScoped({ startImmediately: true })
    )

    /** Cluster failures and missed deadlines, as the lifecycle error a local toolset would give. */
    const deadline =
      (what: string, limit: Duration.Duration | undefined) =>
      <A, E>(
        request: Effect.Effect<A, E | CallOutcome.Undelivered>
      ): Effect.Effect<A, E | LifecycleError.TransportError> => {
        const bounded =
          limit === undefined
            ? request
            : Effect.timeoutOrElse(request, {
                duration: limit,
                orElse: () =>
                  Effect.fail(
                    new LifecycleError.TransportError({
                      toolset: name,
                      message: `${name}: no answer from the cluster to ${what} within ${Duration.format(limit)} (is a runner up, or is the toolset moving?)`
                    })
                  )
              })
        return Effect.mapError(bounded, (error) =>
          isUndelivered(error)
            ? new LifecycleError.TransportError({
                toolset: name,
                message: `${name}: the cluster could not deliver ${what}: ${error._tag}`,
                cause: error
              })
            : error
        )
      }

    /** Reads the status now, so that a start or stop that returned is already on the board. */
    const refresh = entity.Status().pipe(
      deadline("status", requestTimeout),
      Effect.flatMap(observe),
      Effect.catch((error) => Effect.logDebug(error.message))
    )

    /** Starts in flight: meanwhile a runner's Stopped is the toolset before the start reached it. */
    let starting = 0
    const startOnce = Effect.gen(function* () {
      const now = yield* SubscriptionRef.get(latest)
      // "Should run" is recorded once per start from stopped, not on every start of a running toolset.
      if (!State.isUsable(now.state)) {
        if (State.isTerminal(now.state))
          yield* publish({ ...now, state: "Starting", since: yield* Clock.currentTimeMillis })
        yield* entity
          .Ensure({ spec }, { discard: true })
          .pipe(deadline("its start request", requestTimeout)<void, never>)
      }
      yield* entity
        .Start({ spec })
        .pipe(deadline("start", within(config.policy.startupTimeout)), Effect.andThen(refresh))
    }).pipe(
      // A start that failed before any reading shows it: what is known is the failure.
      Effect.tapError((error) =>
        Effect.flatMap(SubscriptionRef.get(latest), (shown) =>
          shown.state === "Starting"
            ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
                publish({
                  ...shown,
                  state: "Stopped",
                  since: now,
                  lastError: { tag: error._tag, message: error.message }
                })
              )
            : Effect.void
        )
      )
    )
    const start = Effect.suspend(() => {
      starting += 1
      return Effect.ensuring(
        startOnce,
        Effect.sync(() => {
          starting -= 1
        })
      )
    })

    const callLimit = within(config.policy.callTimeout) ?? requestTimeout

    /**
     * One call, with its failures classified as `CallOutcome` says: the runner has already made
     * its own true; here the cluster's own failures are, and so is a call whose answer never came
     * (a deadline, a defect, or an interruption the caller did not ask for): it may have run.
     */
    const callTool = (call: CallOutcome.Call, payload: Call) =>
      (lanes === undefined || lane === undefined
        ? viaCluster(call, payload)
        : viaLane(lanes, lane, call, payload)
      ).pipe(
        Effect.timeoutOrElse({
          duration: callLimit,
          orElse: () =>
            Effect.fail(
              CallOutcome.unknown(
                call,
                `no answer from the cluster within ${Duration.format(callLimit)} (is a runner up, or is the toolset moving?)`
              )
            )
        }),
        Effect.catchCause((cause) => {
          const failure = Cause.findErrorOption(cause)
          return Option.isSome(failure)
            ? Effect.fail(failure.value)
            : Effect.fail(CallOutcome.unknown(call, `the call ended without an answer: ${Cause.pretty(cause)}`, cause))
        })
      )

    const viaCluster = (call: CallOutcome.Call, payload: Call) =>
      entity
        .CallTool(payload)
        .pipe(Effect.catchIf(isUndelivered, (error) => Effect.fail(CallOutcome.undelivered(call, error))))

    /**
     * A call over the lane of the runner hosting the toolset (`LaneServer`): far cheaper than
     * through the cluster, and judged by the same host. What the lane hands back is re-delivered
     * through the cluster with the same id, as the cluster re-delivers a call whose runner died.
     */
    const viaLane = (client: LaneClient.Service, address: string, call: CallOutcome.Call, payload: Call) =>
      Effect.flatMap(
        client.call(address, id, payload, (silent) => {
          onLeave.add(silent)
          return () => onLeave.delete(silent)
        }),
        (outcome) => {
          switch (outcome._tag) {
            case "Ok":
              return Effect.succeed(outcome.result)
            case "Error":
              return Effect.fail(outcome.error)
            case "Died":
              return Effect.fail(
                CallOutcome.unknown(call, `the runner at ${address} failed without an answer: ${outcome.message}`)
              )
            case "Redeliver":
              return Effect.andThen(
                Effect.logDebug(`${name}: "${call.tool}" goes through the cluster: ${outcome.why}`),
                viaCluster(call, payload)
              )
          }
        }
      )

    /**
     * The last whole listing, and the reading it was made in. The registry lists all of an agent's
     * toolsets again whenever any status moves; asking the cluster each time would hold every
     * such call up behind a toolset that is moving, until the request's deadline. So a toolset
     * that is not serving answers at once, as a local one does (the catalog keeps its last-known
     * tools routable), and one whose tools have not changed since answers from its last listing.
     */
    let listed: { readonly reading: string; readonly listing: Toolset.Listing<Toolset.Tool> } | undefined
    const tools = Effect.flatMap(SubscriptionRef.get(latest), (now) => {
      if (!State.isUsable(now.state)) {
        const reason = LifecycleError.notStarted(name, `not ready (${now.state})`)
        return Effect.succeed<Toolset.Listing<Toolset.Tool>>({ complete: false, items: [], reason })
      }
      const reading = `${seen.incarnation}/${now.toolsVersion}`
      if (listed?.reading === reading) return Effect.succeed(listed.listing)
      return entity.ListTools().pipe(
        deadline("list tools", requestTimeout),
        Effect.map((listing) => {
          if (listing.complete) listed = { reading, listing }
          return listing
        })
      )
    })

    const toolset: Toolset.Toolset = {
      name,
      kind,
      start,
      stop: entity.Stop().pipe(
        deadline("stop", requestTimeout),
        Effect.andThen(refresh),
        Effect.catch((error) => Effect.logWarning(error.message))
      ),
      restart: entity
        .Restart()
        .pipe(deadline("restart", within(config.policy.startupTimeout)), Effect.andThen(refresh)),
      state: SubscriptionRef.get(latest),
      changes: SubscriptionRef.changes(latest),
      events: Stream.fromPubSub(transitions),
      tools,
      callTool: (tool, args) =>
        Effect.flatMap(Clock.currentTimeMillis, (sentAt) => {
          const callId = NodeCrypto.randomUUID()
          return callTool({ toolset: name, tool, callId }, { tool, args, callId, sentAt })
        })
    }
    return { toolset, lsp: config.type === "lsp" ? { ...toolset, spec: Toolsets.lspSpec(config) } : undefined }
  })

const undeliveredTags: ReadonlySet<unknown> = new Set([
  "MailboxFull",
  "AlreadyProcessingMessage",
  "PersistenceError",
  "EntityNotAssignedToRunner"
])

const isUndelivered = (error: unknown): error is CallOutcome.Undelivered =>
  Predicate.hasProperty(error, "_tag") && undeliveredTags.has(error._tag)
