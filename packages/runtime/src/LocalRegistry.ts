/**
 * The in-process `ToolsetRegistry`: one supervised toolset per config identity, each in its own
 * scope, shared by every agent that references it. Status from all toolsets is gathered into one
 * board (a late subscriber sees the current picture first) and one event stream; catalogs are
 * computed per agent from the toolsets' own per-session caches, so nothing incomplete is ever
 * cached as complete here.
 */
import { type AgentConfig, ToolsetDiff } from "@toolvisor/config"
import { LifecycleError, Policy, State, type Toolset } from "@toolvisor/core"
import { LspRouter } from "@toolvisor/lsp"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Catalog from "./Catalog.ts"
import * as Secrets from "./Secrets.ts"
import * as Telemetry from "./Telemetry.ts"
import * as ToolsetRegistry from "./ToolsetRegistry.ts"
import * as Toolsets from "./Toolsets.ts"

export interface Options {
  /** The agent whose catalog is served by default; the config's first agent when omitted. */
  readonly agent?: string
  /**
   * Builds the toolset of a config entry in the given scope; by default it runs in this process.
   * A cluster registry builds a client of the toolset's entity instead, and reuses the rest.
   */
  readonly build?: (entry: AgentConfig.ToolsetConfig) => Effect.Effect<Toolsets.Built, never, Scope.Scope>
}

/** One running toolset and what the registry knows about it. */
interface Running {
  readonly config: AgentConfig.ToolsetConfig
  readonly toolset: Toolset.Toolset
  /** Set for LSP toolsets: an agent with several gets them behind one router. */
  readonly lsp: LspRouter.Backend | undefined
  readonly scope: Scope.Closeable
  /** Failures in a row seen by `reprobe`, so a failure is reported once per streak. */
  streak: number
}

const permanentTags = new Set(["AuthRequired", "CapabilityMissing"])

/** One part of an agent's catalog: a toolset, or a router over several LSP toolsets. */
interface Member {
  readonly name: string
  readonly prefix: string | undefined
  readonly allow: ReadonlyArray<string> | undefined
  readonly lazy: boolean
  readonly toolset: Toolset.Toolset
}

/**
 * How a call of one exposed name reaches its toolset, worked out with the catalog it belongs to,
 * so a call costs one lookup. What every call needs is made here once: the span's attributes, the
 * log annotation and the tagged metrics.
 */
interface Route {
  readonly owner: Member
  /** The tool's name as its toolset knows it. */
  readonly tool: string
  readonly span: { readonly attributes: { readonly toolset: string; readonly tool: string } }
  readonly logs: { readonly toolset: string }
  readonly recorder: Telemetry.CallRecorder
}

/** A call's span records no stack trace: its call site is always the same line of this file. */
const noStackTrace = { captureStackTrace: false } as const

/** An agent's catalog with the route of every tool in it, from the same members. */
interface Routed {
  readonly catalog: Catalog.Catalog
  readonly routes: ReadonlyMap<string, Route>
}

const memberOf = (entry: Running): Member => ({
  name: entry.config.name,
  prefix: entry.config.prefix,
  allow: entry.config.tools,
  lazy: entry.config.lazy,
  toolset: entry.toolset
})

