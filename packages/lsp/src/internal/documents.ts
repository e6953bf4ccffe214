/**
 * The documents a session has open on the server. A file is opened on demand (`didOpen`, with
 * the language id from its extension) and re-synced with `didChange` whenever it changed on
 * disk since it was last sent, so answers are never about stale text. The state belongs to one
 * session: a reconnected server knows no documents, and none are assumed.
 */
import * as NodeFs from "node:fs"
import type { LifecycleError } from "@toolvisor/core"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Protocol from "vscode-languageserver-protocol"
import * as Paths from "./paths.ts"
import type * as Requests from "./requests.ts"
import * as Workspace from "./workspace.ts"

/** A file argument the tool cannot use: missing, a directory, unreadable. A tool error, not a crash. */
export class FileProblem extends Schema.TaggedError<FileProblem>()("FileProblem", {
  toolset: Schema.String,
  /** The tool argument that named the file. */
  argument: Schema.String,
  path: Schema.String,
  message: Schema.String
}) {}

export interface Document {
  readonly path: string
  readonly uri: string
  readonly languageId: string
  readonly version: number
  /** The text last sent. */
  readonly text: string
  /** Size and mtime of the file when it was last read: unchanged, the file need not be read again. */
  readonly stamp: string
  /** The diagnostics sequence number when this version was sent. */
  readonly sentAt: number
}

export interface Synced {
  readonly document: Document
  /** True when this call sent the text (opened or changed), so fresh diagnostics will follow. */
  readonly sent: boolean
}

export interface Documents {
  /** Opens `path` on the server, or re-syncs it if it changed on disk; `argument` names it in errors. */
  readonly sync: (path: string, argument?: string) => Effect.Effect<Synced, FileProblem | LifecycleError.LifecycleError>
  /** Re-syncs `path` if it is open (after we wrote it); a file never opened is left alone. */
  readonly refresh: (path: string) => Effect.Effect<void, FileProblem | LifecycleError.LifecycleError>
  readonly open: () => ReadonlyArray<Document>
  /** The document of `path` as last sent, if it is open; not checked against the disk. */
  readonly opened: (path: string) => Document | undefined
  /** Whether the file still has the size and times it had when `document` was sent (false if unreadable). */
  readonly unchanged: (document: Document) => boolean
}

export const make = Effect.fnUntraced(function* (options: {
  /** The toolset's name, for the errors. */
  readonly toolset: string
  /** Sends a notification to the server, bounded like a request. */
  readonly notify: Requests.Requests["notify"]
  readonly sync: Protocol.ServerCapabilities["textDocumentSync"]
  /** The diagnostics sequence number now, recorded with each version sent. */
  readonly seq: () => number
  /** Where a document may be read from, and how much of it. */
  readonly workspace: Workspace.Workspace
}) {
  const { notify } = options
  const documents = new Map<string, Document>()
  // One send at a time: two tools on one file must not both send version 1.
  const lock = yield* Semaphore.make(1)
  const changeKind =
    typeof options.sync === "number" ? options.sync : (options.sync?.change ?? Protocol.TextDocumentSyncKind.None)

  const problem = (path: string, argument: string) => (cause: unknown) =>
    new FileProblem({
      toolset: options.toolset,
      argument,
      path,
      message: `${argument}: cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
    })

  // Synchronous on purpose: this runs for every request about a file, and one stat (and,
  // when it changed, one read) costs microseconds, where the thread pool's round trips cost a
  // good part of a millisecond. Size, mtime and ctime (which a rewrite that restores the mtime
  // still moves), to a fraction of a microsecond, tell a changed file from the one we sent.
  const stampUnsafe = (path: string): string => {
    const stat = NodeFs.statSync(path)
    if (!stat.isFile()) throw new Error("not a regular file")
    return `${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`
  }

  const stampOf = (path: string, argument: string) =>
    Effect.try({ try: () => stampUnsafe(path), catch: problem(path, argument) })

  const current = (document: Document): Synced => ({ document, sent: false })

  const read = (path: string, argument: string) =>
    Effect.try({
      try: () => {
        const text = BoundedFile.readTextSync(path, Workspace.fileOptions(options.workspace))
        if (text === undefined) throw new Error(`larger than ${Workspace.maxFileBytes / 1024 / 1024} MiB`)
        return text
      },
      catch: problem(path, argument)
    })

  const send = (path: string, text: string, stamp: string, previous?: Document) =>
    Effect.gen(function* () {
      const document: Document = {
        path,
        uri: previous?.uri ?? Paths.toUri(path),
        languageId: previous?.languageId ?? Paths.languageId(path),
        version: (previous?.version ?? 0) + 1,
        text,
        stamp,
        sentAt: options.seq()
      }
      const textDocument = { uri: document.uri, version: document.version }
      if (previous !== undefined && changeKind !== Protocol.TextDocumentSyncKind.None) {
        yield* notify(Protocol.DidChangeTextDocumentNotification.type, {
          textDocument,
          contentChanges: [{ text }]
        })
      } else {
        // A server that takes no changes learns new text by a close and a fresh open.
        if (previous !== undefined) {
          yield* notify(Protocol.DidCloseTextDocumentNotification.type, { textDocument: { uri: document.uri } })
        }
        yield* notify(Protocol.DidOpenTextDocumentNotification.type, {
          textDocument: { ...textDocument, languageId: document.languageId, text }
        })
      }
      documents.set(path, document)
      return document
    })

  const syncUnlocked = (path: string, argument: string) =>
    Effect.gen(function* () {
      const previous = documents.get(path)
      const stamp = yield* stampOf(path, argument)
      if (previous !== undefined && previous.stamp === stamp) return current(previous)
      const text = yield* read(path, argument)
      if (previous !== undefined && previous.text === text) {
        const touched = { ...previous, stamp }
        documents.set(path, touched)
        return { document: touched, sent: false }
      }
      return { document: yield* send(path, text, stamp, previous), sent: true }
    })

  return {
    // The common case — open, and unchanged on disk — takes no lock: a sync holding it records
    // its new stamp only after sending, so a stamp that matches is one the server has.
    sync: (path, argument = "file") =>
      Effect.suspend(() => {
        const previous = documents.get(path)
        if (previous !== undefined) {
          try {
            if (stampUnsafe(path) === previous.stamp) return Effect.succeed(current(previous))
          } catch (cause) {
            return Effect.fail(problem(path, argument)(cause))
          }
        }
        return lock.withPermits(1)(syncUnlocked(path, argument))
      }),
    refresh: (path) =>
      lock.withPermits(1)(documents.has(path) ? Effect.asVoid(syncUnlocked(path, "file")) : Effect.void),
    open: () => [...documents.values()],
    opened: (path) => documents.get(path),
    unchanged: (document) => {
      try {
        return stampUnsafe(document.path) === document.stamp
      } catch {
        return false
      }
    }
  } satisfies Documents
})
