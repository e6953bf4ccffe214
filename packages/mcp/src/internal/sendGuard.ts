/**
 * What a session refuses to write: a message nested deeper than a stack can serialize. A request
 * carries what the app or a gateway client gave it (arguments, `_meta`, prompt arguments), which
 * is hostile input; written as is, `JSON.stringify` overflows, and the SDK hands the `RangeError`
 * back as the request's failure, where it passed for a lost session and the request waited for a
 * new one that never came. Refused here, it fails at once, provably never sent.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { JsonLimits } from "@toolvisor/core"

/** A message that was not sent because it could not be written; the session is fine. */
export class Unsendable extends Error {
  constructor(reason: string, cause?: unknown) {
    super(`the request ${reason}; it was not sent`, { cause })
    this.name = "Unsendable"
  }
}

/**
 * The depth a message may have: the envelope (the message, its `params`) above the arguments or
 * `_meta`, which may nest `JsonLimits.maxDepth` deep like any argument.
 */
const maxMessageDepth = JsonLimits.maxDepth + 2

/** The reason `message` cannot be sent, or `undefined`. */
export const check = (message: unknown): Unsendable | undefined =>
  JsonLimits.isTooDeep(message, maxMessageDepth)
    ? new Unsendable(`nests deeper than ${JsonLimits.maxDepth} levels in its arguments or _meta, the limit`)
    : undefined

/** Makes `transport` refuse, before writing, every message `check` refuses. */
export const install = (transport: Transport): void => {
  const send = transport.send.bind(transport)
  transport.send = (message, options) => {
    const refused = check(message)
    return refused === undefined ? send(message, options) : Promise.reject(refused)
  }
}
