/**
 * The diagnostics a server has for the version of a document just sent. Pulled
 * (`textDocument/diagnostic`) when the server offers that — the answer is for that version, no
 * waiting — otherwise waited for as pushes, within the tool call's deadline. A server can switch
 * to pull after the handshake (pyright registers it right after `initialized` and from then on
 * pushes nothing), so a wait for a push also ends when that happens. A server that reports work
 * in progress when the wait runs out (typescript-language-server loading the project of the file
 * just opened) is waited for, within the call's deadline, and then for its push.
 */

import { Deadline } from "@toolvisor/core"
import * as WallClock from "@toolvisor/core/internal/wallClock"
import * as Effect from "effect/Effect"
import * as Protocol from "vscode-languageserver-protocol"
import type * as LspConnector from "../LspConnector.ts"
import * as Diagnostics from "./diagnostics.ts"
import type * as Documents from "./documents.ts"
import type * as Requests from "./requests.ts"

/**
 * How long to wait for a push after opening a file, and after re-syncing one; then for quiet; and
 * for a server's work in progress when the call has no deadline of its own.
 */
export const waits = { opened: 10_000, changed: 3_000, settle: 500, working: 60_000 } as const

export interface Current {
  /** The first `Diagnostics.limits.perDocument` of them, as the store keeps them. */
  readonly items: ReadonlyArray<Protocol.Diagnostic>
  /** How many the server has for the document. */
  readonly count: number
  /** False when a push was waited for and none came for this version. */
  readonly fresh: boolean
  readonly mode: "pull" | "push"
}

const pulls = (session: LspConnector.LspSession) => session.capabilities.supports("diagnosticProvider")

/** Pulls; the answer is stored like a push, so `lsp_workspace` and `lsp_code_actions` see it too. */
const pull = (session: LspConnector.LspSession, document: Documents.Document) =>
  session.request(Protocol.DocumentDiagnosticRequest.type, { textDocument: { uri: document.uri } }).pipe(
    Effect.map((report) => {
      // We never send a previous result id, so "unchanged" cannot come back; keep it total anyway.
      if (report.kind !== "full") return session.diagnostics.get(document.path)?.items ?? []
      session.diagnostics.publishUnsafe({ uri: document.uri, version: document.version, diagnostics: report.items })
      return report.items
    })
  )

/** Waits for a push for this version; fails with CallTimeout when the call's deadline cut it short. */
const awaitPushed = (session: LspConnector.LspSession, document: Documents.Document) =>
  Effect.gen(function* () {
    const wait = document.version === 1 ? waits.opened : waits.changed
    const deadline = yield* Deadline.Current
    const within = deadline === undefined ? wait : Math.min(wait, Deadline.remaining(deadline))
    const pushed = (within: number) =>
      Effect.raceFirst(
        session.diagnostics.awaitFresh(document.path, document.sentAt, {
          within,
          settle: waits.settle,
          unless: () => pulls(session)
        }),
        session.lost
      )
    let fresh = yield* pushed(within)
    let cut = within < wait
    if (!fresh && session.work.working() && !pulls(session)) {
      const left = deadline === undefined ? waits.working : Deadline.remaining(deadline)
      const idle = yield* Effect.raceFirst(Effect.as(session.work.idle, true), Effect.as(WallClock.sleep(left), false))
      const then = deadline === undefined ? waits.changed : Math.min(waits.changed, Deadline.remaining(deadline))
      if (idle) fresh = yield* pushed(then)
      cut = !idle || then < waits.changed
    }
    if (!fresh && cut && deadline !== undefined && Deadline.remaining(deadline) === 0) {
      return yield* Effect.fail(Deadline.exceeded(session.name, deadline))
    }
    return fresh
  })

/** The diagnostics of `document` as just sent: pulled, or pushed and waited for. */
export const current = (
  session: LspConnector.LspSession,
  document: Documents.Document
): Effect.Effect<Current, Requests.RequestError> =>
  Effect.gen(function* () {
    const pushed = pulls(session) ? false : yield* awaitPushed(session, document)
    if (pulls(session)) {
      const items = yield* pull(session, document)
      return { items: items.slice(0, Diagnostics.limits.perDocument), count: items.length, fresh: true, mode: "pull" }
    }
    const entry = session.diagnostics.get(document.path)
    return { items: entry?.items ?? [], count: entry?.count ?? 0, fresh: pushed, mode: "push" }
  })

/** What the server has for `document` now, without waiting: pulled when it can be, else the last push. */
export const known = (
  session: LspConnector.LspSession,
  document: Documents.Document
): Effect.Effect<ReadonlyArray<Protocol.Diagnostic>, Requests.RequestError> =>
  pulls(session) ? pull(session, document) : Effect.succeed(session.diagnostics.get(document.path)?.items ?? [])
