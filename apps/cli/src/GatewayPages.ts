/**
 * The gateway's lists (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`)
 * in pages. A cursor is opaque to the client and tied to its list: a cursor of another list, or
 * one the gateway never gave, is invalid params (-32602), never a silent first page. The catalog
 * may change between pages; a client then hears `list_changed` and lists again, so a cursor
 * past a list that shrank ends it rather than failing.
 */
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"

/**
 * Items per page unless `serve --page-size` says otherwise: large, because many hosts read only
 * the first page of a list (the SDK client's `listTools` does not follow `nextCursor`).
 */
export const defaultSize = 1_000

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor?: string
}

/** A cursor longer than any the gateway gives is not decoded at all. */
const maxCursor = 64

const encode = (list: string, offset: number) => Buffer.from(`${list}:${offset}`, "utf8").toString("base64url")

/**
 * The offset a cursor of `list` stands for; undefined when it is not one the gateway gave: of
 * another list, not canonical (`03`), or not at a page boundary (`size` is fixed for the process).
 */
const decode = (list: string, cursor: string, size: number): number | undefined => {
  if (cursor.length > maxCursor || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined
  const match = /^([a-z/]+):([1-9]\d{0,8})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  const offset = Number(match?.[2])
  return match === null || match[1] !== list || offset % size !== 0 ? undefined : offset
}

/** The page of `items` that `cursor` names (the first without one), `size` items at most. */
export const page = <A>(
  list: string,
  items: ReadonlyArray<A>,
  cursor: string | undefined,
  size: number
): Effect.Effect<Page<A>, McpError> => {
  const offset = cursor === undefined ? 0 : decode(list, cursor, size)
  if (offset === undefined) {
    return Effect.fail(new McpError(ErrorCode.InvalidParams, `invalid cursor for ${list}: list again without one`))
  }
  const end = offset + size
  return Effect.succeed(
    end < items.length
      ? { items: items.slice(offset, end), nextCursor: encode(list, end) }
      : { items: items.slice(offset) }
  )
}
