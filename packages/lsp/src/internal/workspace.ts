/**
 * The folders an LSP toolset's tools may read and write: the workspace root, plus the extra roots
 * the user allowed (or anywhere, if they allowed that). Every path an agent gives and every file
 * a server's edit touches is checked here right before it is used, and judged by what it really
 * names: its realpath, or, for a file that is not there yet, the realpath of its nearest existing
 * ancestor followed by the rest. So neither `..`, an absolute path, a `file:` URI nor a symlink
 * (to a file or a folder, dangling or not) leads out, and a root that is itself a symlink works:
 * the roots are compared as realpaths too.
 *
 * What stays open is a race: the check and the read or write after it are two system calls, and
 * a process that swaps a folder for a symlink between them wins (Node has no
 * `openat2(RESOLVE_BENEATH)`). The window is kept to microseconds by checking right before each
 * use and never caching a verdict about a path.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** A path argument the tools refuse to read at all: not a string, empty, NUL bytes, too long, a foreign URI. */
export class InvalidPath extends Schema.TaggedError<InvalidPath>()("InvalidPath", {
  /** The tool argument, or the place in a server's edit, that held it. */
  argument: Schema.String,
  message: Schema.String
}) {}

/** A path that names something outside the workspace: nothing was read or written through it. */
export class OutsideWorkspace extends Schema.TaggedError<OutsideWorkspace>()("OutsideWorkspace", {
  /** The tool argument, or the place in a server's edit, that held it. */
  argument: Schema.String,
  /** The path or URI as given. */
  path: Schema.String,
  /** What it really names, symlinks followed. */
  resolved: Schema.String,
  /** The workspace root, as configured. */
  root: Schema.String,
  message: Schema.String
}) {}

/** Where the tools may go besides the root: anywhere (`true`), or these extra folders. */
export type Outside = true | ReadonlyArray<string>

export interface Workspace {
  /** The root as configured: what the server is told, and what paths are resolved and shown against. */
  readonly root: string
  /** The extra roots, absolute, as configured: for messages. */
  readonly extra: ReadonlyArray<string>
  /** The realpaths a path must lie below: the root's and each extra root's; `undefined` for anywhere. */
  readonly roots: ReadonlyArray<string> | undefined
}

/** Longer than any path Linux opens (`PATH_MAX`): an argument this long names no file. */
export const maxPathLength = 4096

/** Symlinks followed in one resolution before it is taken for a loop, as the kernel's `ELOOP` does. */
const maxLinks = 40

const components = (path: string): Array<string> => path.split(NodePath.sep).filter((name) => name !== "")

/**
 * Follows `path` one component at a time as the kernel would, for a path `realpath` cannot
 * resolve: up to the first component that does not exist, after which nothing can be a symlink
 * yet. A dangling symlink is followed too, since creating the file would follow it.
 */
const walk = (path: string): string | undefined => {
  // The components still to follow, the next one last, so a symlink's target can be pushed in its place.
  const pending = components(path).reverse()
  let current = NodePath.parse(path).root
  let links = 0
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (name === ".") continue
    if (name === "..") {
      current = NodePath.dirname(current)
      continue
    }
    const next = NodePath.join(current, name)
    let target: string | undefined
    try {
      target = NodeFs.lstatSync(next).isSymbolicLink() ? NodeFs.readlinkSync(next, "utf8") : undefined
    } catch {
      return NodePath.join(next, ...pending.reverse())
    }
    if (target === undefined) {
      current = next
      continue
    }
    if (++links > maxLinks) return undefined
    if (NodePath.isAbsolute(target)) current = NodePath.parse(target).root
    pending.push(...components(target).reverse())
  }
  return current
}

/**
 * What the absolute `path` really names: its realpath, or for a path that does not exist (yet)
 * the realpath of its nearest existing ancestor joined with the rest; `undefined` for a loop.
 */
export const realpath = (path: string): string | undefined => {
  try {
    return NodeFs.realpathSync.native(path)
  } catch {
    return walk(path)
  }
}

/**
 * The workspace of `root`. Extra roots are taken relative to `root`; one that does not exist yet
 * is judged by its nearest existing ancestor, like any path.
 */
