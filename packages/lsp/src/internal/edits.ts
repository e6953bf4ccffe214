/**
 * Applies text edits and workspace edits (from `lsp_rename`, `lsp_format` and the server's
 * `workspace/applyEdit`) to files on disk. Edits of one file are applied from the end backwards,
 * so earlier offsets stay valid; positions count UTF-16 code units, like JavaScript strings.
 *
 * An edit comes from the server, so it is decoded before use, and only files inside the workspace
 * are touched. A workspace edit is all or nothing: every file it names (text edits, and the files
 * it creates, renames and deletes) is checked before the first write, and one outside refuses the
 * whole edit, naming it. A rename applied in part would leave the code half renamed and broken,
 * and a hostile server would get the part it asked for. Each file is checked again right before
 * it is written, to keep the window for a symlink swapped in since small.
 */
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Protocol from "vscode-languageserver-protocol"
import * as Workspace from "./workspace.ts"

/** Writing a file of an edit failed (the disk said no); the edit may be partly applied. */
export class EditFailed extends Schema.TaggedError<EditFailed>()("EditFailed", {
  path: Schema.String,
  message: Schema.String
}) {}

/** The server's edit is not one: not the shape the protocol gives it. Nothing was written. */
export class MalformedEdit extends Schema.TaggedError<MalformedEdit>()("MalformedEdit", {
  message: Schema.String
}) {}

/** Why an edit was not applied at all: malformed, or it names a file it may not touch. */
export type Refused = MalformedEdit | Workspace.InvalidPath | Workspace.OutsideWorkspace

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

/**
 * Applies edits that do not overlap (`wellFormed` checked it), last first. Of edits that start at
 * one place, inserts go before the edit that replaces from there, and in their order.
 */
export const applyTextEdits = (text: string, edits: ReadonlyArray<Protocol.TextEdit>): string =>
  edits
    .map((edit, index) => ({
      start: offsetAt(text, edit.range.start),
      end: offsetAt(text, edit.range.end),
      newText: edit.newText,
      index
    }))
    .sort((a, b) => b.start - a.start || b.end - a.end || b.index - a.index)
    .reduce((out, edit) => out.slice(0, edit.start) + edit.newText + out.slice(edit.end), text)

/** Orders positions: negative when `a` comes first. */
const compare = (a: Protocol.Position, b: Protocol.Position) => a.line - b.line || a.character - b.character

/**
 * The edits of one file `at`, if the protocol allows them: no range ends before it starts, and no
 * two overlap. A server's edit is hostile input: a reversed range wrote a file's text twice, and
 * overlapping ones garbled it. Offsets grow with positions, so checking positions is enough.
 */
const wellFormed = <E extends Protocol.TextEdit>(
  edits: ReadonlyArray<E>,
  at: string
): Result.Result<ReadonlyArray<E>, MalformedEdit> => {
  const malformed = (why: string) =>
    Result.fail(new MalformedEdit({ message: `the server's edit is malformed: ${at}: ${why}; nothing was written` }))
  const reversed = edits.findIndex((edit) => compare(edit.range.end, edit.range.start) < 0)
  if (reversed >= 0) return malformed(`edit ${reversed}'s range ends before it starts`)
  const order = edits
    .map((edit, index) => ({ range: edit.range, index }))
    .sort((a, b) => compare(a.range.start, b.range.start) || compare(a.range.end, b.range.end) || a.index - b.index)
  for (let i = 1; i < order.length; i++) {
    const [before, after] = [order[i - 1]!, order[i]!]
    if (compare(after.range.start, before.range.end) < 0)
      return malformed(`edits ${before.index} and ${after.index} overlap`)
  }
  return Result.succeed(edits)
}

