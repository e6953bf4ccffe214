/**
 * Applies text edits and workspace edits (from `lsp_rename`, `lsp_format` and the server's
 * `workspace/applyEdit`) to files on disk. Edits of one file are applied from the end backwards,
 * so earlier offsets stay valid; positions count UTF-16 code units, like JavaScript strings.
 *
 * Only files inside the workspace are touched, and a workspace edit is all or nothing: every file
 * it names (text edits, and the files it creates, renames and deletes) is checked before the
 * first write, and one outside refuses the whole edit. A rename applied in part would leave the
 * code half renamed and broken, and a hostile server would get the part it asked for. Each file is
 * checked again right before it is written, to keep the window of a swapped symlink small.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Workspace from "./Workspace.ts"

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

export type Refused = Workspace.InvalidPath | Workspace.OutsideWorkspace

/** A file a workspace edit names, with where in the edit, for the error that refuses it. */
interface Target {
  readonly at: string
  readonly uri: string
}

const targets = (edit: Protocol.WorkspaceEdit): ReadonlyArray<Target> =>
  edit.documentChanges !== undefined
    ? edit.documentChanges.flatMap((change, index): ReadonlyArray<Target> => {
        const at = `documentChanges[${index}]`
        if (!("kind" in change)) return [{ at: `${at}.textDocument.uri`, uri: change.textDocument.uri }]
        return change.kind === "rename"
          ? [
              { at: `${at}.oldUri`, uri: change.oldUri },
              { at: `${at}.newUri`, uri: change.newUri }
            ]
          : [{ at: `${at}.uri`, uri: change.uri }]
      })
    : Object.keys(edit.changes ?? {}).map((uri) => ({ at: "changes", uri }))

/** The path of a file the edit names, if it is a file inside the workspace. */
const locate = (workspace: Workspace.Workspace, { at, uri }: Target): Effect.Effect<string, Refused> =>
  Effect.fromResult(
    Result.flatMap(Workspace.fromFileUri(at, uri), (path) => Workspace.confine(workspace, at, path, uri))
  )

const refusedWhole = (error: Refused): Refused => {
  const message = `the server's edit was refused whole, nothing was written: ${error.message}`
  return error._tag === "InvalidPath"
    ? new Workspace.InvalidPath({ ...error, message })
    : new Workspace.OutsideWorkspace({ ...error, message })
}

const applyChange = (
  workspace: Workspace.Workspace,
  change: DocumentChange,
  index: number
): Effect.Effect<Change, EditFailed | Refused> =>
  Effect.gen(function* () {
    const at = `documentChanges[${index}]`
    if (!("kind" in change)) {
      const path = yield* locate(workspace, { at: `${at}.textDocument.uri`, uri: change.textDocument.uri })
      yield* editFile(path, plainEdits(change.edits))
      return { path, kind: "edit", edits: change.edits.length }
    }
    switch (change.kind) {
      case "create": {
        const path = yield* locate(workspace, { at: `${at}.uri`, uri: change.uri })
        yield* attempt(path, async () => {
          await NodeFs.mkdir(NodePath.dirname(path), { recursive: true })
          await NodeFs.writeFile(path, "", { flag: change.options?.overwrite === true ? "w" : "wx" }).catch(
            (error: unknown) => {
              if (change.options?.ignoreIfExists !== true) throw error
            }
          )
        })
        return { path, kind: "create", edits: 0 }
      }
      case "rename": {
        const from = yield* locate(workspace, { at: `${at}.oldUri`, uri: change.oldUri })
        const path = yield* locate(workspace, { at: `${at}.newUri`, uri: change.newUri })
        yield* attempt(path, () => NodeFs.rename(from, path))
        return { path, kind: "rename", edits: 0 }
      }
      case "delete": {
        const path = yield* locate(workspace, { at: `${at}.uri`, uri: change.uri })
        yield* attempt(path, () =>
          NodeFs.rm(path, {
            recursive: change.options?.recursive === true,
            force: change.options?.ignoreIfNotExists === true
          })
        )
        return { path, kind: "delete", edits: 0 }
      }
    }
  })

/**
 * Applies a workspace edit in order: `documentChanges` when present, else `changes`; refused
 * whole, before anything is written, if it names a file outside the workspace.
 */
export const applyWorkspaceEdit = (
  workspace: Workspace.Workspace,
  edit: Protocol.WorkspaceEdit
): Effect.Effect<ReadonlyArray<Change>, EditFailed | Refused> =>
  Effect.gen(function* () {
    yield* Effect.forEach(targets(edit), (target) => locate(workspace, target), { discard: true }).pipe(
      Effect.mapError(refusedWhole)
    )
    if (edit.documentChanges !== undefined) {
      return yield* Effect.forEach(edit.documentChanges, (change, index) => applyChange(workspace, change, index))
    }
    return yield* Effect.forEach(Object.entries(edit.changes ?? {}), ([uri, edits]) =>
      Effect.flatMap(locate(workspace, { at: "changes", uri }), (path) =>
        editFile(path, edits).pipe(Effect.as<Change>({ path, kind: "edit", edits: edits.length }))
      )
    )
  })

/** Applies edits to one file (`argument` names it), if it is inside the workspace. */
export const applyToFile = (
  workspace: Workspace.Workspace,
  argument: string,
  path: string,
  edits: ReadonlyArray<Protocol.TextEdit>
): Effect.Effect<Change, EditFailed | Workspace.OutsideWorkspace> =>
  Effect.fromResult(Workspace.confine(workspace, argument, path)).pipe(
    Effect.andThen(editFile(path, edits)),
    Effect.as<Change>({ path, kind: "edit", edits: edits.length })
  )
