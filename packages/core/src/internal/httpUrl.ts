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
