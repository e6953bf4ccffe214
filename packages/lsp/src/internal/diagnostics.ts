/**
 * The diagnostics a server pushed (`textDocument/publishDiagnostics`), per document, for one
 * session: a reconnect starts from an empty store, because a fresh server's view of the files is
 * the only one that counts. Each publish gets a sequence number, so a reader can wait for a
 * publish that came after its own `didOpen`/`didChange` rather than read a stale one.
 *
 * Only files inside the workspace are kept, since no tool asks about any other, and only as many
 * as `limits` says: a server publishing for 300 000 files that do not exist grew this process by
 * 600 MB for good, and made `lsp_workspace`'s answer too big for the client to take.
 */
import * as NodePath from "node:path"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Paths from "./paths.ts"
import * as Workspace from "./workspace.ts"

/**
 * What the store keeps: the documents published for last, the first diagnostics of each, and no
 * more than `bytes` of them in all, weighed as JSON text (the objects take a few times that). A
 * publish is at most `RawMessage.maxBytes`, half of `bytes`, so the newest always fits. A document
 * dropped for newer ones is as if never published: a tool asking about it waits for the next.
 */
export const limits = { documents: 2_000, perDocument: 500, bytes: 32 * 1024 * 1024 } as const

export interface Entry {
  /** The sequence number of the publish that stored this entry. */
  readonly seq: number
  /** Wall-clock time of that publish, to tell a settled answer from one still arriving. */
  readonly at: number
  /** The first `limits.perDocument` diagnostics published. */
  readonly items: ReadonlyArray<Protocol.Diagnostic>
  /** How many were published, kept or not. */
  readonly count: number
}

interface Stored extends Entry {
  /** What the entry counts for against `limits.bytes`. */
  readonly weight: number
}

export interface Diagnostics {
  /** Stores a publish, if it is for a file inside the workspace; called from the connection's notification handler. */
  readonly publishUnsafe: (params: Protocol.PublishDiagnosticsParams) => void
  /** The sequence number of the last publish kept (0 before any). */
  readonly seqUnsafe: () => number
  readonly get: (path: string) => Entry | undefined
  /** Every document kept with at least one diagnostic, with its count, oldest publish first. */
  readonly summary: () => ReadonlyArray<{ readonly path: string; readonly count: number }>
  /** Wakes every `awaitFresh` to look again, e.g. at its `unless` after a registration. */
  readonly wake: () => void
  /**
   * Waits until a publish for `path` newer than `after` arrives, then until the server has been
   * quiet about it for `settle` — servers publish in steps (syntax first, semantics later) — all
   * within `within`, and only while `unless` (checked at each wake) is false. True when a fresh
   * publish arrived.
   */
  readonly awaitFresh: (
    path: string,
    after: number,
    bounds: {
      readonly within: Duration.Input
      readonly settle: Duration.Input
      readonly unless?: () => boolean
    }
  ) => Effect.Effect<boolean>
}

/** A store for one session, keeping what is published for files inside `workspace`. */
export const make = (workspace: Workspace.Workspace): Diagnostics => {
  /** In the order of their last publish, oldest first. */
  const entries = new Map<string, Stored>()
  let bytes = 0
  let seq = 0
  /** Completed and replaced on every publish, to wake whoever waits. */
  let pulse = Deferred.makeUnsafe<void>()

  /** Waits for the next publish (or wake) of anything, at most `millis`; false on timeout. */
  const nextPublish = (millis: number) =>
    Deferred.await(pulse).pipe(
      Effect.as(true),
      Effect.timeoutOrElse({ duration: Duration.millis(Math.max(millis, 0)), orElse: () => Effect.succeed(false) })
    )

  const remove = (path: string) => {
    bytes -= entries.get(path)?.weight ?? 0
    entries.delete(path)
  }

  const wake = () => {
    const woken = pulse
    pulse = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(woken, Effect.void)
  }

  return {
    publishUnsafe: (params) => {
      const path = Paths.fromUri(params.uri)
      if (!NodePath.isAbsolute(path) || !Workspace.contains(workspace, path)) return
      seq += 1
      const items = params.diagnostics.slice(0, limits.perDocument)
      const weight = path.length + JSON.stringify(items).length
      remove(path)
      entries.set(path, { seq, at: Date.now(), items, count: params.diagnostics.length, weight })
      bytes += weight
      for (const oldest of entries.keys()) {
        if (entries.size <= limits.documents && bytes <= limits.bytes) break
        remove(oldest)
      }
      wake()
    },
    wake,
    seqUnsafe: () => seq,
    get: (path) => entries.get(path),
    summary: () =>
      [...entries.entries()]
        .filter(([, entry]) => entry.count > 0)
        .map(([path, entry]) => ({ path, count: entry.count })),
    awaitFresh: (path, after, bounds) =>
      Effect.gen(function* () {
        const deadline = Date.now() + Duration.toMillis(Duration.fromInputUnsafe(bounds.within))
        const settle = Duration.toMillis(Duration.fromInputUnsafe(bounds.settle))
        while (true) {
          const entry = entries.get(path)
          const now = Date.now()
          const fresh = entry !== undefined && entry.seq > after
          if (!fresh && bounds.unless?.() === true) return false
          if (fresh && (now - entry.at >= settle || now >= deadline)) return true
          if (!fresh && now >= deadline) return false
          const wait = fresh ? Math.min(settle - (now - entry.at), deadline - now) : deadline - now
          yield* nextPublish(wait)
        }
      })
  }
}
