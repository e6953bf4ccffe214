/**
 * An agent's catalog and the route of every tool in it. A toolset that has listed its tools once
 * keeps them routable while it starts again or restarts, so a call made 2 ms after a crash waits
 * for the toolset to be back (the Supervisor bounds the wait by `call_timeout`) instead of
 * failing; a tool of a toolset that stopped or failed fails at once with that toolset's error.
 * `UnknownTool` is left for names no toolset has offered — after waiting for toolsets whose first
 * start is in flight, and waking lazy ones. A catalog is rebuilt only when the registry's version
 * moves (a state, a re-listing, the config), and its own `version` moves only when the offered
 * tools changed, which is what `changes` reports.
 */
import type { AgentConfig } from "@toolvisor/config"
import { type CallOrigin, LifecycleError, State, type Toolset, Tracing } from "@toolvisor/core"
import { LspRouter } from "@toolvisor/lsp"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as Catalog from "../Catalog.ts"
import * as Telemetry from "../Telemetry.ts"
import * as ToolsetRegistry from "../ToolsetRegistry.ts"

/** A running toolset as routing sees it. */
export interface Entry {
  readonly config: AgentConfig.ToolsetConfig
  readonly toolset: Toolset.Toolset
  /** Set for LSP toolsets: an agent with several gets them behind one router. */
  readonly lsp: LspRouter.Backend | undefined
}

export interface Options {
  /** The agents' toolsets, in config order, as they run now. */
  readonly entries: (agent: string) => Effect.Effect<ReadonlyArray<Entry>, ToolsetRegistry.UnknownAgent>
  /** Every agent of the config, by name. */
  readonly agents: () => ReadonlyArray<string>
  /** Moves whenever a toolset's status, a listing, the config or the running set changes. */
  readonly version: () => number
  /** The registry's status stream: each emission may change a catalog. */
  readonly status: Stream.Stream<unknown>
  /** Starts a lazy toolset (errors are the toolset's own business). */
  readonly start: (entry: Entry) => Effect.Effect<void>
  /** The registry's context: the metrics and tracer of calls made outside the runtime (`callToolNow`). */
  readonly context: Context.Context<never>
}

export interface Routing {
  readonly catalog: (agent: string) => Effect.Effect<Catalog.Catalog, ToolsetRegistry.UnknownAgent>
  readonly callTool: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent: string,
    options?: Toolset.CallOptions
  ) => Effect.Effect<Toolset.ToolResult, ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent>
  /** The agent's catalog now, then each time its offered tools or its completeness change. */
  readonly changes: (agent: string) => Stream.Stream<Catalog.Catalog, ToolsetRegistry.UnknownAgent>
  readonly callToolNow: (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent: string,
    signal?: AbortSignal,
    origin?: CallOrigin.CallOrigin
  ) => Promise<Exit.Exit<Toolset.ToolResult, ToolsetRegistry.CallError>> | undefined
}

/** One part of an agent's catalog: a toolset, or a router over several LSP toolsets. */
interface Member {
  readonly name: string
  readonly prefix: string | undefined
  readonly allow: ReadonlyArray<string> | undefined
  readonly deny?: ReadonlyArray<string> | undefined
  readonly lazy: boolean
  readonly toolset: Toolset.Toolset
  readonly entries: ReadonlyArray<Entry>
}

/**
 * How a call of one exposed name reaches its toolset, worked out with the catalog it belongs to,
 * so a call costs one lookup. What every call needs is made here once: the span's attributes and
 * the tagged metrics.
 */
interface Route {
  readonly owner: Member
  /** The tool's name as its toolset knows it. */
  readonly tool: string
  readonly span: Tracing.Options
  readonly recorder: Telemetry.CallRecorder
}

interface Routed {
  readonly catalog: Catalog.Catalog
  readonly routes: ReadonlyMap<string, Route>
  readonly members: ReadonlyArray<Member>
}

const memberOf = (entry: Entry): Member => ({
  name: entry.config.name,
  prefix: entry.config.prefix,
  allow: entry.config.tools,
  deny: entry.config.deny,
  lazy: entry.config.lazy,
  toolset: entry.toolset,
  entries: [entry]
})

