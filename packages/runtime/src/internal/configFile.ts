/**
 * Changes of a config file, for `ToolsetRegistry.watch`: polled by size and mtime, because editors
 * replace files in ways inotify watches lose.
 */
import * as NodeFs from "node:fs"
import * as Stream from "effect/Stream"

/** Size and mtime of a file, or "missing". */
export const fingerprint = (path: string): string => {
  try {
    const stat = NodeFs.statSync(path)
    return `${stat.mtimeMs}:${stat.size}`
  } catch {
    return "missing"
  }
}

/** Changes of one file since the fingerprint `since`, checked every 250 ms. */
export const changes = (path: string, since: string): Stream.Stream<void> =>
  Stream.suspend(() => {
    let last = since
    return Stream.tick("250 millis").pipe(
      Stream.filter(() => {
        const now = fingerprint(path)
        const changed = now !== last
        last = now
        return changed
      })
    )
  })
