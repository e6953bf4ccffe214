/**
 * Turns protocol answers into what an agent reads: compact text with workspace-relative paths
 * and 1-based positions, and the same data as plain structured values.
 */
import * as NodePath from "node:path"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Protocol from "vscode-languageserver-protocol"
import * as Paths from "./paths.ts"
import * as Workspace from "./workspace.ts"

export interface Place {
  readonly file: string
  readonly line: number
  readonly character: number
  readonly endLine: number
  readonly endCharacter: number
}

export const place = (root: string, uri: string, range: Protocol.Range): Place => {
  const start = Paths.fromWire(range.start)
  const end = Paths.fromWire(range.end)
  return {
    file: Paths.display(root, Paths.fromUri(uri)),
    line: start.line,
    character: start.character,
    endLine: end.line,
    endCharacter: end.character
  }
}

export const where = (p: Pick<Place, "file" | "line" | "character">): string => `${p.file}:${p.line}:${p.character}`

/** Definitions come as `Location`s or `LocationLink`s, one or many, or null. */
export const locations = (
  root: string,
  answer: Protocol.Location | ReadonlyArray<Protocol.Location | Protocol.LocationLink> | null
): ReadonlyArray<Place> => {
  if (answer === null) return []
  const list = Array.isArray(answer) ? answer : [answer]
  return list.map((item: Protocol.Location | Protocol.LocationLink) =>
    "targetUri" in item ? place(root, item.targetUri, item.targetSelectionRange) : place(root, item.uri, item.range)
  )
}

/**
 * Reads source lines for snippets, each file once per answer, and only inside the workspace: a
 * place comes from the server, which an agent can steer to any file (a `/// <reference>` to a key
 * file, and its definition's "line" would be the key).
 */
export const snippets = (workspace: Workspace.Workspace) => {
  const files = new Map<string, ReadonlyArray<string>>()
  return (p: Place): string => {
    let lines = files.get(p.file)
    if (lines === undefined) {
      const path = NodePath.resolve(workspace.root, p.file)
      try {
        // A regular file only, opened without waiting: a FIFO the server pointed at blocked the process.
        const text = Workspace.contains(workspace, path)
          ? BoundedFile.readTextSync(path, Workspace.fileOptions(workspace))
          : undefined
        lines = text === undefined ? [] : text.split(/\r?\n/)
      } catch {
        lines = []
      }
      files.set(p.file, lines)
    }
    const text = (lines[p.line - 1] ?? "").trim()
    return text.length > 120 ? `${text.slice(0, 117)}...` : text
  }
}

/** One place per line, with the source line it points at. */
export const placesText = (workspace: Workspace.Workspace, places: ReadonlyArray<Place>): string => {
  const snippet = snippets(workspace)
  return places.map((p) => `${where(p)}: ${snippet(p)}`).join("\n")
}

export const hover = (contents: Protocol.Hover["contents"]): string => {
  const one = (item: Protocol.MarkedString | Protocol.MarkupContent): string =>
    typeof item === "string" ? item : "kind" in item ? item.value : `\`\`\`${item.language}\n${item.value}\n\`\`\``
  return (Array.isArray(contents) ? contents.map(one) : [one(contents)]).join("\n\n").trim()
}

const symbolKinds: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(Protocol.SymbolKind).map(([name, kind]) => [kind, name.toLowerCase()])
)

export const symbolKind = (kind: Protocol.SymbolKind): string => symbolKinds[kind] ?? `kind${kind}`

const severities: Readonly<Record<number, string>> = { 1: "error", 2: "warning", 3: "info", 4: "hint" }

export interface DiagnosticItem extends Place {
  readonly severity: string
  readonly message: string
  readonly source?: string
  readonly code?: string | number
}

export const diagnostic = (root: string, uri: string, item: Protocol.Diagnostic): DiagnosticItem => ({
  ...place(root, uri, item.range),
  severity: severities[item.severity ?? 1] ?? "error",
  message: typeof item.message === "string" ? item.message : item.message.value,
  ...(item.source === undefined ? {} : { source: item.source }),
  ...(item.code === undefined ? {} : { code: item.code })
})

export const diagnosticText = (d: DiagnosticItem): string =>
  `${where(d)}: ${d.severity}${d.source === undefined ? "" : ` [${d.source}${d.code === undefined ? "" : ` ${d.code}`}]`}: ${d.message}`

export interface SymbolItem {
  readonly name: string
  readonly kind: string
  readonly line: number
  readonly detail?: string
  readonly container?: string
  readonly children?: ReadonlyArray<SymbolItem>
}

/** Source order: servers may answer in any order (typescript-language-server sorts by name). */
const byLine = (a: SymbolItem, b: SymbolItem) => a.line - b.line

/** A document's symbols, nested as the server nests them, each level in source order. */
export const documentSymbols = (
  answer: ReadonlyArray<Protocol.DocumentSymbol> | ReadonlyArray<Protocol.SymbolInformation> | null
): ReadonlyArray<SymbolItem> => {
  const tree = (s: Protocol.DocumentSymbol): SymbolItem => ({
    name: s.name,
    kind: symbolKind(s.kind),
    line: s.selectionRange.start.line + 1,
    ...(s.detail === undefined || s.detail === "" ? {} : { detail: s.detail }),
    ...(s.children === undefined || s.children.length === 0 ? {} : { children: s.children.map(tree).sort(byLine) })
  })
  return (answer ?? [])
    .map((s: Protocol.DocumentSymbol | Protocol.SymbolInformation) =>
      "location" in s
        ? {
            name: s.name,
            kind: symbolKind(s.kind),
            line: s.location.range.start.line + 1,
            ...(s.containerName === undefined ? {} : { container: s.containerName })
          }
        : tree(s)
    )
    .sort(byLine)
}

export const symbolsText = (items: ReadonlyArray<SymbolItem>, depth = 0): string =>
  items
    .map((s) => {
      const head = `${"  ".repeat(depth)}${s.kind} ${s.name}${s.detail === undefined ? "" : ` ${s.detail}`} (line ${s.line})`
      return s.children === undefined ? head : `${head}\n${symbolsText(s.children, depth + 1)}`
    })
    .join("\n")
