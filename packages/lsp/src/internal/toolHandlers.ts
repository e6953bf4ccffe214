/**
 * What each tool does on a live session: validate the arguments, confine the file to the
 * workspace, open or re-sync it, send the request with 0-based positions, and render the answer.
 * Argument and file problems become results with `isError: true` that name the argument; a
 * server's error answer stays a typed failure for the toolset to map.
 */
import type { Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Record from "effect/Record"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Protocol from "vscode-languageserver-protocol"
import type * as LspConnector from "../LspConnector.ts"
import * as LspTools from "../LspTools.ts"
import * as Capabilities from "./capabilities.ts"
import * as DocumentDiagnostics from "./documentDiagnostics.ts"
import type * as Documents from "./documents.ts"
import * as Edits from "./edits.ts"
import * as FileArgument from "./fileArgument.ts"
import * as Paths from "./paths.ts"
import * as Render from "./render.ts"
import * as Requests from "./requests.ts"
import * as ToolResults from "./toolResults.ts"
import * as TypeHierarchy from "./typeHierarchy.ts"

/** A symbol as call and type hierarchies both give it. */
type HierarchySymbol = Pick<Protocol.CallHierarchyItem, "name" | "kind" | "uri" | "selectionRange">

/**
 * A call or type hierarchy's answer: `head`, then a line for each symbol with its kind and place
 * (or `none`); the symbols also under `key`, beside the item and the direction.
 */
const hierarchyResult = (
  session: LspConnector.LspSession,
  head: string,
  item: HierarchySymbol,
  direction: string,
  key: "calls" | "types",
  symbols: ReadonlyArray<HierarchySymbol>
) => {
  const shown = symbols.map((s) => ({
    name: s.name,
    kind: Render.symbolKind(s.kind),
    ...Render.place(session.spec.cwd, s.uri, s.selectionRange)
  }))
  const structured = { item: item.name, direction, [key]: shown }
  if (shown.length === 0) return ToolResults.result(`${head}: none.`, structured)
  return ToolResults.result(
    `${head}:\n${shown.map((s) => `${s.kind} ${s.name} ${Render.where(s)}`).join("\n")}`,
    structured
  )
}

export type HandlerError =
  | Requests.RequestError
  | Requests.MalformedAnswer
  | Documents.FileProblem
  | Edits.EditFailed
  | Edits.Refused

export interface Handler {
  readonly definition: LspTools.Definition<Schema.ConstraintDecoder<unknown>>
  readonly call: (
    session: LspConnector.LspSession,
    args: { readonly [key: string]: unknown }
  ) => Effect.Effect<Toolset.ToolResult, HandlerError>
}

/** A tool's work on a live session, given its decoded arguments. */
type Run<S extends Schema.ConstraintDecoder<unknown>> = (
  session: LspConnector.LspSession,
  args: S["Type"]
) => Effect.Effect<Toolset.ToolResult, HandlerError>

type Definitions = typeof LspTools.definitions

/**
 * A server's answer is hostile input, read where it is rendered: an answer not in the protocol's
 * shape makes the reading throw, and that is the server's fault, told as such — not a defect of
 * ours with a stack trace.
 */
const malformed = (defect: unknown) =>
  Effect.fail(
    new Requests.MalformedAnswer({
      message: `the server's answer is not what the protocol gives (${defect instanceof Error ? defect.message : String(defect)}); the request ran`,
      cause: defect
    })
  )

const bind = <S extends Schema.ConstraintDecoder<unknown>>(
  definition: LspTools.Definition<S>,
  run: Run<S>
): Handler => {
  const validate = LspTools.validator(definition)
  return {
    definition,
    call: (session, args) => {
      const decoded = validate(args)
      return Result.isSuccess(decoded)
        ? Effect.catchDefect(run(session, decoded.success), malformed)
        : Effect.succeed(ToolResults.failure(decoded.failure))
    }
  }
}

const positionParams = (
  document: Documents.Document,
  args: { readonly line: number; readonly character: number }
): Protocol.TextDocumentPositionParams => ({
  textDocument: { uri: document.uri },
  position: Paths.toWire(args.line, args.character)
})

const at = (file: string, args: { readonly line: number; readonly character: number }) =>
  `${file}:${args.line}:${args.character}`

const placesResult = (session: LspConnector.LspSession, what: string, places: ReadonlyArray<Render.Place>) =>
  places.length === 0
    ? ToolResults.result(`No ${what} found.`, { [what]: [] })
    : ToolResults.result(`${places.length} ${what}:\n${Render.placesText(session.workspace, places)}`, {
        [what]: places
      })

/** Documents named in `lsp_workspace`'s answer; the rest are counted. */
export const listedDocuments = 50

/** The note that ends a listing cut at `shown` of `count` items, if it was cut. */
const more = (count: number, shown: number): ReadonlyArray<string> => (count > shown ? [`… ${count - shown} more`] : [])

const changesText = (session: LspConnector.LspSession, changes: ReadonlyArray<Edits.Change>) =>
  changes
    .map((c) => `  ${Paths.display(session.spec.cwd, c.path)} (${c.kind === "edit" ? `${c.edits} edits` : c.kind})`)
    .join("\n")

const changesData = (session: LspConnector.LspSession, changes: ReadonlyArray<Edits.Change>) =>
  changes.map((c) => ({ file: Paths.display(session.spec.cwd, c.path), kind: c.kind, edits: c.edits }))

/**
 * What each tool does, under its key in `LspTools.definitions`: the mapped type makes the
 * compiler check that every tool has a run (and no run lacks a tool), and gives each run its own
 * tool's decoded arguments.
 */
const runs: { readonly [K in keyof Definitions]: Run<Definitions[K]["args"]> } = {
  workspace: (session) =>
    Effect.sync(() => {
      const root = session.spec.cwd
      const open = session.documents.open().map((d) => ({
        file: Paths.display(root, d.path),
        languageId: d.languageId,
        version: d.version
      }))
      const providers = Capabilities.enabledProviders(session.capabilities)
      const registered = session.capabilities.registered()
      const withDiagnostics = session.diagnostics.summary()
      const diagnostics = withDiagnostics
        .slice(0, listedDocuments)
        .map((d) => ({ file: Paths.display(root, d.path), count: d.count }))
      const listed = [
        ...diagnostics.map((d) => `${d.file} (${d.count})`),
        ...more(withDiagnostics.length, listedDocuments)
      ]
      const tools = LspTools.available(session.capabilities).map((d) => d.name)
      const server = `${session.server.name} ${session.server.version}`.trim()
      const text = [
        `Server: ${server} (${session.name})`,
        `Root: ${root}`,
        `File types: ${session.spec.fileTypes.length === 0 ? "all" : session.spec.fileTypes.join(", ")}`,
        `Capabilities: ${providers.join(", ") || "none"}`,
        ...(registered.length === 0 ? [] : [`Registered: ${[...new Set(registered.map((r) => r.method))].join(", ")}`]),
        `Tools: ${tools.join(", ")}`,
        `Open documents: ${open.length === 0 ? "none" : open.map((d) => `${d.file} (v${d.version})`).join(", ")}`,
        `Documents with diagnostics: ${listed.length === 0 ? "none" : listed.join(", ")}`
      ].join("\n")
      return ToolResults.result(text, {
        server: session.server,
        root,
        fileTypes: session.spec.fileTypes,
        capabilities: providers,
        registered,
        tools,
        openDocuments: open,
        diagnostics,
        documentsWithDiagnostics: withDiagnostics.length
      })
    }),

  diagnostics: (session, args) =>
    Effect.gen(function* () {
      const { document } = yield* FileArgument.open(session, args.file)
      const { items, count, fresh, mode } = yield* DocumentDiagnostics.current(session, document)
      const list = items.map((item) => Render.diagnostic(session.spec.cwd, document.uri, item))
      const file = Paths.display(session.spec.cwd, document.path)
      const note = fresh ? "" : " (the server sent none for this version yet)"
      const lines = [...list.map(Render.diagnosticText), ...more(count, list.length)]
      const text =
        count === 0
          ? `No diagnostics in ${file}${note}.`
          : `${count} diagnostics in ${file}${note}:\n${lines.join("\n")}`
      return ToolResults.result(text, { file, version: document.version, fresh, mode, count, diagnostics: list })
    }),

  hover: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.HoverRequest.type, (d) => positionParams(d, args)),
      (answer) => {
        const text = answer === null ? "" : Render.hover(answer.contents)
        if (text === "") return ToolResults.result(`No hover information at ${at(args.file, args)}.`, { hover: null })
        return ToolResults.result(text, { hover: text })
      }
    ),

  definition: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.DefinitionRequest.type, (d) => positionParams(d, args)),
      (answer) => placesResult(session, "definitions", Render.locations(session.spec.cwd, answer))
    ),

  implementations: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.ImplementationRequest.type, (d) => positionParams(d, args)),
      (answer) => placesResult(session, "implementations", Render.locations(session.spec.cwd, answer))
    ),

  references: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.ReferencesRequest.type, (d) => ({
        ...positionParams(d, args),
        context: { includeDeclaration: args.include_declaration ?? true }
      })),
      (answer) => placesResult(session, "references", Render.locations(session.spec.cwd, answer))
    ),

  documentSymbols: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.DocumentSymbolRequest.type, (d) => ({
        textDocument: { uri: d.uri }
      })),
      (answer) => {
        const symbols = Render.documentSymbols(answer)
        if (symbols.length === 0) return ToolResults.result(`No symbols in ${args.file}.`, { symbols })
        return ToolResults.result(Render.symbolsText(symbols), { symbols })
      }
    ),

  workspaceSymbols: (session, args) =>
    Effect.gen(function* () {
      const answer = yield* session.request(Protocol.WorkspaceSymbolRequest.type, { query: args.query })
      const symbols = (answer ?? []).map((s: Protocol.SymbolInformation | Protocol.WorkspaceSymbol) => {
        const file = Paths.display(session.spec.cwd, Paths.fromUri(s.location.uri))
        const line = "range" in s.location ? s.location.range.start.line + 1 : undefined
        return {
          name: s.name,
          kind: Render.symbolKind(s.kind),
          file,
          ...(line === undefined ? {} : { line }),
          ...(s.containerName === undefined || s.containerName === "" ? {} : { container: s.containerName })
        }
      })
      if (symbols.length === 0) return ToolResults.result(`No symbols match "${args.query}".`, { symbols })
      const text = symbols
        .map(
          (s) =>
            `${s.kind} ${s.name}${"container" in s ? ` (in ${s.container})` : ""} ${s.file}${"line" in s ? `:${s.line}` : ""}`
        )
        .join("\n")
      return ToolResults.result(text, { symbols })
    }),

  codeActions: (session, args) =>
    Effect.gen(function* () {
      const { document } = yield* FileArgument.open(session, args.file)
      const end = Math.max(args.end_line ?? args.start_line, args.start_line)
      const range: Protocol.Range = {
        start: { line: args.start_line - 1, character: 0 },
        end: { line: end, character: 0 }
      }
      const overlapping = (yield* DocumentDiagnostics.known(session, document)).filter(
        (d) => d.range.start.line <= end - 1 && d.range.end.line >= args.start_line - 1
      )
      const answer = yield* session.request(Protocol.CodeActionRequest.type, {
        textDocument: { uri: document.uri },
        range,
        context: { diagnostics: overlapping, triggerKind: Protocol.CodeActionTriggerKind.Invoked }
      })
      const actions = (answer ?? []).map((a: Protocol.Command | Protocol.CodeAction) => ({
        title: a.title,
        ...("kind" in a && typeof a.kind === "string" ? { kind: a.kind } : {})
      }))
      if (actions.length === 0)
        return ToolResults.result(`No code actions for ${args.file}:${args.start_line}-${end}.`, { actions })
      return ToolResults.result(actions.map((a) => `- ${a.title}${"kind" in a ? ` (${a.kind})` : ""}`).join("\n"), {
        actions
      })
    }),

  rename: (session, args) =>
    Effect.gen(function* () {
      const edit = yield* FileArgument.ask(session, args.file, Protocol.RenameRequest.type, (d) => ({
        ...positionParams(d, args),
        newName: args.new_name
      }))
      if (edit === null) return ToolResults.failure(`Nothing to rename at ${at(args.file, args)}.`)
      const changes = yield* session.applyEdit(edit)
      const count = changes.reduce((n, c) => n + c.edits, 0)
      return ToolResults.result(
        `Renamed to ${args.new_name}: ${count} edits in ${changes.length} files\n${changesText(session, changes)}`,
        {
          newName: args.new_name,
          changes: changesData(session, changes)
        }
      )
    }),

  format: (session, args) =>
    Effect.gen(function* () {
      const { document } = yield* FileArgument.open(session, args.file)
      const edits = yield* session.request(Protocol.DocumentFormattingRequest.type, {
        textDocument: { uri: document.uri },
        options: { tabSize: 2, insertSpaces: true }
      })
      const file = Paths.display(session.spec.cwd, document.path)
      if (edits === null || edits.length === 0)
        return ToolResults.result(`${file} is already formatted.`, { file, edits: 0 })
      yield* Edits.applyToFile(session.workspace, "file", document.path, edits)
      yield* session.documents.refresh(document.path)
      return ToolResults.result(`Formatted ${file} (${edits.length} edits).`, { file, edits: edits.length })
    }),

  callHierarchy: (session, args) =>
    Effect.gen(function* () {
      const items = yield* FileArgument.ask(session, args.file, Protocol.CallHierarchyPrepareRequest.type, (d) =>
        positionParams(d, args)
      )
      const item = items?.[0]
      if (item === undefined) return ToolResults.result(`No function at ${at(args.file, args)}.`, { calls: [] })
      const calls =
        args.direction === "incoming"
          ? ((yield* session.request(Protocol.CallHierarchyIncomingCallsRequest.type, { item })) ?? []).map(
              (c) => c.from
            )
          : ((yield* session.request(Protocol.CallHierarchyOutgoingCallsRequest.type, { item })) ?? []).map((c) => c.to)
      const head = `${args.direction === "incoming" ? "Callers of" : "Calls from"} ${item.name}`
      return hierarchyResult(session, head, item, args.direction, "calls", calls)
    }),

  typeHierarchy: (session, args) =>
    Effect.gen(function* () {
      const { document } = yield* FileArgument.open(session, args.file)
      const hierarchy = yield* TypeHierarchy.around(session, positionParams(document, args), args.direction)
      if (hierarchy === undefined) return ToolResults.result(`No type at ${at(args.file, args)}.`, { types: [] })
      const { item } = hierarchy
      const head = `${args.direction === "supertypes" ? "Supertypes" : "Subtypes"} of ${item.name}`
      return hierarchyResult(session, head, item, args.direction, "types", hierarchy.types)
    }),

  signatureHelp: (session, args) =>
    Effect.map(
      FileArgument.ask(session, args.file, Protocol.SignatureHelpRequest.type, (d) => positionParams(d, args)),
      (answer) => {
        if (answer === null || answer.signatures.length === 0) {
          return ToolResults.result(`No signature help at ${at(args.file, args)}.`, { signatures: [] })
        }
        const active = answer.activeSignature ?? 0
        const signatures = answer.signatures.map((s, index) => ({
          label: s.label,
          active: index === active,
          ...((s.activeParameter ?? answer.activeParameter) !== undefined && index === active
            ? { activeParameter: s.activeParameter ?? answer.activeParameter }
            : {})
        }))
        const text = signatures
          .map(
            (s) =>
              `${s.active ? "* " : "  "}${s.label}${"activeParameter" in s ? ` (parameter ${Number(s.activeParameter) + 1})` : ""}`
          )
          .join("\n")
        return ToolResults.result(text, { signatures })
      }
    ),

  inlayHints: (session, args) =>
    Effect.gen(function* () {
      const { document } = yield* FileArgument.open(session, args.file)
      const lines = document.text.split("\n").length
      const first = Math.min(args.start_line ?? 1, lines)
      const last = Math.min(Math.max(args.end_line ?? lines, first), lines)
      const answer = yield* session.request(Protocol.InlayHintRequest.type, {
        textDocument: { uri: document.uri },
        range: { start: { line: first - 1, character: 0 }, end: { line: last, character: 0 } }
      })
      const hints = (answer ?? [])
        .map((h) => ({
          ...Paths.fromWire(h.position),
          label: typeof h.label === "string" ? h.label : h.label.map((part) => part.value).join("")
        }))
        .sort((a, b) => a.line - b.line || a.character - b.character)
      if (hints.length === 0) return ToolResults.result(`No inlay hints in ${args.file}:${first}-${last}.`, { hints })
      return ToolResults.result(hints.map((h) => `${h.line}:${h.character} ${h.label}`).join("\n"), { hints })
    })
}

const handler = <K extends keyof Definitions>(key: K): Handler => bind(LspTools.definitions[key], runs[key])

/** Every handler, by tool name. */
export const handlers: ReadonlyMap<string, Handler> = new Map(
  Record.keys(LspTools.definitions).map((key) => [LspTools.definitions[key].name, handler(key)])
)
