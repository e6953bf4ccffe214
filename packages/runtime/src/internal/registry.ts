/**
 * The in-process `ToolsetRegistry`: one supervised toolset per config identity, each in its own
 * scope, shared by every agent that references it. Status from all toolsets is gathered into one
 * board (a late subscriber sees the current picture first) and one event stream; catalogs and
 * call routing live in `Routing`. Restarting is the Supervisors' business: this module starts,
 * stops and replaces toolsets, and shuts them all down at once.
 */
import { type AgentConfig, AllowList, ToolsetDiff } from "@toolvisor/config"
import { LifecycleError, Redaction, State, type Toolset } from "@toolvisor/core"
import { ClientFeatures, type McpSurfaces } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Catalog from "../Catalog.ts"
import * as Inspection from "../Inspection.ts"
import * as Surfaces from "../Surfaces.ts"
import * as Telemetry from "../Telemetry.ts"
import * as ToolSearch from "../ToolSearch.ts"
import * as ToolsetRegistry from "../ToolsetRegistry.ts"
import * as Toolsets from "../Toolsets.ts"
import * as Unresolved from "../Unresolved.ts"
import * as McpRoutes from "./mcpRoutes.ts"
import * as Offer from "./offer.ts"
import * as Routing from "./routing.ts"

/** One running toolset and what the registry knows about it. */
interface Running extends Routing.Entry {
  readonly scope: Scope.Closeable
  readonly mcp: Toolsets.Built["mcp"]
  /** Failures in a row seen by `reprobe`, so a failure is reported once per streak. */
  streak: number
  /** False once a reload replaced it: its stop, and anything else it says, no longer speaks for its name. */
  current: boolean
}

/**
 * A toolset `reprobe` retries: down (stopped, failed, or waiting out a backoff) on an error a
 * retry may fix.
 */
export const isReprobeable = (s: State.StatusSnapshot): boolean =>
  (State.isTerminal(s.state) || s.state === "Restarting") &&
  s.lastError !== undefined &&
  !LifecycleError.isPermanentTag(s.lastError.tag)

