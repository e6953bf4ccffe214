/**
 * Paths and URIs, and the 1-based positions of tool arguments against the 0-based positions of
 * the protocol. Documents are keyed by absolute path, so the URI spellings servers send back
 * (`file:///a%20b`, `file:///a b`) all find the same document.
 */
import * as NodePath from "node:path"
import * as NodeUrl from "node:url"
import type * as Protocol from "vscode-languageserver-protocol"

export const toUri = (path: string): string => NodeUrl.pathToFileURL(path).href

/** The path of a `file:` URI; any other URI is kept as it is. */
export const fromUri = (uri: string): string => {
  if (!uri.startsWith("file:")) return uri
  try {
    return NodeUrl.fileURLToPath(uri)
  } catch {
    return uri
  }
}

/** How a path is shown to the agent: relative to the root when inside it. */
export const display = (root: string, path: string): string => {
  const relative = NodePath.relative(root, path)
  return relative === "" || relative.startsWith("..") || NodePath.isAbsolute(relative) ? path : relative
}

/** A 1-based tool position on the wire. */
export const toWire = (line: number, character: number): Protocol.Position => ({
  line: line - 1,
  character: character - 1
})

/** A wire position as the agent reads it. */
export const fromWire = (position: Protocol.Position): { readonly line: number; readonly character: number } => ({
  line: position.line + 1,
  character: position.character + 1
})

const languages: Readonly<Record<string, string>> = {
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
  tsx: "typescriptreact",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascriptreact",
  py: "python",
  pyi: "python",
  go: "go",
  rs: "rust",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  cxx: "cpp",
  hpp: "cpp",
  hh: "cpp",
  java: "java",
  kt: "kotlin",
  cs: "csharp",
  rb: "ruby",
  php: "php",
  swift: "swift",
  lua: "lua",
  sh: "shellscript",
  bash: "shellscript",
  json: "json",
  jsonc: "jsonc",
  yaml: "yaml",
  yml: "yaml",
  toml: "toml",
  md: "markdown",
  html: "html",
  css: "css",
  scss: "scss",
  less: "less",
  xml: "xml",
  sql: "sql",
  vue: "vue",
  svelte: "svelte"
}

/** The LSP language id for a file, from its extension; `plaintext` when unknown. */
export const languageId = (path: string): string => {
  const extension = NodePath.extname(path).slice(1).toLowerCase()
  return languages[extension] ?? (extension === "" ? "plaintext" : extension)
}
