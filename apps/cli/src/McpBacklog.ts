/**
 * What a gateway session's client has been sent and has not read, across every response of the
 * session. A client that asks and never reads would have the gateway hold every answer: the
 * legacy SSE transport writes into one response, whose unread bytes wait in its socket's buffer;
 * the streamable transport answers each request on a response of its own, through a web stream
 * that is read only as fast as the socket drains, so what a client leaves unread waits in those
 * streams, where no socket can see it. So the bytes are counted here, on both sides: what is
 * waiting in the session's responses (their `writableLength`), and what was sent while one of
 * them could not take more (it had refused a write and not drained), less what was written since.
 * While every response takes what it is given, nothing waits and nothing is counted — a reading
 * client costs no serialisation.
 *
 * The check comes before each message is sent, so one large answer to a reading client passes.
 */
import type * as NodeHttp from "node:http"

/**
 * What a session's client may leave unread, in bytes, before the session is dropped: well above
 * what a slow reader has waiting while another message comes (a large answer and a notification).
 */
export const bound = 16 * 1024 * 1024

export interface Backlog {
  /** Counts what `res`, a response of the session, is written, for as long as it is open. */
  readonly watch: (res: NodeHttp.ServerResponse) => void
  /**
   * Before `message` is sent: false once the client has left more than `bound` unread, when the
   * session is to be dropped (`drop`), and for ever after.
   */
  readonly admit: (message: unknown) => boolean
  /**
   * Destroys the session's responses that hold what the client did not read: it is let go, not
   * flushed. The others end as the session's close ends them (a legacy POST gets its 202). True
   * the first time only, so the session is closed and its end told once.
   */
  readonly drop: () => boolean
  /** Bytes the client has not read, as counted now. */
  readonly unread: () => number
}

export const make = (limit: number = bound): Backlog => {
  const open = new Set<NodeHttp.ServerResponse>()
  /** Responses that refused a write and have not drained since. */
  const stalled = new Set<NodeHttp.ServerResponse>()
  /** Bytes sent while a response was stalled, less those written since. */
  let pending = 0
  let dropped = false

  const unstall = (res: NodeHttp.ServerResponse) => {
    stalled.delete(res)
    if (stalled.size === 0) pending = 0
  }

  const unread = () => {
    if (stalled.size === 0) return 0
    let bytes = pending
    for (const res of open) bytes += res.writableLength
    return bytes
  }

  return {
    watch: (res) => {
      if (open.has(res) || res.destroyed) return
      open.add(res)
      const write = res.write.bind(res) as (...args: Array<unknown>) => boolean
      res.write = ((...args: Array<unknown>) => {
        if (stalled.size > 0) pending = Math.max(0, pending - sizeOf(args[0]))
        const taken = write(...args)
        if (!taken && !stalled.has(res)) {
          stalled.add(res)
          res.once("drain", () => unstall(res))
        }
        return taken
      }) as typeof res.write
      res.once("close", () => {
        open.delete(res)
        unstall(res)
      })
    },
    admit: (message) => {
      if (dropped) return false
      if (stalled.size === 0) return true
      if (unread() > limit) return false
      pending += Buffer.byteLength(JSON.stringify(message) ?? "")
      return true
    },
    drop: () => {
      if (dropped) return false
      dropped = true
      for (const res of open) if (stalled.has(res) || res.writableLength > 0) res.destroy()
      return true
    },
    unread
  }
}

const sizeOf = (chunk: unknown): number =>
  typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.byteLength : 0