const attempt = <A>(path: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) =>
      new EditFailed({
        path,
        message: `cannot write ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

/**
 * A regular file inside the workspace by what was opened, not by its path: a FIFO the server named
 * held the call (and the process's exit) on a blocked read, and a symlink swapped in after the
 * check led outside.
 */
const editFile = (workspace: Workspace.Workspace, path: string, edits: ReadonlyArray<Protocol.TextEdit>) =>
  attempt(path, async () => {
    const options = Workspace.fileOptions(workspace)
    const text = await BoundedFile.readText(path, options)
    if (text === undefined) throw new Error(`larger than ${Workspace.maxFileBytes / 1024 / 1024} MiB`)
    await BoundedFile.writeText(path, applyTextEdits(text, edits), options)
  })

// What a server may send, as far as applying it needs: decoded, since its answers are hostile input.
const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Position = Schema.Struct({ line: Count, character: Count })
const Range = Schema.Struct({ start: Position, end: Position })
/** A text edit, an annotated one (its annotation is not needed) or a snippet edit. */
const AnyTextEdit = Schema.Union([
  Schema.Struct({ range: Range, newText: Schema.String }),
  Schema.Struct({ range: Range, snippet: Schema.Struct({ value: Schema.String }) })
])
const TextEdits = Schema.Array(AnyTextEdit)
const Flag = Schema.optionalKey(Schema.Boolean)
const DocumentChange = Schema.Union([
  Schema.Struct({ textDocument: Schema.Struct({ uri: Schema.String }), edits: TextEdits }),
  Schema.Struct({
    kind: Schema.Literal("create"),
    uri: Schema.String,
    options: Schema.optionalKey(Schema.Struct({ overwrite: Flag, ignoreIfExists: Flag }))
  }),
  Schema.Struct({
    kind: Schema.Literal("rename"),
    oldUri: Schema.String,
    newUri: Schema.String,
    options: Schema.optionalKey(Schema.Struct({ overwrite: Flag, ignoreIfExists: Flag }))
  }),
  Schema.Struct({
    kind: Schema.Literal("delete"),
    uri: Schema.String,
    options: Schema.optionalKey(Schema.Struct({ recursive: Flag, ignoreIfNotExists: Flag }))
  })
])
const WorkspaceEdit = Schema.Struct({
  changes: Schema.optionalKey(Schema.Record(Schema.String, TextEdits)),
  documentChanges: Schema.optionalKey(Schema.Array(DocumentChange))
})

/** A decoder, built once, whose failure is a `MalformedEdit`. */
const decoder = <S extends Schema.ConstraintDecoder<unknown>>(schema: S) => {
  const decode = Schema.decodeUnknownResult(schema)
  return (input: unknown): Effect.Effect<S["Type"], MalformedEdit> => {
    const decoded = decode(input)
    return Result.isSuccess(decoded)
      ? Effect.succeed(decoded.success)
      : Effect.fail(new MalformedEdit({ message: `the server's edit is malformed: ${decoded.failure.message}` }))
  }
}
const decodeWorkspaceEdit = decoder(WorkspaceEdit)
const decodeTextEdits = decoder(TextEdits)

/** Snippet edits carry a snippet string; its plain text is what lands in the file. */
const plainEdits = (edits: typeof TextEdits.Type): ReadonlyArray<Protocol.TextEdit> =>
  edits.map((edit) => ("snippet" in edit ? { range: edit.range, newText: edit.snippet.value } : edit))

/** A file an edit names, inside the workspace: where in the edit it is named, its URI, its path. */
interface Located {
  readonly at: string
  readonly uri: string
  readonly path: string
}

/** One thing a workspace edit does, its files located. */
type Step =
  | { readonly kind: "edit"; readonly file: Located; readonly edits: ReadonlyArray<Protocol.TextEdit> }
  | { readonly kind: "create"; readonly file: Located; readonly overwrite: boolean; readonly ignoreIfExists: boolean }
  | {
      readonly kind: "rename"
      readonly from: Located
      readonly file: Located
      readonly overwrite: boolean
      readonly ignoreIfExists: boolean
    }
  | {
      readonly kind: "delete"
      readonly file: Located
      readonly recursive: boolean
      readonly ignoreIfNotExists: boolean
    }

const locate = (workspace: Workspace.Workspace, at: string, uri: string): Result.Result<Located, Refused> =>
  Result.map(
    Result.flatMap(Workspace.fromFileUri(at, uri), (path) => Workspace.confine(workspace, at, path, uri)),
    (path) => ({ at, uri, path })
  )

/** The edits of a located file, checked. */
const editStep = (
  located: Result.Result<Located, Refused>,
  edits: typeof TextEdits.Type,
  at: string
): Result.Result<Step, Refused> =>
  Result.flatMap(located, (file) =>
    Result.map(wellFormed(plainEdits(edits), at), (checked): Step => ({ kind: "edit", file, edits: checked }))
  )

const stepOf = (
  workspace: Workspace.Workspace,
  change: typeof DocumentChange.Type,
  at: string
): Result.Result<Step, Refused> => {
  if (!("kind" in change)) {
    return editStep(locate(workspace, `${at}.textDocument.uri`, change.textDocument.uri), change.edits, `${at}.edits`)
  }
  switch (change.kind) {
    case "create":
      return Result.map(locate(workspace, `${at}.uri`, change.uri), (file) => ({
        kind: "create",
        file,
        overwrite: change.options?.overwrite === true,
        ignoreIfExists: change.options?.ignoreIfExists === true
      }))
    case "rename":
      return Result.flatMap(locate(workspace, `${at}.oldUri`, change.oldUri), (from) =>
        Result.map(locate(workspace, `${at}.newUri`, change.newUri), (file) => ({
          kind: "rename",
          from,
          file,
          overwrite: change.options?.overwrite === true,
          ignoreIfExists: change.options?.ignoreIfExists === true
        }))
      )
    case "delete":
      return Result.map(locate(workspace, `${at}.uri`, change.uri), (file) => ({
        kind: "delete",
        file,
        recursive: change.options?.recursive === true,
        ignoreIfNotExists: change.options?.ignoreIfNotExists === true
      }))
  }
}

