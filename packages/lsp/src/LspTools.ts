/**
 * The catalogue of LSP tools: names, descriptions, argument schemas (Effect Schema, exported to
 * JSON Schema for the agent), argument validation, and which server capability each tool needs.
 * Positions are 1-based here, as people and agents count; the wire conversion is elsewhere.
 */
import { Toolset } from "@toolvisor/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ArgsCheck from "./internal/argsCheck.ts"
import type * as Capabilities from "./internal/capabilities.ts"

/** One LSP tool: its name, description, argument schema and the server capability it needs. */
export interface Definition<S extends Schema.ConstraintDecoder<unknown>> {
  readonly name: string
  readonly description: string
  /** The provider the tool needs; `undefined` for tools every server has. */
  readonly provider: Capabilities.Provider | undefined
  /** False for tools that write files (rename, format). */
  readonly readOnly: boolean
  readonly args: S
}

const File = Schema.NonEmptyString.annotate({
  description: "Path of the file, absolute or relative to the workspace root"
})
/**
 * A 1-based line or column, at most LSP's largest `uinteger` (2³¹ − 1): a larger one was sent as it
 * was, and clangd read 2³² + 1 as line 1 — a rename there renamed another symbol.
 */
const Count = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2 ** 31 - 1 }))
const Line = Count.annotate({ description: "1-based line number" })
const Character = Count.annotate({
  description: "1-based column (UTF-16 code units)"
})

/** The arguments of a tool about one file. */
export const FileArgs = Schema.Struct({ file: File })
/** The arguments of a tool about one position in a file (1-based line and column). */
export const PositionArgs = Schema.Struct({ file: File, line: Line, character: Character })
/** `lsp_references`' arguments: a position, and whether to include the declaration. */
export const ReferencesArgs = Schema.Struct({
  ...PositionArgs.fields,
  include_declaration: Schema.optionalKey(Schema.Boolean).annotate({
    description: "Include the declaration itself (default true)"
  })
})
/** A file and an optional range of lines. */
export const RangeArgs = Schema.Struct({
  file: File,
  start_line: Schema.optionalKey(Line),
  end_line: Schema.optionalKey(Line)
})
/** `lsp_code_actions`' arguments: a file and the lines to act on. */
export const CodeActionArgs = Schema.Struct({ file: File, start_line: Line, end_line: Schema.optionalKey(Line) })
/** `lsp_rename`'s arguments: a position and the new name. */
export const RenameArgs = Schema.Struct({
  ...PositionArgs.fields,
  new_name: Schema.NonEmptyString.annotate({ description: "The new name of the symbol" })
})
/** `lsp_call_hierarchy`'s arguments: a position and a direction (callers or callees). */
export const CallHierarchyArgs = Schema.Struct({
  ...PositionArgs.fields,
  direction: Schema.Literals(["incoming", "outgoing"]).annotate({ description: "Callers (incoming) or callees" })
})
/** `lsp_type_hierarchy`'s arguments: a position and a direction (supertypes or subtypes). */
export const TypeHierarchyArgs = Schema.Struct({
  ...PositionArgs.fields,
  direction: Schema.Literals(["supertypes", "subtypes"])
})
/** `lsp_workspace_symbols`' argument: the name or fragment to search for. */
export const QueryArgs = Schema.Struct({
  query: Schema.String.annotate({ description: "Symbol name or fragment to search for" })
})
/**
 * No arguments; any given are ignored. A Record, not an empty Struct: MCP requires every tool's
 * input schema to be an object schema, and an empty Struct exports as "anything but null".
 */
export const NoArgs = Schema.Record(Schema.String, Schema.Unknown)

const define = <S extends Schema.ConstraintDecoder<unknown>>(definition: Definition<S>): Definition<S> => definition

