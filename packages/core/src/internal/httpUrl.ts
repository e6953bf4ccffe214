/** The one check of a remote server's address, shared by the config and the MCP transports. */

/** True for an absolute `http://` or `https://` URL. */
export const is = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

/**
 * Why `text` cannot be a remote MCP server's address, or `undefined` when it can: an absolute
 * http(s) URL without a user name or password, which `fetch` refuses to send (such a toolset
 * failed every connect and was retried for ever).
 */
export const serverProblem = (text: string): string | undefined =>
  !is(text)
    ? "Expected an absolute http:// or https:// URL"
    : hasCredentials(text)
      ? "A URL cannot carry a user name or password (fetch refuses to send them): give them in headers, e.g. Authorization"
      : undefined

const hasCredentials = (text: string): boolean => {
  const url = new URL(text)
  return url.username !== "" || url.password !== ""
}
