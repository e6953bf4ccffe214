/**
 * A gateway request that arrives while the eager toolsets are still starting: many clients list
 * tools once, at connect, so `tools/list` and calls wait until the toolsets have settled, telling
 * the client what they wait for. Once settled, a request pays nothing for it.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js"
import type { State } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/** The toolsets still starting, as a client waiting for tools/list is told. */
const waitingFor = (board: ReadonlyArray<State.StatusSnapshot>) =>
  board.filter((s) => s.state === "Starting").map((s) => s.name)

/**
 * The last "waiting for" message each session was told: told once per session and change, not
 * once per waiting request (500 requests sent at once made 1,500 log lines).
 */
const told = new WeakMap<Server, string>()

/** Once settled (every request but the first few), a request costs no subscription and no race. */
export const isSettled = (ready: Deferred.Deferred<void> | undefined) =>
  ready === undefined || Deferred.isDoneUnsafe(ready)

/**
 * Waits for `ready`, telling the client what it waits for: a progress notification when the
 * request asked for progress, and a log message (MCP logging) when the session has not been told
 * that yet.
 */
export const settled = (
  server: Server,
  registry: ToolsetRegistry.Registry,
  ready: Deferred.Deferred<void> | undefined,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>
) => {
  if (ready === undefined || isSettled(ready)) return Effect.void
  const token = extra._meta?.progressToken
  const tell = (board: ReadonlyArray<State.StatusSnapshot>) => {
    const pending = waitingFor(board)
    if (pending.length === 0) return Effect.void
    const message = `waiting for toolsets to start: ${pending.join(", ")}`
    const progress =
      token === undefined
        ? Effect.void
        : Effect.tryPromise(() =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress: board.length - pending.length, total: board.length, message }
            })
          )
    const fresh = told.get(server) !== message
    told.set(server, message)
    const log = fresh
      ? Effect.tryPromise(() =>
          server.sendLoggingMessage({ level: "info", logger: "toolvisor", data: message }, extra.sessionId)
        )
      : Effect.void
    return Effect.ignore(Effect.andThen(progress, log))
  }
  return Effect.raceFirst(
    Deferred.await(ready),
    Effect.andThen(registry.status.pipe(Stream.runForEach(tell)), Effect.never)
  )
}
