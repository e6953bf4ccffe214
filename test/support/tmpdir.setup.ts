/**
 * The run's temporary files in one directory, removed when the run ends. Tests, and the CLIs,
 * servers and databases they start, make their files under `os.tmpdir()`, which follows TMPDIR:
 * without this, every run left thousands of directories in /tmp. Every project lists this
 * setup; the first to run makes the directory and the others find it set.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"

/** Set to the directory while a run's setup owns it. */
const owner = "TOOLVISOR_TEST_TMPDIR"

export default function setup(): (() => void) | undefined {
  if (process.env[owner] !== undefined) return undefined
  const previous = process.env.TMPDIR
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-tests-"))
  // Open to every user, as /tmp is (sticky: none removes another's files): the tests run
  // PostgreSQL as its own user when they run as root.
  NodeFs.chmodSync(dir, 0o1777)
  process.env.TMPDIR = dir
  process.env[owner] = dir
  return () => {
    if (previous === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = previous
    delete process.env[owner]
    // A process a failed test left behind may still write there: what it keeps is left to the
    // system, never an error of the run.
    try {
      NodeFs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {}
  }
}