export const make = (
  initial: AgentConfig.Config,
  options: ToolsetRegistry.Options = {}
): Effect.Effect<ToolsetRegistry.Registry, ToolsetRegistry.UnknownAgent, Scope.Scope> =>
  Effect.gen(function* () {
    const registryScope = yield* Effect.scope
    // Toolsets close all at once: a stuck server costs one close grace, however many there are.
    const toolsetsScope = yield* Scope.fork(registryScope, "parallel")
    const hub = yield* PubSub.unbounded<ToolsetRegistry.ToolsetEvent>()
    const logHub = yield* PubSub.sliding<McpSurfaces.LogEvent>(1_024)
    const listingHub = yield* PubSub.sliding<McpSurfaces.ListingChange>(1_024)
    const board = yield* SubscriptionRef.make<ReadonlyArray<State.StatusSnapshot>>([])
    const lock = yield* Semaphore.make(1)
    const running = new Map<string, Running>()
    const latest = new Map<string, State.StatusSnapshot>()
    let config = initial
    /** One for every toolset: a secret of one entry is masked in what any server says. */
    const redactor = Redaction.make()
    // The app's sampling, elicitation and roots, as provided where the registry is made.
    const features = yield* ClientFeatures.current
    const build =
      options.build ??
      ((entry: AgentConfig.ToolsetConfig) => Toolsets.make(entry, redactor, { features, folder: config.folder }))
    const agentNames = () => config.agents.map((a) => a.name)
    const defaultAgent = options.agent ?? initial.agents[0]?.name ?? "default"
    if (!initial.agents.some((a) => a.name === defaultAgent)) {
      return yield* unknownAgent(defaultAgent, agentNames())
    }

    /**
     * Bumped with every board change, and whenever the config or the set of running toolsets
     * changes: a catalog (and its routes) computed at an older version may be stale.
     */
    let version = 0

    const publishBoard = Effect.suspend(() => {
      version += 1
      return SubscriptionRef.set(
        board,
        config.toolsets.flatMap((t) => {
          const snapshot = latest.get(t.identity)
          return snapshot === undefined ? [] : [snapshot]
        })
      )
    })

    /**
     * A new tool list of a usable toolset: reads the catalogs of the agents that use it (which
     * records its tools in routing), and warns of `tools:` entries that match none of its tools.
     */
    const remember = (identity: string) =>
      Effect.andThen(
        Effect.forEach(
          config.agents.filter((agent) => agent.toolsets.includes(identity)),
          (agent) => Effect.ignore(routing.catalog(agent.name)),
          { discard: true }
        ),
        Effect.suspend(() => {
          const entry = running.get(identity)
          return entry === undefined ? Effect.void : warnUnmatched(entry)
        })
      )

    const warnUnmatched = (entry: Running) =>
      entry.toolset.tools.pipe(
        Effect.flatMap((listing) => {
          if (!listing.complete) return Effect.void
          const offered = listing.items.map((tool) => Catalog.exposedName(entry.config.prefix, tool.name))
          const unmatched = AllowList.check(entry.config, offered)
          return unmatched === undefined ? Effect.void : Effect.logWarning(AllowList.message(unmatched))
        }),
        Effect.ignore,
        Effect.annotateLogs({ toolset: entry.config.name })
      )

    /** Builds a toolset in a scope of its own and forwards its status; does not start it. */
    const launch = (entry: AgentConfig.ToolsetConfig) =>
      Effect.gen(function* () {
        const scope = yield* Scope.fork(toolsetsScope)
        const unresolved = Unresolved.of(entry)
        const built = unresolved === undefined ? build(entry) : Unresolved.make(entry, unresolved)
        const { toolset, lsp, mcp } = yield* built.pipe(Scope.provide(scope))
        const self: Running = { config: entry, toolset, lsp, mcp, scope, streak: 0, current: true }
        if (mcp !== undefined) {
          yield* mcp.logs.pipe(
            Stream.runForEach((event) => PubSub.publish(logHub, event)),
            Effect.forkIn(scope, { startImmediately: true })
          )
          yield* mcp.listingChanges.pipe(
            Stream.runForEach((change) => PubSub.publish(listingHub, change)),
            Effect.forkIn(scope, { startImmediately: true })
          )
        }
        const counted = offeredCounts(entry, toolset)
        yield* toolset.events.pipe(
          Stream.filter(() => self.current),
          Stream.runForEach((t) =>
            Effect.flatMap(counted(t.snapshot), (snapshot) =>
              PubSub.publish(hub, {
                toolset: entry.name,
                from: t.from,
                snapshot
              }).pipe(Effect.andThen(Telemetry.transition(entry.name, t.snapshot.state)))
            )
          ),
          Effect.forkIn(scope, { startImmediately: true })
        )
        let listed = -1
        yield* toolset.changes.pipe(
          Stream.filter(() => self.current),
          Stream.mapEffect(counted),
          Stream.runForEach((snapshot) =>
            Effect.suspend(() => {
              latest.set(entry.identity, snapshot)
              const recorded =
                snapshot.toolCount === undefined ? Effect.void : Telemetry.toolCount(entry.name, snapshot.toolCount)
              if (!State.isUsable(snapshot.state) || snapshot.toolsVersion === listed) {
                return Effect.andThen(recorded, publishBoard)
              }
              // A new tool list: read it now, so routing knows it even if the toolset restarts
              // before anyone asks for a catalog.
              listed = snapshot.toolsVersion
              return Effect.andThen(recorded, Effect.andThen(publishBoard, remember(entry.identity)))
            })
          ),
          Effect.forkIn(scope, { startImmediately: true })
        )
        running.set(entry.identity, self)
        version += 1
      }).pipe(Effect.annotateLogs({ toolset: entry.name }))

    /** Stops a toolset that left the registry and lets go of it: stop first, since closing a remote one's scope only lets go. */
    const retire = (entry: Running) => Effect.andThen(entry.toolset.stop, Scope.close(entry.scope, Exit.void))

    const dismiss = (identity: string) =>
      Effect.suspend(() => {
        const entry = running.get(identity)
        running.delete(identity)
        latest.delete(identity)
        version += 1
        return entry === undefined ? Effect.void : retire(entry)
      })

    /** Starts one toolset; an optional one that fails is logged (its Supervisor keeps trying). */
    const startOne = (entry: Routing.Entry) =>
      entry.toolset.start.pipe(
        Effect.withSpan("toolvisor.start", { attributes: { toolset: entry.config.name } }),
        Effect.tapError((error) =>
          entry.config.policy.required
            ? Effect.void
            : Effect.logWarning(`optional toolset did not start: ${error.message}`)
        ),
        Effect.annotateLogs({ toolset: entry.config.name })
      )

    const startAll = (entries: ReadonlyArray<Running>) =>
      Effect.gen(function* () {
        const results = yield* Effect.forEach(
          entries,
          (entry) => Effect.map(Effect.result(startOne(entry)), (result) => ({ entry, result })),
          { concurrency: "unbounded" }
        )
        const failures = results.flatMap(({ entry, result }) =>
          result._tag === "Failure" && entry.config.policy.required
            ? [
                {
                  toolset: entry.config.name,
                  tag: result.failure._tag,
                  message: result.failure.message
                }
              ]
            : []
        )
        if (failures.length === 0) return
        return yield* new ToolsetRegistry.StartFailed({
          message: [
            `${failures.length} required toolset(s) did not start:`,
            ...failures.map((f) => `  ${f.toolset}: ${f.tag}: ${f.message}`)
          ].join("\n"),
          failures
        })
      })

    const inOrder = () =>
      config.toolsets.flatMap((t) => {
        const entry = running.get(t.identity)
        return entry === undefined ? [] : [entry]
      })

    const agentEntries = (name: string) =>
      Effect.suspend(() => {
        const spec = config.agents.find((a) => a.name === name)
        if (spec === undefined) return unknownAgent(name, agentNames())
        return Effect.succeed(
          spec.toolsets.flatMap((identity) => {
            const entry = running.get(identity)
            return entry === undefined ? [] : [entry]
          })
        )
      })

    const routing = Routing.make({
      entries: agentEntries,
      agents: agentNames,
      version: () => version,
      status: SubscriptionRef.changes(board),
      start: (entry) => Effect.ignore(startOne(entry)),
      context: yield* Effect.context<never>()
    })

    const surfaces = McpRoutes.make({
      agentEntries,
      version: () => version,
      memory: Surfaces.memory()
    })
    /** Per agent: deferral and instructions on top of routing's catalog, and the agent's search index. */
    const offers = new Map<string, Offer.Tracker>()
    const indexes = new Map<string, { readonly index: ToolSearch.Index; version: number }>()

    const catalogOf = (name: string) =>
      Effect.map(routing.catalog(name), (catalog) => {
        const spec = config.agents.find((a) => a.name === name)
        if (spec === undefined) return catalog
        let tracker = offers.get(name)
        if (tracker === undefined) {
          tracker = Offer.tracker()
          offers.set(name, tracker)
        }
        const toolsets = spec.toolsets.flatMap((identity) => {
          const entry = running.get(identity)
          return entry === undefined ? [] : [entry.config]
        })
        return tracker.offer(catalog, spec, toolsets, (identity) => latest.get(identity)?.instructions)
      })

    /** Lazy toolsets of the agent that never listed: a search is their first use, as a call of an unknown name is. */
    const wakeLazy = (name: string) =>
      Effect.gen(function* () {
        const catalog = yield* catalogOf(name)
        const listed = new Set([...catalog.tools, ...catalog.offline].map((entry) => entry.toolset))
        const idle = yield* Effect.filter(yield* agentEntries(name), (entry) =>
          entry.config.lazy && !listed.has(entry.config.name)
            ? Effect.map(entry.toolset.state, (s) => s.state === "Stopped" && s.lastError === undefined)
            : Effect.succeed(false)
        )
        yield* Effect.forEach(idle, (entry) => Effect.ignore(startOne(entry)), {
          concurrency: "unbounded",
          discard: true
        })
      })

    const searchTools = (
      query: string,
      name: string,
      limit: number | undefined,
      within: ((name: string) => boolean) | undefined
    ) =>
      Effect.gen(function* () {
        yield* wakeLazy(name)
        const catalog = yield* catalogOf(name)
        let slot = indexes.get(name)
        if (slot === undefined) {
          slot = { index: ToolSearch.make(), version: -1 }
          indexes.set(name, slot)
        }
        if (slot.version !== catalog.version) {
          slot.index.update(catalog.tools)
          slot.version = catalog.version
        }
        return slot.index.search(query, limit, within)
      })

    const byName = (name: string) =>
      Effect.suspend(() => {
        const entry = inOrder().find((e) => e.config.name === name || e.config.identity === name)
        if (entry !== undefined) return Effect.succeed(entry)
        const known = inOrder().map((e) => e.config.name)
        return Effect.fail(
          new ToolsetRegistry.UnknownToolset({
            toolset: name,
            known,
            message: `no toolset named "${name}" (there are: ${known.join(", ")})`
          })
        )
      })

    /** The clashes of one toolset's prompts and resources, in every agent that has it, each once. */
    const clashesOf = (toolset: string) =>
      Effect.gen(function* () {
        const found = new Map<string, NonNullable<Inspection.Inspection["clashes"]>[number]>()
        for (const agent of agentNames()) {
          const prompts = yield* Effect.orElseSucceed(surfaces.prompts(agent), () => ({ clashes: [] }))
          const resources = yield* Effect.orElseSucceed(surfaces.resources(agent), () => ({ clashes: [] }))
          const all = [
            ...prompts.clashes.map((clash) => ({ kind: "prompt" as const, clash })),
            ...resources.clashes.map((clash) => ({ kind: "resource" as const, clash }))
          ]
          for (const one of all) {
            if (one.clash.toolset !== toolset && one.clash.shadowedBy !== toolset) continue
            found.set(`${one.kind}\u0000${one.clash.name}\u0000${one.clash.toolset}`, one)
          }
        }
        return [...found.values()]
      })

    const reprobe = Effect.gen(function* () {
      const candidates = yield* Effect.filter(inOrder(), (entry) => Effect.map(entry.toolset.state, isReprobeable))
      const results = yield* Effect.forEach(
        candidates,
        (entry) => Effect.map(Effect.result(entry.toolset.restart), (result) => ({ entry, result })),
        { concurrency: "unbounded" }
      )
      const recovered: Array<string> = []
      const failing: Array<{ readonly toolset: string; readonly error: string }> = []
      for (const { entry, result } of results) {
        const name = entry.config.name
        if (result._tag === "Success") {
          if (entry.streak > 0) yield* Effect.logInfo(`${name} recovered`)
          entry.streak = 0
          recovered.push(name)
        } else {
          const error = result.failure.message
          if (entry.streak === 0) yield* Effect.logWarning(`${name} is still failing: ${error}`)
          entry.streak += 1
          failing.push({ toolset: name, error })
        }
      }
      return { recovered, failing }
    })

    /**
     * Applies a new config. A changed toolset is replaced, not removed and added: its successor
     * takes its name at once and starts while it stops, so a call meanwhile waits for the new one
     * (routing keeps the name's last listing) instead of finding no such tool, and `status` and
     * `restart` know the name throughout. New toolsets start in the background: a server that
     * hangs in `initialize` holds up no later reload, and a call to its tools waits for it.
     */
    const reload = (next: AgentConfig.Config) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          if (!next.agents.some((agent) => agent.name === defaultAgent)) {
            const known = next.agents.map((agent) => agent.name)
            return yield* new ToolsetRegistry.UnknownAgent({
              agent: defaultAgent,
              known,
              message: `the new config has no agent "${defaultAgent}", the one this registry serves (it has: ${known.join(", ")}); restart to serve another`
            })
          }
          const diff = ToolsetDiff.diff(config, next)
          config = next
          version += 1
          yield* Effect.forEach(
            diff.removed.map((t) => t.identity),
            dismiss,
            { concurrency: "unbounded", discard: true }
          )
          const replaced = diff.changed.flatMap(({ before }) => {
            const entry = running.get(before.identity)
            if (entry !== undefined) entry.current = false
            return entry === undefined ? [] : [entry]
          })
          const fresh = [...diff.added, ...diff.changed.map(({ after }) => after)]
          yield* Effect.forEach(fresh, launch, { discard: true })
          const toStart = fresh.flatMap((t) => {
            const entry = running.get(t.identity)
            return entry === undefined || t.lazy ? [] : [entry]
          })
          yield* Effect.forEach(
            toStart,
            (entry) => Effect.forkIn(Effect.ignore(startOne(entry)), toolsetsScope, { startImmediately: true }),
            { discard: true }
          )
          yield* publishBoard
          yield* Effect.forEach(replaced, retire, { concurrency: "unbounded", discard: true })
          return diff
        })
      )

    yield* Effect.forEach(initial.toolsets, launch, { discard: true })
    yield* publishBoard

    return {
      agent: defaultAgent,
      agents: Effect.sync(agentNames),
      start: lock.withPermits(1)(Effect.suspend(() => startAll(inOrder().filter((e) => !e.config.lazy)))),
      snapshot: SubscriptionRef.get(board),
      status: SubscriptionRef.changes(board),
      events: Stream.fromPubSub(hub),
      catalog: (name = defaultAgent) => catalogOf(name),
      catalogChanges: (name = defaultAgent) =>
        SubscriptionRef.changes(board).pipe(
          Stream.mapEffect(() => catalogOf(name)),
          Stream.changesWith((a, b) => a.version === b.version && a.complete === b.complete)
        ),
      searchTools: (query, { limit, agent = defaultAgent, within } = {}) => searchTools(query, agent, limit, within),
      callTool: (tool, args, name = defaultAgent, options) => routing.callTool(tool, args, name, options),
      callToolNow: (tool, args, name = defaultAgent, signal, origin) =>
        routing.callToolNow(tool, args, name, signal, origin),
      startToolset: (name) => Effect.flatMap(byName(name), (entry) => startOne(entry)),
      stopToolset: (name) => Effect.flatMap(byName(name), (entry) => entry.toolset.stop),
      restartToolset: (name) =>
        Effect.flatMap(byName(name), (entry) =>
          Effect.withSpan(entry.toolset.restart, "toolvisor.restart", { attributes: { toolset: name } })
        ),
      inspect: (name) =>
        Effect.flatMap(byName(name), (entry) =>
          Effect.flatMap(clashesOf(entry.config.name), (clashes) =>
            Inspection.make(entry.config, entry.toolset, clashes)
          )
        ),
      reprobe,
      reload,
      prompts: (name = defaultAgent) => surfaces.prompts(name),
      getPrompt: (prompt, args, name = defaultAgent, options) => surfaces.getPrompt(prompt, args, name, options),
      resources: (name = defaultAgent) => surfaces.resources(name),
      readResource: (uri, name = defaultAgent, options) => surfaces.readResource(uri, name, options),
      getPromptNow: (prompt, args, name = defaultAgent, options, signal) =>
        surfaces.getPromptNow(prompt, args, name, options, signal),
      readResourceNow: (uri, name = defaultAgent, options, signal) =>
        surfaces.readResourceNow(uri, name, options, signal),
      subscribe: (uri, name = defaultAgent) => surfaces.subscribe(uri, name),
      complete: (params, name = defaultAgent) => surfaces.complete(params, name),
      logs: Stream.fromPubSub(logHub),
      listingChanges: Stream.fromPubSub(listingHub)
    } satisfies ToolsetRegistry.Registry
  })