/**
 * What an agent's catalog is made of: each toolset on its own, except that several LSP toolsets
 * sit behind one router, which sends file tools by file type and merges the workspace-wide ones
 * (their tool names are the same, so they could not sit side by side).
 */
const membersOf = (entries: ReadonlyArray<Entry>): ReadonlyArray<Member> => {
  const lsp = entries.filter((e) => e.lsp !== undefined)
  if (lsp.length < 2) return entries.map(memberOf)
  const allows = lsp.map((entry) => entry.config.tools)
  const name = lsp.map((entry) => entry.config.name).join("+")
  const router: Member = {
    name,
    prefix: undefined,
    allow: allows.some((a) => a === undefined) ? undefined : allows.flatMap((a) => a ?? []),
    lazy: lsp.every((entry) => entry.config.lazy),
    toolset: LspRouter.make(
      name,
      lsp.flatMap((entry) => (entry.lsp === undefined ? [] : [entry.lsp]))
    ),
    entries: lsp
  }
  return entries.flatMap((e) => (e.lsp === undefined ? [memberOf(e)] : e === lsp[0] ? [router] : []))
}

const isSettled = (state: State.State) => State.isUsable(state) || State.isTerminal(state)

export const make = (options: Options): Routing => {
  const traced = Tracing.isTraced(options.context)
  const kept = new Map<string, Routed & { readonly at: number }>()
  /** What each member listed the last time it was usable, by member name. */
  const lastKnown = new Map<string, ReadonlyArray<Toolset.Tool>>()
  const recorders = new Map<string, Telemetry.CallRecorder>()

  const recorderOf = (toolset: string) => {
    let recorder = recorders.get(toolset)
    if (recorder === undefined) {
      recorder = Telemetry.callRecorder(toolset)
      recorders.set(toolset, recorder)
    }
    return recorder
  }

  const notStarted = (member: Member, message: string) => LifecycleError.notStarted(member.name, message)

  const neverStarted = (member: Member, state: State.State, error: string | undefined) =>
    member.lazy && state === "Stopped" && error === undefined

  const sourceOf = (member: Member) =>
    Effect.gen(function* () {
      const status = yield* member.toolset.state
      const listing: Toolset.Listing<Toolset.Tool> = neverStarted(member, status.state, status.lastError?.tag)
        ? { complete: false, items: [], reason: notStarted(member, "lazy: starts on first use") }
        : yield* member.toolset.tools.pipe(
            Effect.catch((error) =>
              Effect.succeed({ complete: false as const, items: [], reason: notStarted(member, error.message) })
            )
          )
      if (listing.complete) lastKnown.set(member.name, listing.items)
      return {
        toolset: member.name,
        prefix: member.prefix,
        allow: member.allow,
        deny: member.deny,
        listing,
        state: status.state,
        lastKnown: lastKnown.get(member.name)
      } satisfies Catalog.Source
    })

  const routesOf = (catalog: Catalog.Catalog, members: ReadonlyArray<Member>): ReadonlyMap<string, Route> => {
    const byName = new Map(members.map((member) => [member.name, member]))
    const routes = new Map<string, Route>()
    for (const entry of [...catalog.tools, ...catalog.offline]) {
      const owner = byName.get(entry.toolset)
      if (owner === undefined || routes.has(entry.name)) continue
      routes.set(entry.name, {
        owner,
        tool: entry.tool.name,
        span: { attributes: () => ({ toolset: owner.name, tool: entry.name }) },
        recorder: recorderOf(owner.name)
      })
    }
    return routes
  }

  /**
   * An agent's catalog and its routes, kept until the registry's version moves. A catalog whose
   * gaps come from a listing that failed on a usable toolset is not kept: the next call lists again.
   */
  const routed = (agent: string): Effect.Effect<Routed, ToolsetRegistry.UnknownAgent> =>
    Effect.suspend(() => {
      const found = kept.get(agent)
      if (found !== undefined && found.at === options.version()) return Effect.succeed(found)
      const at = options.version()
      return options.entries(agent).pipe(
        Effect.flatMap((entries) => {
          const members = membersOf(entries)
          return Effect.map(Effect.forEach(members, sourceOf, { concurrency: "unbounded" }), (sources) => {
            const catalog = Catalog.make(sources, found?.catalog)
            const fresh = { catalog, routes: routesOf(catalog, members), members }
            const keepable = sources.every((s) => s.listing.complete || !State.isUsable(s.state))
            if (keepable && at === options.version()) kept.set(agent, { ...fresh, at })
            return fresh
          })
        })
      )
    })

  /** The route of `tool` in the agent's kept catalog, when that catalog is current: a call's common case. */
  const keptRoute = (agent: string, tool: string): Route | undefined => {
    const found = kept.get(agent)
    return found !== undefined && found.at === options.version() ? found.routes.get(tool) : undefined
  }

  /**
   * One call on its toolset: timed into the metrics, and traced when a tracer is installed. Every
   * call passes here, so it takes what it needs of the fiber (its clock, whether it is traced, its
   * metrics) in the step that starts the call, and records the call as it ends rather than in a
   * step of its own. Its logs get no annotation of their own: nothing on a call's fiber logs, and
   * what a toolset logs (connects, probes, restarts) runs in its own fibers, annotated with the
   * toolset when it was launched.
   */
  const invoke = (
    fiber: Fiber.Fiber<unknown, unknown>,
    route: Route,
    args: { readonly [key: string]: unknown },
    callOptions: Toolset.CallOptions | undefined
  ): Effect.Effect<Toolset.ToolResult, ToolsetRegistry.CallError> => {
    const clock = fiber.getRef(Clock.Clock)
    const started = clock.currentTimeMillisUnsafe()
    const traced = Tracing.isTraced(fiber.context)
    const call = Effect.onExitPrimitive(
      route.owner.toolset.callTool(route.tool, args, callOptions),
      (exit) => {
        const failure = Exit.isFailure(exit) ? failureTag(exit.cause) : undefined
        route.recorder.recordUnsafe(clock.currentTimeMillisUnsafe() - started, failure, fiber.context)
        if (!traced) return undefined
        const outcome = failure ?? (Exit.isSuccess(exit) && exit.value.isError === true ? "ToolError" : "ok")
        return Effect.annotateCurrentSpan("outcome", outcome)
      }
      // Not marked interruptible: Effect skips an interruptible exit hook when the fiber is
      // interrupted, so a call a client cancelled would end unrecorded and its span unannotated.
    )
    return traced ? Tracing.withSpan(call, "toolvisor.callTool", route.span) : call
  }

  /**
   * Before a name is declared unknown: wakes lazy toolsets and waits for first starts in flight,
   * each within its own `call_timeout`. True when any toolset was waited for.
   */
  const settleUnlisted = (members: ReadonlyArray<Member>) =>
    Effect.gen(function* () {
      const pending = yield* Effect.filter(members, (member) =>
        Effect.map(
          member.toolset.state,
          (s) =>
            !lastKnown.has(member.name) && (s.state === "Starting" || neverStarted(member, s.state, s.lastError?.tag))
        )
      )
      yield* Effect.forEach(
        pending,
        (member) =>
          Effect.gen(function* () {
            if (member.lazy) yield* Effect.forEach(member.entries, options.start, { discard: true })
            const timeout = member.entries[0]?.config.policy.callTimeout ?? Duration.seconds(60)
            yield* member.toolset.changes.pipe(
              Stream.filter((s) => isSettled(s.state)),
              Stream.runHead,
              Effect.timeoutOption(timeout)
            )
          }),
        { concurrency: "unbounded", discard: true }
      )
      return pending.length > 0
    })

  /**
   * The name is not on offer. It may still be the tool of a toolset that has not listed — one
   * whose prefix the name carries, or that has none — and then the failure says so (`incomplete`).
   */
  /** A name as an error quotes it: the caller's, so a long one is cut (a 100 KB name made a 100 KB answer). */
  const shown = (tool: string) => (tool.length > 200 ? `${tool.slice(0, 200)}… (${tool.length} characters)` : tool)

  /**
   * The other agents whose catalogs offer `tool`: with several agents a caller easily asks the
   * wrong one (the first is the default), and "no tool named" about a tool `status` shows Ready
   * reads as a lie.
   */
  const offeredElsewhere = (tool: string, agent: string) =>
    Effect.filter(
      options.agents().filter((other) => other !== agent),
      (other) =>
        Effect.match(routed(other), {
          onFailure: () => false,
          onSuccess: (r) => r.routes.has(tool)
        })
    )

  const unknownTool = (
    tool: string,
    current: Catalog.Catalog,
    members: ReadonlyArray<Member>,
    elsewhere: ReadonlyArray<string>
  ) => {
    const near = Catalog.nearNames(
      tool,
      current.tools.map((t) => t.name)
    )
    const couldOwn = current.missing.filter((m) => {
      const prefix = members.find((member) => member.name === m.toolset)?.prefix
      return prefix === undefined || tool.startsWith(`${prefix}_`)
    })
    return new ToolsetRegistry.UnknownTool({
      tool,
      near,
      incomplete: couldOwn.length > 0,
      message: [
        `no tool named "${shown(tool)}"`,
        near.length > 0 ? ` (did you mean ${near.map((n) => `"${n}"`).join(", ")}?)` : "",
        couldOwn.length === 0 ? "" : `; not ready: ${couldOwn.map((m) => `${m.toolset} (${m.state})`).join(", ")}`,
        elsewhere.length === 0
          ? ""
          : `; ${elsewhere.length === 1 ? "agent" : "agents"} ${elsewhere.map((a) => `"${a}"`).join(", ")} ${elsewhere.length === 1 ? "offers" : "offer"} it (choose the agent to call it)`
      ].join("")
    })
  }

  const callTool = (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent: string,
    callOptions?: Toolset.CallOptions
  ): Effect.Effect<Toolset.ToolResult, ToolsetRegistry.CallError | ToolsetRegistry.UnknownAgent> =>
    Effect.withFiber((fiber) => {
      // The common case, checked without building an effect: a kept catalog that has the tool.
      const route = keptRoute(agent, tool)
      if (route !== undefined) return invoke(fiber, route, args, callOptions)
      return Effect.flatMap(routed(agent), (now) => {
        const late = now.routes.get(tool)
        if (late !== undefined) return invoke(fiber, late, args, callOptions)
        const unknown = (at: Routed) =>
          Effect.flatMap(offeredElsewhere(tool, agent), (elsewhere) =>
            Effect.fail(unknownTool(tool, at.catalog, at.members, elsewhere))
          )
        return Effect.flatMap(settleUnlisted(now.members), (waited) =>
          waited
            ? Effect.flatMap(routed(agent), (again) => {
                const settled = again.routes.get(tool)
                return settled === undefined ? unknown(again) : invoke(fiber, settled, args, callOptions)
              })
            : unknown(now)
        )
      })
    })

  /**
   * `callTool` for the common case, outside the runtime: a kept route to a toolset that can send
   * at once. Timed into the same metrics; left to `callTool` when a tracer wants the call's span.
   */
  const callToolNow = (
    tool: string,
    args: { readonly [key: string]: unknown },
    agent: string,
    signal?: AbortSignal,
    origin?: CallOrigin.CallOrigin
  ) => {
    if (traced) return undefined
    const route = keptRoute(agent, tool)
    if (route === undefined) return undefined
    const started = Date.now()
    return route.owner.toolset.callToolNow?.(route.tool, args, signal, origin)?.then((exit) => {
      const failure = Exit.isFailure(exit) ? failureTag(exit.cause) : undefined
      route.recorder.recordUnsafe(Date.now() - started, failure, options.context)
      return exit
    })
  }

  const changes = (agent: string) =>
    options.status.pipe(
      Stream.mapEffect(() => Effect.map(routed(agent), (r) => r.catalog)),
      Stream.changesWith((a, b) => a.version === b.version && a.complete === b.complete)
    )

  return { catalog: (agent) => Effect.map(routed(agent), (r) => r.catalog), callTool, changes, callToolNow }
}

/** The tag of a call's failure, for the failure metric. */
const failureTag = (cause: Cause.Cause<{ readonly _tag: string }>): string => {
  const error = Cause.findErrorOption(cause)
  return error._tag === "Some" ? error.value._tag : Cause.hasDies(cause) ? "Defect" : "Interrupted"
}
