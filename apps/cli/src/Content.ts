/**
 * MCP content as people read it: text as is (escaped, line breaks kept), and in place of bytes
 * (an image, audio, a blob resource) one line saying what they are and how big — never the bytes
 * themselves on a terminal. Shared by `call`'s results, `prompt`'s messages and `read`'s contents.
 */
import * as Printable from "./Printable.ts"

type Item = { readonly type?: string; readonly [key: string]: unknown }

/** How many bytes a base64 text decodes to, without decoding it. */
export const base64Size = (data: string): number => {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding)
}

const bytes = (size: number) => (size === 1 ? "1 byte" : `${size} bytes`)

const field = (item: Item, key: string): string | undefined => {
  const value = item[key]
  return typeof value === "string" ? value : undefined
}

/** `[image/png, 1234 bytes]`, the line that stands for binary data. */
export const binary = (kind: string, mimeType: string | undefined, data: string): string =>
  Printable.line(`[${kind}${mimeType === undefined ? "" : ` ${mimeType}`}, ${bytes(base64Size(data))}]`)

/** A resource's contents (`resources/read`, or embedded in a message): its text, or a line for its blob. */
export const resourceText = (contents: Item): string => {
  const text = field(contents, "text")
  if (text !== undefined) return Printable.lines(text)
  const blob = field(contents, "blob") ?? ""
  return binary("blob", field(contents, "mimeType"), blob)
}

/** One content block of a result or a message. */
export const text = (item: Item): string => {
  const type = item.type ?? ""
  const body = field(item, "text")
  if (type === "text" && body !== undefined) return Printable.lines(body)
  if ((type === "image" || type === "audio") && typeof item.data === "string") {
    return binary(type, field(item, "mimeType"), item.data)
  }
  if (type === "resource_link") return Printable.line(`[resource link ${field(item, "uri") ?? ""}]`)
  const resource = item.resource
  if (type === "resource" && typeof resource === "object" && resource !== null && !Array.isArray(resource)) {
    const embedded: Item = { ...resource }
    return `${Printable.line(`[resource ${field(embedded, "uri") ?? ""}]`)}\n${resourceText(embedded)}`
  }
  return body === undefined ? `[${Printable.line(type)} content]` : Printable.lines(body)
}
