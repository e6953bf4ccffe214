/**
 * What the agent reads back from an LSP tool: an answer, as text with the same data structured,
 * or an error result (`isError: true`) it reads and acts on — a bad argument, a file it cannot
 * use, a path outside the workspace — as opposed to a failure of the call itself.
 */
import type { Toolset } from "@toolvisor/core"
import type * as Workspace from "./Workspace.ts"

export const result = (text: string, structured: { readonly [key: string]: unknown }): Toolset.ToolResult => ({
  content: [{ type: "text", text }],
  structuredContent: structured
})

/** A result the agent reads as an error; `structured` carries the typed error's fields, when there is one. */
export const failure = (text: string, structured?: { readonly [key: string]: unknown }): Toolset.ToolResult => ({
  content: [{ type: "text", text }],
  ...(structured === undefined ? {} : { structuredContent: structured }),
  isError: true
})

/**
 * A path the tools refused, as the agent reads it: the message, and the typed error's fields as
 * structured content, so a program can tell a path outside the workspace from a malformed one.
 */
export const refusal = (error: Workspace.InvalidPath | Workspace.OutsideWorkspace): Toolset.ToolResult =>
  error._tag === "InvalidPath"
    ? failure(error.message, { error: { _tag: error._tag, argument: error.argument } })
    : failure(
        `${error.message}. Nothing outside was read or written; allow_outside_workspace in the toolset's config lets the tools reach other folders.`,
        {
          error: {
            _tag: error._tag,
            argument: error.argument,
            path: error.path,
            resolved: error.resolved,
            root: error.root
          }
        }
      )
