/**
 * The SDK checks what a server sends against MCP's schemas and rejects with the schema library's
 * error (zod's core names it `$ZodError`, its classic API `ZodError`), its issues listed. Told
 * apart from a lost connection, it is the server's malformed answer: the call or the listing that
 * met it fails (or drops the one bad item) at once, and no restart is waited for.
 */
import * as Predicate from "effect/Predicate"

/** The first problem such an error names (`content: Invalid input…`), or `undefined` for any other failure. */
export const firstIssue = (cause: unknown): string | undefined => {
  if (!(cause instanceof Error) || !cause.name.endsWith("ZodError") || !Predicate.hasProperty(cause, "issues")) {
    return undefined
  }
  const first: unknown = Array.isArray(cause.issues) ? cause.issues[0] : undefined
  if (!Predicate.hasProperty(first, "message") || typeof first.message !== "string") return "its shape is wrong"
  const path = Predicate.hasProperty(first, "path") && Array.isArray(first.path) ? first.path.join(".") : ""
  return `${path === "" ? "" : `${path}: `}${first.message}`.slice(0, 300)
}
