/**
 * Reads a file named by someone else — a config from another repository, a token file, an env
 * file — without trusting what it is. A FIFO nobody writes to blocks `open` until a writer comes
 * (forever, and in a thread a signal cannot free), and a device may never end; so the file is
 * opened non-blocking and judged by its descriptor, which leaves no window to swap it after a
 * check. A regular file is read up to `maxBytes`. A pipe (`<(…)`, `/dev/stdin` fed by a pipe) is
 * read only when the caller allows it, and must end within `pipeMillis`.
 */
import * as NodeFs from "node:fs"
import * as NodeFsPromises from "node:fs/promises"
import * as NodeTimers from "node:timers/promises"

export interface Options {
  readonly maxBytes: number
  /** Also read a FIFO or a socket, until it ends within this many milliseconds. */
  readonly pipeMillis?: number | undefined
}

/** Why the file was not read; its message says it in a user's words. */
export class Unreadable extends Error {
  override readonly name = "Unreadable"
}

/** The file's text, or `undefined` when it holds more than `maxBytes`. */
export const readText = async (path: string, options: Options): Promise<string | undefined> => {
  const handle = await NodeFsPromises.open(path, NodeFs.constants.O_RDONLY | NodeFs.constants.O_NONBLOCK)
  try {
    const stat = await handle.stat()
    const pipe = stat.isFIFO() || stat.isSocket()
    if (!stat.isFile() && !(pipe && options.pipeMillis !== undefined)) {
      throw new Unreadable(`not a regular file (${kindOf(stat)})`)
    }
    const until = Date.now() + (options.pipeMillis ?? 0)
    const chunks: Array<Buffer> = []
    let total = 0
    while (total <= options.maxBytes) {
      const chunk = Buffer.alloc(64 * 1024)
      const bytesRead = await readSome(handle, chunk)
      if (bytesRead === 0) return Buffer.concat(chunks).toString("utf8")
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