/** `lsp_workspace`: what the server is and serves. */
export const workspace = define({
  name: "lsp_workspace",
  description: "Language server info: name, version, capabilities, open documents. Start here.",
  provider: undefined,
  readOnly: true,
  args: NoArgs
})
/** `lsp_diagnostics`: the errors and warnings of a file, for the version just sent. */
export const diagnostics = define({
  name: "lsp_diagnostics",
  description: "Errors and warnings of a file, fresh from the server. Call after every edit.",
  provider: undefined,
  readOnly: true,
  args: FileArgs
})
/** `lsp_hover`: the type and docs at a position. */
export const hover = define({
  name: "lsp_hover",
  description: "Type and documentation of the symbol at a position.",
  provider: "hoverProvider",
  readOnly: true,
  args: PositionArgs
})
/** `lsp_definition`: where the symbol at a position is defined. */
export const definition = define({
  name: "lsp_definition",
  description: "Where the symbol at a position is defined.",
  provider: "definitionProvider",
  readOnly: true,
  args: PositionArgs
})
/** `lsp_references`: every use of the symbol at a position. */
export const references = define({
  name: "lsp_references",
  description: "Every use of the symbol at a position. Call before changing a symbol.",
  provider: "referencesProvider",
  readOnly: true,
  args: ReferencesArgs
})
/** `lsp_implementations`: the implementations of the interface or abstract member at a position. */
export const implementations = define({
  name: "lsp_implementations",
  description: "Implementations of the interface or abstract member at a position.",
  provider: "implementationProvider",
  readOnly: true,
  args: PositionArgs
})
/** `lsp_document_symbols`: the outline of a file. */
export const documentSymbols = define({
  name: "lsp_document_symbols",
  description: "Outline of a file: its classes, functions, variables, with lines.",
  provider: "documentSymbolProvider",
  readOnly: true,
  args: FileArgs
})
/** `lsp_workspace_symbols`: symbols across the workspace by name. */
export const workspaceSymbols = define({
  name: "lsp_workspace_symbols",
  description: "Find symbols by name across the workspace.",
  provider: "workspaceSymbolProvider",
  readOnly: true,
  args: QueryArgs
})
/** `lsp_code_actions`: the fixes and refactorings the server offers for some lines (listed, not applied). */
export const codeActions = define({
  name: "lsp_code_actions",
  description: "Quick fixes and refactorings the server offers for a line range (listed, not applied).",
  provider: "codeActionProvider",
  readOnly: true,
  args: CodeActionArgs
})
/** `lsp_rename`: renames a symbol across the workspace (writes files). */
export const rename = define({
  name: "lsp_rename",
  description: "Rename the symbol at a position across the workspace; writes the files.",
  provider: "renameProvider",
  readOnly: false,
  args: RenameArgs
})
/** `lsp_format`: formats a file with the server's formatter (writes the file). */
export const format = define({
  name: "lsp_format",
  description: "Format a file with the server's formatter; writes the file.",
  provider: "documentFormattingProvider",
  readOnly: false,
  args: FileArgs
})
/** `lsp_call_hierarchy`: the callers or callees of the function at a position. */
export const callHierarchy = define({
  name: "lsp_call_hierarchy",
  description: "Callers (incoming) or callees (outgoing) of the function at a position.",
  provider: "callHierarchyProvider",
  readOnly: true,
  args: CallHierarchyArgs
})
/** `lsp_type_hierarchy`: the supertypes or subtypes of the type at a position. */
export const typeHierarchy = define({
  name: "lsp_type_hierarchy",
  description: "Supertypes or subtypes of the type at a position.",
  provider: "typeHierarchyProvider",
  readOnly: true,
  args: TypeHierarchyArgs
})
/** `lsp_signature_help`: the signature of the call at a position, with the active parameter. */
export const signatureHelp = define({
  name: "lsp_signature_help",
  description: "Signatures of the call at a position, with the active parameter.",
  provider: "signatureHelpProvider",
  readOnly: true,
  args: PositionArgs
})
/** `lsp_inlay_hints`: the inferred types and parameter names the server would show inline. */
export const inlayHints = define({
  name: "lsp_inlay_hints",
  description: "Inferred types and parameter names the server would show inline, for a line range.",
  provider: "inlayHintProvider",
  readOnly: true,
  args: RangeArgs
})

/**
 * Every tool by its key, in catalogue order: the one list of LSP tools. The handlers give each key
 * a run (their type says so), so a tool cannot be listed without one or the reverse.
 */
export const definitions = {
  workspace,
  diagnostics,
  hover,
  definition,
  references,
  implementations,
  documentSymbols,
  workspaceSymbols,
  codeActions,
  rename,
  format,
  callHierarchy,
  typeHierarchy,
  signatureHelp,
  inlayHints
} as const

/** Every tool, in catalogue order. */
export const all: ReadonlyArray<Definition<Schema.ConstraintDecoder<unknown>>> = Object.values(definitions)

/** Tools that concern the whole workspace rather than one file: a router asks every server. */
export const workspaceWide: ReadonlySet<string> = new Set([workspace.name, workspaceSymbols.name])

/** The JSON Schema of a tool's arguments. */
export const inputSchema = (definition: Definition<Schema.ConstraintDecoder<unknown>>): Toolset.Tool["inputSchema"] =>
  Schema.toJsonSchemaDocument(definition.args).schema

/** The tool as the agent sees it, with its JSON Schema. */
export const toTool = (definition: Definition<Schema.ConstraintDecoder<unknown>>): Toolset.Tool => ({
  name: definition.name,
  description: definition.description,
  inputSchema: inputSchema(definition),
  annotations: definition.readOnly
    ? { readOnlyHint: true }
    : { readOnlyHint: false, destructiveHint: false, idempotentHint: false }
})

/**
 * The catalogue for a server: all tools while its capabilities are unknown (never connected),
 * otherwise the always-on tools plus those whose provider the server supports.
 */
export const available = (
  capabilities: Capabilities.Capabilities | undefined
): ReadonlyArray<Definition<Schema.ConstraintDecoder<unknown>>> =>
  all.filter(
    (definition) =>
      capabilities === undefined || definition.provider === undefined || capabilities.supports(definition.provider)
  )

/**
 * A tool's argument decoder, built once, since it runs before every call. The failure is a
 * message for the agent that names each bad argument, e.g. `line: Expected a value greater than
 * or equal to 1, got 0`. Arguments `ArgsCheck` accepts are used as they are; the others are
 * decoded on Schema's fast path (default options), and only invalid ones decoded again with
 * `errors: "all"`, which takes the slow one, to report every problem at once.
 */
export const validator = <S extends Schema.ConstraintDecoder<unknown>>(
  definition: Definition<S>
): ((args: { readonly [key: string]: unknown }) => Result.Result<S["Type"], string>) => {
  const decode = Schema.decodeUnknownResult(definition.args)
  const accepts = ArgsCheck.compile(inputSchema(definition))
  return (args) => {
    // Sound because `accepts` only passes what the Schema accepts unchanged (see ArgsCheck).
    if (accepts?.(args)) return Result.succeed(args as S["Type"])
    const input = Toolset.stripNulls(args)
    const decoded = decode(input)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.mapError(
          decode(input, { errors: "all" }),
          (error) => `Invalid arguments for ${definition.name}:\n${error.message}`
        )
  }
}

/** Decodes a tool's arguments once; see `validator` for the decoder a caller keeps. */
export const validate = <S extends Schema.ConstraintDecoder<unknown>>(
  definition: Definition<S>,
  args: { readonly [key: string]: unknown }
): Result.Result<S["Type"], string> => validator(definition)(args)
