/**
 * The diagnostics a server pushed (`textDocument/publishDiagnostics`), per document, for one
 * session: a reconnect starts from an empty store, because a fresh server's view of the files is
 * the only one that counts. Each publish gets a sequence number, so a reader can wait for a
 * publish that came after its own `didOpen`/`didChange` rather than read a stale one.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Paths from "./paths.ts"

export interface Entry {
  /** The sequence number of the publish that stored this entry. */
  readonly seq: number
  /** Wall-clock time of that publish, to tell a settled answer from one still arriving. */
  readonly at: number
  readonly items: ReadonlyArray<Protocol.Diagnostic>
}

export interface Diagnostics {
  /** Stores a publish; called from the connection's notification handler. */
  readonly publishUnsafe: (params: Protocol.PublishDiagnosticsParams) => void
  /** The sequence number of the last publish (0 before any). */
  readonly seqUnsafe: () => number
  readonly get: (path: string) => Entry | undefined
  /** Every document with at least one diagnostic, with its count. */
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

export const make = (): Diagnostics => {
  const entries = new Map<string, Entry>()
  let seq = 0
  /** Completed and replaced on every publish, to wake whoever waits. */
  let pulse = Deferred.makeUnsafe<void>()

  /** Waits for the next publish (or wake) of anything, at most `millis`; false on timeout. */
  const nextPublish = (millis: number) =>
    Deferred.await(pulse).pipe(
      Effect.as(true),
      Effect.timeoutOrElse({ duration: Duration.millis(Math.max(millis, 0)), orElse: () => Effect.succeed(false) })
    )

  const wake = () => {
    const woken = pulse
    pulse = Deferred.makeUnsafe<void>()
    Deferred.doneUnsafe(woken, Effect.void)
  }

  return {
    publishUnsafe: (params) => {
      seq += 1
      entries.set(Paths.fromUri(params.uri), { seq, at: Date.now(), items: params.diagnostics })
      wake()
    },
    wake,
    seqUnsafe: () => seq,
    get: (path) => entries.get(path),
    summary: () =>
      [...entries.entries()]
        .filter(([, entry]) => entry.items.length > 0)
        .map(([path, entry]) => ({ path, count: entry.items.length })),
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
