/**
 * Applies text edits and workspace edits (from `lsp_rename`, `lsp_format` and the server's
 * `workspace/applyEdit`) to files on disk. Edits of one file are applied from the end backwards,
 * so earlier offsets stay valid; positions count UTF-16 code units, like JavaScript strings.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Paths from "./Paths.ts"

export class EditFailed extends Data.TaggedError("EditFailed")<{ readonly path: string; readonly message: string }> {}

/** What one file went through. */
export interface Change {
  readonly path: string
  readonly kind: "edit" | "create" | "rename" | "delete"
  readonly edits: number
}

/** The offset of a position in `text`; a position past a line's end clamps to that end. */
export const offsetAt = (text: string, position: Protocol.Position): number => {
  let offset = 0
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf("\n", offset)
    if (next === -1) return text.length
    offset = next + 1
  }
  const end = text.indexOf("\n", offset)
  const lineEnd = end === -1 ? text.length : end > offset && text[end - 1] === "\r" ? end - 1 : end
  return Math.min(offset + position.character, lineEnd)
}

/** Applies edits that do not overlap (the protocol guarantees it), last first. */
export const applyTextEdits = (text: string, edits: ReadonlyArray<Protocol.TextEdit>): string =>
  edits
    .map((edit, index) => ({
      start: offsetAt(text, edit.range.start),
      end: offsetAt(text, edit.range.end),
      newText: edit.newText,
      index
    }))
    .sort((a, b) => b.start - a.start || b.index - a.index)
    .reduce((out, edit) => out.slice(0, edit.start) + edit.newText + out.slice(edit.end), text)

const attempt = <A>(path: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) =>
      new EditFailed({
        path,
        message: `cannot write ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

const editFile = (path: string, edits: ReadonlyArray<Protocol.TextEdit>) =>
  attempt(path, async () => {
    const text = await NodeFs.readFile(path, "utf8")
    await NodeFs.writeFile(path, applyTextEdits(text, edits))
  })

/** Snippet edits carry a snippet string; its plain text is what lands in the file. */
const plainEdits = (
  edits: ReadonlyArray<Protocol.TextEdit | Protocol.AnnotatedTextEdit | Protocol.SnippetTextEdit>
): ReadonlyArray<Protocol.TextEdit> =>
  edits.map((edit) => ("snippet" in edit ? { range: edit.range, newText: edit.snippet.value } : edit))

type DocumentChange = NonNullable<Protocol.WorkspaceEdit["documentChanges"]>[number]

const applyChange = (change: DocumentChange): Effect.Effect<Change, EditFailed> => {
  if (!("kind" in change)) {
    const path = Paths.fromUri(change.textDocument.uri)
    return editFile(path, plainEdits(change.edits)).pipe(Effect.as({ path, kind: "edit", edits: change.edits.length }))
  }
  switch (change.kind) {
    case "create": {
      const path = Paths.fromUri(change.uri)
      return attempt(path, async () => {
        await NodeFs.mkdir(NodePath.dirname(path), { recursive: true })
        await NodeFs.writeFile(path, "", { flag: change.options?.overwrite === true ? "w" : "wx" }).catch(
          (error: unknown) => {
            if (change.options?.ignoreIfExists !== true) throw error
          }
        )
      }).pipe(Effect.as({ path, kind: "create", edits: 0 }))
    }
    case "rename": {
      const path = Paths.fromUri(change.newUri)
      return attempt(path, () => NodeFs.rename(Paths.fromUri(change.oldUri), path)).pipe(
        Effect.as({ path, kind: "rename", edits: 0 })
      )
    }
    case "delete": {
      const path = Paths.fromUri(change.uri)
      return attempt(path, () =>
        NodeFs.rm(path, { recursive: change.options?.recursive === true, force: change.options?.ignoreIfNotExists })
      ).pipe(Effect.as({ path, kind: "delete", edits: 0 }))
    }
  }
}

/** Applies a workspace edit in order: `documentChanges` when present, else `changes`. */
export const applyWorkspaceEdit = (edit: Protocol.WorkspaceEdit): Effect.Effect<ReadonlyArray<Change>, EditFailed> =>
  edit.documentChanges !== undefined
    ? Effect.forEach(edit.documentChanges, applyChange)
    : Effect.forEach(Object.entries(edit.changes ?? {}), ([uri, edits]) => {
        const path = Paths.fromUri(uri)
        return editFile(path, edits).pipe(Effect.as<Change>({ path, kind: "edit", edits: edits.length }))
      })

/** Applies edits to one file. */
export const applyToFile = (path: string, edits: ReadonlyArray<Protocol.TextEdit>): Effect.Effect<Change, EditFailed> =>
  editFile(path, edits).pipe(Effect.as<Change>({ path, kind: "edit", edits: edits.length }))