export const make = (
  initial: AgentConfig.Config,
  options: Options = {}
): Effect.Effect<ToolsetRegistry.Registry, ToolsetRegistry.UnknownAgent, Scope.Scope> =>
  Effect.gen(function* () {
    const registryScope = yield* Effect.scope
    const hub = yield* PubSub.unbounded<ToolsetRegistry.ToolsetEvent>()
    const board = yield* SubscriptionRef.make<ReadonlyArray<State.StatusSnapshot>>([])
    const lock = yield* Semaphore.make(1)
    const running = new Map<string, Running>()
    const latest = new Map<string, State.StatusSnapshot>()
    let config = initial
    const agentNames = () => config.agents.map((a) => a.name)
    const defaultAgent = options.agent ?? initial.agents[0]?.name ?? "default"
    if (!initial.agents.some((a) => a.name === defaultAgent)) {
      return yield* unknownAgent(defaultAgent, agentNames())
    }

    /**
     * Bumped with every board change, and whenever the config or the set of running toolsets
     * changes: a catalog (and its routes) computed at an older version may be stale.
     */
    let catalogVersion = 0
    const complete = new Map<string, Routed & { readonly version: number }>()
    const recorders = new Map<string, Telemetry.CallRecorder>()

    const publishBoard = Effect.suspend(() => {
      catalogVersion += 1
      return SubscriptionRef.set(
        board,
        config.toolsets.flatMap((t) => {
          const snapshot = latest.get(t.identity)
          return snapshot === undefined ? [] : [snapshot]
        })
      )
    })

    /** Builds a toolset in a scope of its own and forwards its status; does not start it. */
    const launch = (entry: AgentConfig.ToolsetConfig) =>
      Effect.gen(function* () {
        const scope = yield* Scope.fork(registryScope)
        const mask = Secrets.masker(entry.secrets)
        const { toolset, lsp } = yield* (options.build ?? Toolsets.make)(entry).pipe(Scope.provide(scope))
        yield* toolset.events.pipe(
          Stream.runForEach((t) =>
            PubSub.publish(hub, {
              toolset: entry.name,
              from: t.from,
              snapshot: Secrets.snapshot(t.snapshot, mask)
            }).pipe(Effect.andThen(Telemetry.transition(entry.name, t.snapshot.state)))
          ),
          Effect.forkIn(scope, { startImmediately: true })
        )
        yield* toolset.changes.pipe(
          Stream.runForEach((snapshot) =>
            Effect.suspend(() => {
              latest.set(entry.identity, Secrets.snapshot(snapshot, mask))
              return publishBoard
            })
          ),
          Effect.forkIn(scope, { startImmediately: true })
        )
        running.set(entry.identity, { config: entry, toolset, lsp, scope, streak: 0 })
        catalogVersion += 1
      }).pipe(Effect.annotateLogs({ toolset: entry.name }))

    const dismiss = (identity: string) =>
      Effect.suspend(() => {
        const entry = running.get(identity)
        running.delete(identity)
        latest.delete(identity)
        catalogVersion += 1
        // Stop before closing: closing a remote toolset's scope only lets go of it.
        return entry === undefined
          ? Effect.void
          : Effect.andThen(entry.toolset.stop, Scope.close(entry.scope, Exit.void))
      })

    /**
     * Starts one toolset. An optional toolset that fails is logged and, unless its policy says
     * never, retried in the background by its own policy's schedule while the cause is transient.
     */
    const startOne = (entry: Running) =>
      entry.toolset.start.pipe(
        Effect.withSpan("toolvisor.start", { attributes: { toolset: entry.config.name } }),
        Effect.tapError((error) =>
          entry.config.policy.required
            ? Effect.void
            : Effect.logWarning(
                `optional toolset did not start: ${Secrets.masker(entry.config.secrets)(error.message)}`
              ).pipe(
                Effect.andThen(
                  entry.config.policy.restart === "never" || !LifecycleError.isTransient(error)
                    ? Effect.void
                    : entry.toolset.start.pipe(
                        Effect.retry({
                          schedule: Policy.schedule(entry.config.policy),
                          while: LifecycleError.isTransient
                        }),
                        Effect.ignore,
                        Effect.forkIn(entry.scope)
                      )
                )
              )
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
                  message: Secrets.masker(entry.config.secrets)(result.failure.message)
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

    /**
     * What an agent's catalog is made of: each toolset on its own, except that several LSP
     * toolsets sit behind one router, which sends file tools by file type and merges the
     * workspace-wide ones (their tool names are the same, so they could not sit side by side).
     */
    const members = (name: string) =>
      Effect.map(agentEntries(name), (entries): ReadonlyArray<Member> => {
        const lsp = entries.flatMap((e) => (e.lsp === undefined ? [] : [{ entry: e, lsp: e.lsp }]))
        if (lsp.length < 2) return entries.map(memberOf)
        const allows = lsp.map(({ entry }) => entry.config.tools)
        const router: Member = {
          name: lsp.map(({ entry }) => entry.config.name).join("+"),
          prefix: undefined,
          allow: allows.some((a) => a === undefined) ? undefined : allows.flatMap((a) => a ?? []),
          lazy: lsp.every(({ entry }) => entry.config.lazy),
          toolset: LspRouter.make(
            lsp.map(({ entry }) => entry.config.name).join("+"),
            lsp.map((l) => l.lsp)
          )
        }
        const first = lsp[0]?.entry
        return entries.flatMap((e) => (e.lsp === undefined ? [memberOf(e)] : e === first ? [router] : []))
      })

    const notStarted = (member: Member, message: string) =>
      new LifecycleError.NotStarted({ toolset: member.name, message: `${member.name}: ${message}` })

    const sourceOf = (member: Member) =>
      Effect.gen(function* () {
        const status = yield* member.toolset.state
        const listing: Toolset.Listing<Toolset.Tool> =
          member.lazy && status.state === "Stopped" && status.lastError === undefined
            ? { complete: false, items: [], reason: notStarted(member, "lazy: starts on first use") }
            : yield* member.toolset.tools.pipe(
                Effect.catch((error) =>
                  Effect.succeed({ complete: false as const, items: [], reason: notStarted(member, error.message) })
                )
              )
        return {
          toolset: member.name,
          prefix: member.prefix,
          allow: member.allow,
          listing,
          state: status.state
        } satisfies Catalog.Source
      })

    const recorderOf = (toolset: string) => {
      let recorder = recorders.get(toolset)
      if (recorder === undefined) {
        recorder = Telemetry.callRecorder(toolset)
        recorders.set(toolset, recorder)
      }
      return recorder
    }

    const routesOf = (catalog: Catalog.Catalog, all: ReadonlyArray<Member>): ReadonlyMap<string, Route> => {
      const byName = new Map(all.map((member) => [member.name, member]))
      const routes = new Map<string, Route>()
      for (const entry of catalog.tools) {
        const owner = byName.get(entry.toolset)
        if (owner === undefined) continue
        routes.set(entry.name, {
          owner,
          tool: entry.tool.name,
          span: { attributes: { toolset: owner.name, tool: entry.name } },
          logs: { toolset: owner.name },
          recorder: recorderOf(owner.name)
        })
      }
      return routes
    }

    /**
     * An agent's catalog and its routes. A complete one is kept until the board changes (a state,
     * a re-listing: `toolsVersion`) or the toolsets do, so routing a call costs no listing; an
     * incomplete one is never kept.
     */
    const routed = (name: string): Effect.Effect<Routed, ToolsetRegistry.UnknownAgent> =>
      Effect.suspend(() => {
        const kept = complete.get(name)
        if (kept !== undefined && kept.version === catalogVersion) return Effect.succeed(kept)
        const version = catalogVersion
        return members(name).pipe(
          Effect.flatMap((all) =>
            Effect.map(Effect.forEach(all, sourceOf, { concurrency: "unbounded" }), (sources) => {
              const catalog = Catalog.make(sources)
              const fresh = { catalog, routes: routesOf(catalog, all) }
              if (catalog.complete && version === catalogVersion) complete.set(name, { ...fresh, version })
              return fresh
            })
          )
        )
      })

    const catalog = (name: string = defaultAgent) => Effect.map(routed(name), (found) => found.catalog)

    /** A lazy toolset connects the first time a call needs a tool the catalog does not have yet. */
    const wakeLazy = (name: string) =>
      agentEntries(name).pipe(
        Effect.flatMap((entries) =>
          Effect.forEach(
            entries.filter((e) => e.config.lazy),
            (entry) =>
              Effect.flatMap(entry.toolset.state, (s) =>
                s.state === "Stopped" ? Effect.ignore(startOne(entry)) : Effect.succeed(false)
              ).pipe(Effect.as(true)),
            { concurrency: "unbounded" }
          )
        ),
        Effect.map((woken) => woken.length > 0)
      )

    const unknownTool = (tool: string, current: Catalog.Catalog) => {
      const near = Catalog.nearNames(
        tool,
        current.tools.map((t) => t.name)
      )
      return new ToolsetRegistry.UnknownTool({
        tool,
        near,
        incomplete: !current.complete,
        message: [
          `no tool named "${tool}"`,
          near.length > 0 ? ` (did you mean ${near.map((n) => `"${n}"`).join(", ")}?)` : "",
          current.complete ? "" : `; not ready: ${current.missing.map((m) => `${m.toolset} (${m.state})`).join(", ")}`
        ].join("")
      })
    }

    /** One call on its toolset: timed into the metrics, traced, and its logs annotated with the toolset. */
    const invoke = (
      route: Route,
      args: { readonly [key: string]: unknown }
    ): Effect.Effect<Toolset.ToolResult, ToolsetRegistry.CallError> =>
      Effect.flatMap(Clock.currentTimeMillis, (started) =>
        route.owner.toolset.callTool(route.tool, args).pipe(
          Effect.onExit((exit) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              route.recorder.record(now - started, Exit.isFailure(exit) ? failureTag(exit) : undefined)
            )
          ),
          Effect.withSpan("toolvisor.callTool", route.span, noStackTrace),
          Effect.annotateLogs(route.logs)
        )
      )

    const callTool = (
      tool: string,
      args: { readonly [key: string]: unknown },
      name: string = defaultAgent
    ): Effect.Effect<Toolset.ToolResult, ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent> =>
      Effect.suspend(() => {
        // The common case, checked without building an effect: a kept catalog that has the tool.
        const kept = complete.get(name)
        const route = kept !== undefined && kept.version === catalogVersion ? kept.routes.get(tool) : undefined
        if (route !== undefined) return invoke(route, args)
        return Effect.flatMap(routed(name), (found) => {
          const now = found.routes.get(tool)
          if (now !== undefined) return invoke(now, args)
          // Not in the catalog (yet): a lazy toolset may have it once started.
          return Effect.flatMap(wakeLazy(name), (woken) =>
            woken
              ? Effect.flatMap(routed(name), (again) => {
                  const late = again.routes.get(tool)
                  return late === undefined ? Effect.fail(unknownTool(tool, again.catalog)) : invoke(late, args)
                })
              : Effect.fail(unknownTool(tool, found.catalog))
          )
        })
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

    const reprobe = Effect.gen(function* () {
      const candidates = yield* Effect.filter(inOrder(), (entry) =>
        Effect.map(
          entry.toolset.state,
          (s) => State.isTerminal(s.state) && s.lastError !== undefined && !permanentTags.has(s.lastError.tag)
        )
      )
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
          const error = Secrets.masker(entry.config.secrets)(result.failure.message)
          if (entry.streak === 0) yield* Effect.logWarning(`${name} is still failing: ${error}`)
          entry.streak += 1
          failing.push({ toolset: name, error })
        }
      }
      return { recovered, failing }
    })

    const reload = (next: AgentConfig.Config) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const diff = ToolsetDiff.diff(config, next)
          config = next
          catalogVersion += 1
          yield* Effect.forEach(diff.removed, (t) => dismiss(t.identity), { discard: true })
          yield* Effect.forEach(diff.changed, ({ before }) => dismiss(before.identity), { discard: true })
          const fresh = [...diff.added, ...diff.changed.map(({ after }) => after)]
          yield* Effect.forEach(fresh, launch, { discard: true })
          const toStart = fresh.flatMap((t) => {
            const entry = running.get(t.identity)
            return entry === undefined || t.lazy ? [] : [entry]
          })
          yield* Effect.forEach(toStart, (entry) => Effect.ignore(startOne(entry)), {
            concurrency: "unbounded",
            discard: true
          })
          yield* publishBoard
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
      catalog,
      callTool,
      startToolset: (name) => Effect.flatMap(byName(name), (entry) => startOne(entry)),
      stopToolset: (name) => Effect.flatMap(byName(name), (entry) => entry.toolset.stop),
      restartToolset: (name) => Effect.flatMap(byName(name), (entry) => entry.toolset.restart),
      reprobe,
      reload
    } satisfies ToolsetRegistry.Registry
  })

const unknownAgent = (agent: string, known: ReadonlyArray<string>) =>
  Effect.fail(
    new ToolsetRegistry.UnknownAgent({
      agent,
      known,
      message: `no agent named "${agent}" (there are: ${known.join(", ")})`
    })
  )

const failureTag = <A>(exit: Exit.Exit<A, { readonly _tag: string }>): string => {
  if (Exit.isSuccess(exit)) return ""
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? reason.error._tag : reason?._tag === "Die" ? "Defect" : "Interrupted"
}
