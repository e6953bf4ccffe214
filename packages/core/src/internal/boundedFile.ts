/**
 * Reads and writes a file named by someone else — a config from another repository, a token
 * file, a path a language server answered with — without trusting what it is. A FIFO nobody
 * writes to blocks `open` until a writer comes (forever, and in a thread a signal cannot free),
 * and a device may never end; so the file is opened non-blocking and judged by its descriptor,
 * which leaves no window to swap it after a check. A regular file is read up to `maxBytes`. A pipe
 * (`<(…)`, `/dev/stdin` fed by a pipe) is read only when the caller allows it, and must end within
 * `pipeMillis`; a named one that nothing writes to is refused as such, not read as empty.
 * `confine` judges where the opened file really is (on Linux, what its descriptor names), so a
 * symlink swapped in after a path was checked leads nowhere.
 */
import * as NodeFs from "node:fs"
import * as NodeFsPromises from "node:fs/promises"
import * as NodeTimers from "node:timers/promises"

export interface Options {
  readonly maxBytes: number
  /** Also read a FIFO or a socket, until it ends within this many milliseconds. */
  readonly pipeMillis?: number | undefined
  /** Whether the file, by its real path once opened, may be used; refused with `confined`'s reason. */
  readonly confine?: ((realPath: string) => boolean) | undefined
}

/** Flags that never wait on a FIFO; a regular file ignores O_NONBLOCK. */
const readFlags = NodeFs.constants.O_RDONLY | NodeFs.constants.O_NONBLOCK
const writeFlags = NodeFs.constants.O_WRONLY | NodeFs.constants.O_NONBLOCK

/** Why the file was not read; its message says it in a user's words. */
export class Unreadable extends Error {
  override readonly name = "Unreadable"
}

/**
 * A named pipe that nothing had open for writing: read, it ends at once, before anything was
 * written (a writer that left without writing looks the same). Told apart so that no caller
 * mistakes it for an empty file.
 */
export class NoWriter extends Unreadable {}

/** The file's text, or `undefined` when it holds more than `maxBytes`. */
export const readText = async (path: string, options: Options): Promise<string | undefined> => {
  const handle = await NodeFsPromises.open(path, readFlags)
  try {
    const stat = await handle.stat()
    const pipe = stat.isFIFO() || stat.isSocket()
    if (!stat.isFile() && !(pipe && options.pipeMillis !== undefined)) {
      throw new Unreadable(`not a regular file (${kindOf(stat)})`)
    }
    check(handle.fd, path, options)
    const until = Date.now() + (options.pipeMillis ?? 0)
    const chunks: Array<Buffer> = []
    let total = 0
    while (total <= options.maxBytes) {
      const chunk = Buffer.alloc(64 * 1024)
      const bytesRead = await readSome(handle, chunk)
      if (bytesRead === 0) {
        if (total === 0 && isNamedPipe(handle.fd, stat)) {
          throw new NoWriter("a named pipe (FIFO) with no writer: nothing was read")
        }
        return Buffer.concat(chunks).toString("utf8")
      }
      if (bytesRead === undefined) {
        if (Date.now() > until) throw new Unreadable(`${kindOf(stat)} that did not end within ${options.pipeMillis} ms`)
        await NodeTimers.setTimeout(pollMillis)
        continue
      }
      chunks.push(chunk.subarray(0, bytesRead))
      total += bytesRead
    }
    return undefined
  } finally {
    await handle.close()
  }
}

/** `readText` of a regular file, without waiting on the thread pool: for reads on every request. */
export const readTextSync = (path: string, options: Options): string | undefined => {
  const fd = NodeFs.openSync(path, readFlags)
  try {
    const stat = NodeFs.fstatSync(fd)
    if (!stat.isFile()) throw new Unreadable(`not a regular file (${kindOf(stat)})`)
    check(fd, path, options)
    if (stat.size > options.maxBytes) return undefined
    const chunks: Array<Buffer> = []
    let total = 0
    while (total <= options.maxBytes) {
      const chunk = Buffer.alloc(64 * 1024)
      const bytesRead = NodeFs.readSync(fd, chunk, 0, chunk.length, null)
      if (bytesRead === 0) return Buffer.concat(chunks).toString("utf8")
      chunks.push(chunk.subarray(0, bytesRead))
      total += bytesRead
    }
    return undefined
  } finally {
    NodeFs.closeSync(fd)
  }
}

/**
 * Replaces the text of an existing regular file, judged as `readText` judges it before anything
 * is written: a FIFO, a device or a file `confine` refuses is left untouched.
 */
export const writeText = async (path: string, text: string, options: Pick<Options, "confine"> = {}): Promise<void> => {
  const handle = await NodeFsPromises.open(path, writeFlags)
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) throw new Unreadable(`not a regular file (${kindOf(stat)})`)
    check(handle.fd, path, options)
    await handle.truncate(0)
    await handle.write(text, 0, "utf8")
  } finally {
    await handle.close()
  }
}

/** Refuses the opened file when `confine` does not accept where it really is. */
const check = (fd: number, path: string, options: Pick<Options, "confine">): void => {
  if (options.confine === undefined) return
  const real = realPathOf(fd) ?? path
  if (!options.confine(real)) throw new Unreadable(`it is ${real}, outside where it may be`)
}

/** What the descriptor names, on Linux; elsewhere the caller's own check of the path stands. */
const realPathOf = (fd: number): string | undefined => {
  try {
    return NodeFs.readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}

/**
 * A FIFO with a name in the file system. An anonymous pipe (`<(…)`, a shell's `|`) is one too,
 * but its writer was there from the start: when it ends empty, empty is what it held. On Linux its
 * descriptor names `pipe:[inode]`; elsewhere every FIFO counts as named.
 */
const isNamedPipe = (fd: number, stat: NodeFs.Stats): boolean =>
  stat.isFIFO() && realPathOf(fd)?.startsWith("pipe:") !== true

/** How often an empty pipe is read again: a config read this way is a one-off, not a stream. */
const pollMillis = 10

/** Bytes read, 0 at the end, `undefined` when a pipe has nothing yet (EAGAIN). */
const readSome = async (handle: NodeFsPromises.FileHandle, chunk: Buffer): Promise<number | undefined> => {
  try {
    return (await handle.read(chunk, 0, chunk.length, null)).bytesRead
  } catch (cause) {
    if (typeof cause === "object" && cause !== null && "code" in cause && cause.code === "EAGAIN") return undefined
    throw cause
  }
}

const kindOf = (stat: NodeFs.Stats): string =>
  stat.isFIFO()
    ? "a FIFO"
    : stat.isSocket()
      ? "a socket"
      : stat.isCharacterDevice()
        ? "a character device"
        : stat.isBlockDevice()
          ? "a block device"
          : stat.isDirectory()
            ? "a directory"
            : "not a file"