export const make = (root: string, outside?: Outside): Workspace => {
  const extra = outside === true || outside === undefined ? [] : outside.map((folder) => NodePath.resolve(root, folder))
  return {
    root,
    extra,
    roots: outside === true ? undefined : [root, ...extra].flatMap((folder) => realpath(folder) ?? [])
  }
}

const below = (roots: ReadonlyArray<string>, path: string): boolean =>
  roots.some((root) => path.startsWith(root.endsWith(NodePath.sep) ? root : root + NodePath.sep))

/**
 * The largest file the tools read, send to the server or edit: a source file is far smaller, and
 * one this size would be read, held and sent whole for every request about it.
 */
export const maxFileBytes = 16 * 1024 * 1024

/** How a file is opened once its path was confined: by what its descriptor names, and bounded. */
export const fileOptions = (workspace: Workspace) => ({
  maxBytes: maxFileBytes,
  confine: (real: string) => contains(workspace, real)
})

/** Whether `path` (absolute) lies inside the workspace, symlinks followed: for reads nobody asked for by name. */
export const contains = (workspace: Workspace, path: string): boolean => {
  if (workspace.roots === undefined) return true
  const resolved = realpath(path)
  return resolved !== undefined && below(workspace.roots, resolved)
}

const invalid = (argument: string, problem: string) =>
  Result.fail(new InvalidPath({ argument, message: `${argument}: ${problem}` }))

/** The path of a `file:` URI on this machine; anything else is refused, naming `argument`. */
export const fromFileUri = (argument: string, uri: string): Result.Result<string, InvalidPath> => {
  if (!uri.startsWith("file:")) return invalid(argument, `${JSON.stringify(uri)} is not a file: URI`)
  let path: string
  try {
    path = NodeUrl.fileURLToPath(uri)
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    return invalid(argument, `${JSON.stringify(uri)} is not a file URI of this machine (${reason})`)
  }
  return path.includes("\0") ? invalid(argument, `${JSON.stringify(uri)} contains a NUL byte`) : Result.succeed(path)
}

/**
 * A path argument as an absolute path, before the disk is asked anything: a string, not empty, no
 * NUL byte, not absurdly long; a `file:` URI, or a path absolute or relative to `root`.
 */
export const given = (root: string, argument: string, value: unknown): Result.Result<string, InvalidPath> => {
  if (typeof value !== "string") {
    return invalid(argument, `expected a path, got ${value === null ? "null" : typeof value}`)
  }
  if (value === "") return invalid(argument, "expected a path, got an empty string")
  if (value.length > maxPathLength) {
    return invalid(argument, `a path of ${value.length} characters is longer than any file name (${maxPathLength})`)
  }
  if (value.includes("\0")) return invalid(argument, `${JSON.stringify(value)} contains a NUL byte`)
  return value.startsWith("file:") ? fromFileUri(argument, value) : Result.succeed(NodePath.resolve(root, value))
}

const describeRoots = ({ root, extra }: Workspace): string =>
  `the workspace ${root}${extra.length === 0 ? "" : ` or its extra roots ${extra.join(", ")}`}`

/**
 * `path` (absolute) if it lies inside the workspace, judged by what it really names; `shown` is
 * the path or URI as given, for the error.
 */
export const confine = (
  workspace: Workspace,
  argument: string,
  path: string,
  shown: string = path
): Result.Result<string, OutsideWorkspace> => {
  if (workspace.roots === undefined) return Result.succeed(path)
  const resolved = realpath(path)
  if (resolved !== undefined && below(workspace.roots, resolved)) return Result.succeed(path)
  const names = resolved === undefined ? "its symlinks loop" : `it is ${resolved}`
  return Result.fail(
    new OutsideWorkspace({
      argument,
      path: shown,
      resolved: resolved ?? path,
      root: workspace.root,
      message: `${argument}: ${JSON.stringify(shown)} is not inside ${describeRoots(workspace)} (${names})`
    })
  )
}

/** A path argument, checked (`given`) and confined (`confine`): run right before the file is used. */
export const resolve = (
  workspace: Workspace,
  argument: string,
  value: unknown
): Result.Result<string, InvalidPath | OutsideWorkspace> =>
  Result.flatMap(given(workspace.root, argument, value), (path) =>
    confine(workspace, argument, path, typeof value === "string" ? value : path)
  )
