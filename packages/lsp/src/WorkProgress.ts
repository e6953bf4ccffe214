/**
 * The work a language server is still doing, as it tells the client: its requests to the client
 * and its work-done progress (`window/workDoneProgress/create`, then `$/progress` begin … end).
 * Many servers finish starting after `initialized`, in the background: bash-language-server
 * analyses nothing it is sent until its `workspace/configuration` request has been answered, and
 * a `documentSymbol` asked in between gets "no symbols"; pyright registers its providers and
 * reads its settings; others report `Indexing…`. `settle` holds the handshake until the server
 * has gone quiet (bounded), so Ready means the server answers. Work a server announces later —
 * typescript-language-server loads a project only when a file is opened, under a progress of its
 * own — is `working`, for a query to wait on (`idle`).
 */
import { WallClock } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Rpc from "vscode-jsonrpc/node"

/** Work reports kept at once; past this a hostile server's tokens are not tracked. */
export const maxOpen = 256

export interface WorkProgress {
  /** Wraps a handler of a server-to-client request, so each one counts as activity. */
  readonly noting: <A extends ReadonlyArray<unknown>, R>(handler: (...args: A) => R) => (...args: A) => R
  /** Moves at each request from the server and each progress begin or end. */
  readonly activity: () => number
  /** True while some progress has begun and not ended. */
  readonly working: () => boolean
  /** Completes once no progress is open: at once when none is. */
  readonly idle: Effect.Effect<void>
}

type Token = number | string

/** Tracks the connection's progress notifications; register it before `listen`. */
export const make = (connection: Rpc.MessageConnection): WorkProgress => {
  const open = new Set<Token>()
  let activity = 0
  let quiet = Deferred.makeUnsafe<void>()
  Deferred.doneUnsafe(quiet, Effect.void)

  const begin = (token: Token) => {
    if (open.size >= maxOpen) return
    if (open.size === 0) quiet = Deferred.makeUnsafe<void>()
    open.add(token)
  }
  const end = (token: Token) => {
    if (!open.delete(token) || open.size > 0) return
    Deferred.doneUnsafe(quiet, Effect.void)
  }

  // Progress on tokens nobody registered a handler for: every work-done progress, since the
  // client never passes a token of its own.
  connection.onUnhandledProgress(({ token, value }) => {
    const kind: unknown = typeof value === "object" && value !== null && "kind" in value ? value.kind : undefined
    if (kind === "begin") begin(token)
    else if (kind === "end") end(token)
    else return
    activity += 1
  })

  return {
    noting:
      (handler) =>
      (...args) => {
        activity += 1
        return handler(...args)
      },
    activity: () => activity,
    working: () => open.size > 0,
    idle: Effect.suspend(() => Deferred.await(quiet))
  }
}

/**
 * Waits, at most `within` milliseconds of wall-clock time, until the server has done what
 * `initialized` set off: rounds of `roundTrip` (a request any server answers at once, even if
 * only with an error) until a whole round passes with no new request from the server and no
 * progress open. A server answers requests in order, so by the answer it has handled everything
 * sent before, our answers to its own requests included. A server still busy at the bound is
 * taken as it is: the bound keeps a slow server from failing its start.
 */
export const settle = <E>(work: WorkProgress, roundTrip: Effect.Effect<void, E>, within: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + within
    const remaining = () => Math.max(0, deadline - Date.now())
    for (;;) {
      const mark = work.activity()
      const answered = yield* Effect.raceFirst(
        Effect.as(roundTrip, true),
        Effect.as(WallClock.sleep(remaining()), false)
      )
      if (!answered) return
      if (work.activity() === mark && !work.working()) return
      yield* Effect.raceFirst(work.idle, WallClock.sleep(remaining()))
      if (remaining() === 0) return
    }
  })