/** Every step of the edit, in order, or why it is refused: the first file it names outside. */
const plan = (
  workspace: Workspace.Workspace,
  edit: typeof WorkspaceEdit.Type
): Result.Result<ReadonlyArray<Step>, Refused> =>
  Result.all(
    edit.documentChanges !== undefined
      ? edit.documentChanges.map((change, index) => stepOf(workspace, change, `documentChanges[${index}]`))
      : Object.entries(edit.changes ?? {}).map(([uri, edits]) =>
          editStep(locate(workspace, "changes", uri), edits, `changes[${JSON.stringify(uri)}]`)
        )
  )

const refusedWhole = (error: Refused): Refused => {
  if (error._tag === "MalformedEdit") return error
  const message = `the server's edit was refused whole, nothing was written: ${error.message}`
  return error._tag === "InvalidPath"
    ? new Workspace.InvalidPath({ argument: error.argument, message })
    : new Workspace.OutsideWorkspace({
        argument: error.argument,
        path: error.path,
        resolved: error.resolved,
        root: error.root,
        message
      })
}

const exists = (path: string) =>
  NodeFs.lstat(path).then(
    () => true,
    () => false
  )

/** Right before a file is written, it is checked again: a symlink may have been swapped in since. */
const recheck = (workspace: Workspace.Workspace, file: Located) =>
  Effect.fromResult(Workspace.confine(workspace, file.at, file.path, file.uri))

const run = (workspace: Workspace.Workspace, step: Step): Effect.Effect<Change, EditFailed | Refused> =>
  Effect.gen(function* () {
    const { path } = step.file
    yield* recheck(workspace, step.file)
    switch (step.kind) {
      case "edit":
        yield* editFile(workspace, path, step.edits)
        return { path, kind: "edit", edits: step.edits.length }
      case "create":
        yield* attempt(path, async () => {
          await NodeFs.mkdir(NodePath.dirname(path), { recursive: true })
          await NodeFs.writeFile(path, "", { flag: step.overwrite ? "w" : "wx" }).catch((error: unknown) => {
            if (!step.ignoreIfExists) throw error
          })
        })
        return { path, kind: "create", edits: 0 }
      case "rename":
        yield* recheck(workspace, step.from)
        yield* attempt(path, async () => {
          // A rename replaces what it lands on: only when the server says so (as VS Code does).
          if (!step.overwrite && (await exists(path))) {
            if (step.ignoreIfExists) return
            throw new Error(`it exists, and the server's rename of ${step.from.path} did not ask to overwrite it`)
          }
          await NodeFs.rename(step.from.path, path)
        })
        return { path, kind: "rename", edits: 0 }
      case "delete":
        yield* attempt(path, () => NodeFs.rm(path, { recursive: step.recursive, force: step.ignoreIfNotExists }))
        return { path, kind: "delete", edits: 0 }
    }
  })

/**
 * Applies a workspace edit in order: `documentChanges` when present, else `changes`; refused
 * whole, before anything is written, if it is malformed or names a file outside the workspace.
 */
export const applyWorkspaceEdit = (
  workspace: Workspace.Workspace,
  edit: unknown
): Effect.Effect<ReadonlyArray<Change>, EditFailed | Refused> =>
  Effect.gen(function* () {
    const decoded = yield* decodeWorkspaceEdit(edit)
    const steps = yield* Effect.fromResult(plan(workspace, decoded)).pipe(Effect.mapError(refusedWhole))
    return yield* Effect.forEach(steps, (step) => run(workspace, step))
  })

/** Applies the server's edits to one file, the `argument` of a tool, if it is inside the workspace. */
export const applyToFile = (
  workspace: Workspace.Workspace,
  argument: string,
  path: string,
  edits: unknown
): Effect.Effect<Change, EditFailed | Refused> =>
  Effect.gen(function* () {
    const decoded = yield* Effect.fromResult(wellFormed(plainEdits(yield* decodeTextEdits(edits)), argument))
    yield* recheck(workspace, { at: argument, uri: path, path })
    yield* editFile(workspace, path, decoded)
    return { path, kind: "edit", edits: decoded.length }
  })
