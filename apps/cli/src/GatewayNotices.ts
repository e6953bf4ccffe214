/**
 * What every session of a gateway hears without asking: `list_changed` for tools, prompts and
 * resources when what the agent is offered changed (not when a toolset merely passed through a
 * restart and came back with the same), and its toolsets' servers' log messages. One fiber per
 * kind for the whole gateway, however many sessions there are: a session adds nothing to any
 * stream, and one that went away is simply not in `sessions()` any more.
 *
 * Log messages reach a session at the level it chose with `logging/setLevel` (the SDK's server
 * keeps that level per session and drops what is below it); before it chooses, it hears all the
 * servers send, which the toolsets' own `log_level` bounds. A backend's log message is not tied to
 * a request, so every session of the agent hears it; the logger says which toolset it came from.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Catalog, ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/** Sends to every session, each failure (a client gone) logged and ignored. */
const toEvery = (sessions: () => Iterable<Server>, send: (server: Server) => Promise<void>, what: string) =>
  Effect.forEach(
    Array.from(sessions()),
    (server) =>
      Effect.tryPromise(() => send(server)).pipe(
        Effect.catch((error) => Effect.logDebug(`a client missed ${what}`, error))
      ),
    { discard: true }
  )

/**
 * Sends `tools/list_changed` to every session each time the catalog's version moves: only when
 * the offered tools (names, descriptions, schemas) changed.
 */
export const toolChanges = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  initial: Catalog.Catalog,
  sessions: () => Iterable<Server>
): Effect.Effect<void> => {
  let announced = initial.version
  return registry.catalogChanges(agent).pipe(
    Stream.runForEach((catalog) => {
      if (catalog.version === announced) return Effect.void
      announced = catalog.version
      return Effect.andThen(
        Effect.logDebug("the catalog changed: sending tools/list_changed"),
        toEvery(sessions, (server) => server.sendToolListChanged(), "tools/list_changed")
      )
    }),
    Effect.catchTag("UnknownAgent", (error) => Effect.logWarning(`no longer announcing changes: ${error.message}`))
  )
}

/**
 * Sends `prompts/list_changed` and `resources/list_changed` when their catalogs' versions move,
 * looked at after every change of the toolsets' status (a start, a restart) and every listing a
 * server changed (its own `list_changed`, which changes no status).
 */
export const surfaceChanges = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  sessions: () => Iterable<Server>
): Effect.Effect<void> => {
  let prompts: number | undefined
  let resources: number | undefined
  return Stream.merge(registry.status, registry.listingChanges).pipe(
    Stream.runForEach(() =>
      Effect.gen(function* () {
        const promptCatalog = yield* registry.prompts(agent)
        const resourceCatalog = yield* registry.resources(agent)
        const promptsMoved = prompts !== undefined && promptCatalog.version !== prompts
        const resourcesMoved = resources !== undefined && resourceCatalog.version !== resources
        prompts = promptCatalog.version
        resources = resourceCatalog.version
        if (promptsMoved) yield* toEvery(sessions, (server) => server.sendPromptListChanged(), "prompts/list_changed")
        if (resourcesMoved) {
          yield* toEvery(sessions, (server) => server.sendResourceListChanged(), "resources/list_changed")
        }
      })
    ),
    Effect.catchTag("UnknownAgent", (error) => Effect.logWarning(`no longer announcing changes: ${error.message}`))
  )
}

/** The servers' log messages of the agent's toolsets (`toolsets`; every toolset's when undefined) to every session. */
export const logs = (
  registry: ToolsetRegistry.Registry,
  toolsets: ReadonlyArray<string> | undefined,
  sessions: () => Iterable<Server>
): Effect.Effect<void> => {
  const mine = toolsets === undefined ? undefined : new Set(toolsets)
  return registry.logs.pipe(
    Stream.filter((event) => mine === undefined || mine.has(event.toolset)),
    Stream.runForEach((event) => {
      const message = {
        level: event.level,
        logger: event.logger === undefined ? event.toolset : `${event.toolset}/${event.logger}`,
        data: event.data
      }
      return toEvery(
        sessions,
        (server) => server.sendLoggingMessage(message, server.transport?.sessionId),
        "a log message"
      )
    })
  )
}
