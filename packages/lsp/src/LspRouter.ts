/**
 * Several language servers as one toolset, for an agent that works in more than one language:
 * file tools go to the server whose `fileTypes` match the file, workspace-wide tools
 * (`lsp_workspace`, `lsp_workspace_symbols`) go to every usable server and their answers are
 * merged. Each backend keeps its own supervisor and status; the router's status summarizes them.
 */
import * as NodePath from "node:path"
import { type LifecycleError, State, Toolset } from "@toolvisor/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as LspSpec from "./LspSpec.ts"
import * as LspTools from "./LspTools.ts"
import * as ToolHandlers from "./ToolHandlers.ts"
import * as ToolResults from "./ToolResults.ts"
import * as Workspace from "./Workspace.ts"

/** A language-server toolset as the router sees it: any toolset with the spec that says what files it takes. */
export interface Backend extends Toolset.Toolset {
  readonly spec: LspSpec.LspSpec
}

export interface LspRouter extends Toolset.Toolset {
  readonly backends: ReadonlyArray<Backend>
}

/**
 * The router's state: Ready only when every backend is; Degraded when some serve and others do
 * not (the agent still gets answers, for some files); otherwise the most hopeful of the rest.
 */
export const summarize = (states: ReadonlyArray<State.State>): State.State => {
  if (states.length > 0 && states.every((s) => s === "Ready")) return "Ready"
  if (states.some(State.isUsable)) return "Degraded"
  for (const state of ["Restarting", "Starting", "Failed"] as const) if (states.includes(state)) return state
  return "Stopped"
}

/** Merges the backends' listings: one tool per name, complete only when every listing is. */
export const mergeListings = (
  listings: ReadonlyArray<Toolset.Listing<Toolset.Tool>>
): Toolset.Listing<Toolset.Tool> => {
  const byName = new Map<string, Toolset.Tool>()
  for (const tool of listings.flatMap((listing) => listing.items)) {
    if (!byName.has(tool.name)) byName.set(tool.name, tool)
  }
  const items = [...byName.values()]
  const incomplete = listings.find((listing) => !listing.complete)
  return incomplete === undefined || incomplete.complete ? { complete: true, items } : { ...incomplete, items }
}

export const make = (name: string, backends: ReadonlyArray<Backend>): LspRouter => {
  const snapshot = Effect.gen(function* () {
    const statuses = yield* Effect.forEach(backends, (backend) => backend.state)
    const state = summarize(statuses.map((s) => s.state))
    const first = statuses.find((s) => s.lastError !== undefined)
    return {
      name,
      kind: "lsp",
      state,
      since: Math.max(0, ...statuses.map((s) => s.since), yield* Clock.currentTimeMillis),
      restarts: statuses.reduce((n, s) => n + s.restarts, 0),
      attempt: Math.max(0, ...statuses.map((s) => s.attempt)),
      // Every backend's bump is a bump of the merged catalogue.
      toolsVersion: statuses.reduce((n, s) => n + s.toolsVersion, 0),
      ...(first?.lastError === undefined ? {} : { lastError: first.lastError })
    }
  })

  const changes = Stream.mergeAll(
    backends.map((backend) => backend.changes),
    { concurrency: "unbounded" }
  ).pipe(
    Stream.mapEffect(() => snapshot),
    Stream.changesWith((a, b) => a.state === b.state && a.toolsVersion === b.toolsVersion && a.restarts === b.restarts)
  )

  const events = changes.pipe(
    Stream.mapAccum(
      () => undefined as State.State | undefined,
      (previous: State.State | undefined, next: State.StatusSnapshot) =>
        [
          next.state,
          previous === undefined || previous === next.state ? [] : [{ from: previous, snapshot: next }]
        ] as const
    )
  )

  const all = <E>(run: (backend: Backend) => Effect.Effect<void, E>) =>
    Effect.forEach(backends, run, { concurrency: "unbounded", discard: true })

  const broadcast = (tool: string, args: { readonly [key: string]: unknown }) =>
    Effect.gen(function* () {
      const exits = yield* Effect.forEach(
        backends,
        (backend) =>
          backend.tools.pipe(
            Effect.flatMap((listing) =>
              listing.complete && listing.items.some((t) => t.name === tool)
                ? Effect.map(backend.callTool(tool, args), (result) => ({ backend: backend.name, result }))
                : Effect.succeed(undefined)
            ),
            Effect.exit
          ),
        { concurrency: "unbounded" }
      )
      const answers = exits.flatMap((exit, index) =>
        Exit.isSuccess(exit)
          ? exit.value === undefined
            ? []
            : [exit.value]
          : [{ backend: backends[index]?.name ?? "", result: ToolResults.failure(String(exit.cause)) }]
      )
      if (answers.length === 0) {
        return ToolResults.failure(`${name}: no language server that offers ${tool} is ready`)
      }
      const text = answers
        .map(
          ({ backend, result }) =>
            `[${backend}]\n${result.content.map((c) => (typeof c.text === "string" ? c.text : "")).join("\n")}`
        )
        .join("\n---\n")
      return {
        content: [{ type: "text", text }],
        structuredContent: {
          backends: answers.map(({ backend, result }) => ({
            name: backend,
            ...(result.isError === true ? { isError: true } : {}),
            ...result.structuredContent
          }))
        },
        ...(answers.every(({ result }) => result.isError === true) ? { isError: true } : {})
      } satisfies Toolset.ToolResult
    })

  const callTool = (
    tool: string,
    args: { readonly [key: string]: unknown }
  ): Effect.Effect<Toolset.ToolResult, Toolset.ToolError | LifecycleError.LifecycleError> => {
    if (!ToolHandlers.handlers.has(tool)) {
      return Effect.fail(
        new Toolset.ToolNotFound({
          toolset: name,
          tool,
          message: `${name}: no tool named "${tool}" (it has ${LspTools.all.map((d) => d.name).join(", ")})`
        })
      )
    }
    if (LspTools.workspaceWide.has(tool)) return broadcast(tool, args)
    // The extension picks the server, and it is the same whatever root a relative path is
    // resolved against; the backend resolves it against its own, and confines it.
    const path = Workspace.given(NodePath.sep, "file", args.file)
    if (Result.isFailure(path)) return Effect.succeed(ToolResults.refusal(path.failure))
    const backend = backends.find((b) => LspSpec.handles(b.spec, path.success))
    if (backend === undefined) {
      const types = backends.map((b) => `${b.name}: ${b.spec.fileTypes.join(", ") || "all"}`).join("; ")
      return Effect.succeed(ToolResults.failure(`file: no language server handles ${args.file} (${types})`))
    }
    return backend.callTool(tool, args)
  }

  return {
    name,
    kind: "lsp",
    backends,
    start: all((backend) => backend.start),
    stop: all((backend) => backend.stop),
    restart: all((backend) => backend.restart),
    state: snapshot,
    changes,
    events,
    tools: Effect.forEach(backends, (backend) => backend.tools, { concurrency: "unbounded" }).pipe(
      Effect.map(mergeListings)
    ),
    callTool
  }
}
