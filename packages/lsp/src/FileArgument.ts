/**
 * A tool's `file` argument on a live session: checked, confined to the workspace right before the
 * file is read, opened (or re-synced) on the server, and the requests about it.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Rpc from "vscode-jsonrpc/node"
import * as Documents from "./Documents.ts"
import type * as LspConnector from "./LspConnector.ts"
import * as LspSpec from "./LspSpec.ts"
import type * as Requests from "./Requests.ts"
import * as Workspace from "./Workspace.ts"

/** Why a file argument cannot be used: malformed, outside the workspace, of another type, unreadable. */
export type Problem = Documents.FileProblem | Workspace.InvalidPath | Workspace.OutsideWorkspace

/**
 * The absolute path of the file argument, before the disk is asked anything: refused if it is
 * malformed or of a type this server does not handle.
 */
const pathOf = (
  session: LspConnector.LspSession,
  file: string
): Result.Result<string, Documents.FileProblem | Workspace.InvalidPath> =>
  Result.flatMap(Workspace.given(session.spec.cwd, "file", file), (path) =>
    LspSpec.handles(session.spec, path)
      ? Result.succeed(path)
      : Result.fail(
          new Documents.FileProblem({
            argument: "file",
            path,
            message: `file: ${session.name} handles only ${session.spec.fileTypes.join(", ")} files, not ${file}`
          })
        )
  )

/** Opens (or re-syncs) `path`, the file argument's, if it lies inside the workspace: checked right before it is read. */
const openAt = (session: LspConnector.LspSession, file: string, path: string) =>
  Effect.flatMap(Effect.fromResult(Workspace.confine(session.workspace, "file", path, file)), (inside) =>
    session.documents.sync(inside)
  )

/** Opens (or re-syncs) the file argument, refusing files outside the workspace or of another type. */
export const open = (session: LspConnector.LspSession, file: string) =>
  Result.match(pathOf(session, file), {
    onFailure: Effect.fail,
    onSuccess: (path) => openAt(session, file, path)
  })

/**
 * Sends a request about the file argument, answered about its text on disk now. An open document
 * is taken to be unchanged and the request written at once: the file is checked while the server
 * works, and if it changed, that request is dropped and sent again once the document is re-synced.
 * Checking first would put a stat between the call and the server; after the write, it runs while
 * the server works (on a core the server does not need).
 *
 * The guess needs no workspace check: its request is about text read, inside the workspace, when
 * the file was opened. A file swapped since for a symlink that leads out has another stamp, so the
 * check fails and the re-sync, which reads the disk, confines the path first.
 */
export const ask = <P, R, E>(
  session: LspConnector.LspSession,
  file: string,
  type: Rpc.RequestType<P, R, E>,
  params: (document: Documents.Document) => Rpc.RequestParam<P>
): Effect.Effect<R, Requests.RequestError | Problem> => {
  const path = pathOf(session, file)
  if (Result.isFailure(path)) return Effect.fail(path.failure)
  const synced = () =>
    Effect.flatMap(openAt(session, file, path.success), ({ document }) => session.request(type, params(document)))
  const guess = session.documents.opened(path.success)
  if (guess === undefined) return synced()
  return session.speculate(type, params(guess), () => session.documents.unchanged(guess), synced)
}