/**
 * A toolset's snapshots with the tool count every output shows: the tools it offers after its
 * `tools:` and `deny` filters (`Catalog.offeredCount`), counted once per tool list
 * (`toolsVersion`) for its events and its board alike. Without a filter the session's own count
 * is that number already. A list that can no longer be read (the toolset went down meanwhile)
 * keeps the last count, or none.
 */
const offeredCounts = (
  entry: AgentConfig.ToolsetConfig,
  toolset: Toolset.Toolset
): ((snapshot: State.StatusSnapshot) => Effect.Effect<State.StatusSnapshot>) => {
  const filter = Catalog.filterOf(entry)
  if (filter.allow === undefined && filter.deny === undefined) return Effect.succeed
  let counted: { readonly toolsVersion: number; readonly count: number } | undefined
  return (snapshot) => {
    if (snapshot.toolCount === undefined) return Effect.succeed(snapshot)
    if (counted?.toolsVersion === snapshot.toolsVersion) return Effect.succeed(withCount(snapshot, counted.count))
    return toolset.tools.pipe(
      Effect.map((listing) => {
        if (listing.complete) {
          counted = { toolsVersion: snapshot.toolsVersion, count: Catalog.offeredCount(filter, listing.items) }
        }
        return withCount(snapshot, counted?.count)
      }),
      Effect.orElseSucceed(() => withCount(snapshot, counted?.count))
    )
  }
}

const withCount = (snapshot: State.StatusSnapshot, toolCount: number | undefined): State.StatusSnapshot => {
  if (toolCount !== undefined) return { ...snapshot, toolCount }
  const { toolCount: _raw, ...rest } = snapshot
  return rest
}

const unknownAgent = (agent: string, known: ReadonlyArray<string>) =>
  Effect.fail(
    new ToolsetRegistry.UnknownAgent({
      agent,
      known,
      message: `no agent named "${agent}" (there are: ${known.join(", ")})`
    })
  )
