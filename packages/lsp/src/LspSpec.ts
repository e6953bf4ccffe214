/**
 * How to run a language server: the command, its arguments and environment, the workspace root
 * it serves (its working directory and `rootUri`, and where its tools may read and write), the
 * file types it is responsible for, and the server's own settings. A Schema, so config files
 * decode into it with errors that name the field.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

export class LspSpec extends Schema.Class<LspSpec>("LspSpec")({
  command: Schema.NonEmptyString,
  args: Schema.Array(Schema.String).pipe(Schema.withDecodingDefault(Effect.succeed([]))),
  env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /**
   * The workspace root: the server's working directory, `rootUri` and only workspace folder, and
   * the folder its tools stay inside (see `Workspace`).
   */
  cwd: Schema.NonEmptyString,
  /**
   * Where the tools may also read and write: anywhere (`true`), or these extra folders (relative
   * ones against `cwd`). Absent, every file an agent names and every file a server's edit touches
   * must lie inside `cwd`.
   */
  allowOutsideWorkspace: Schema.optionalKey(Schema.Union([Schema.Literal(true), Schema.Array(Schema.String)])),
  /** Extensions this server handles, with or without the dot, any case; empty means every file. */
  fileTypes: Schema.Array(Schema.String).pipe(Schema.withDecodingDefault(Effect.succeed([]))),
  /**
   * The server's settings, by section (`{ typescript: { inlayHints: { ... } } }`): sent with
   * `workspace/didChangeConfiguration` after the handshake, and the answer to
   * `workspace/configuration` for each section asked for (an empty object for any other).
   */
  settings: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  /** Sent as `initializationOptions` in `initialize`; what it may hold is up to the server. */
  initializationOptions: Schema.optionalKey(Schema.Unknown)
}) {}

/** Builds a spec from already-decoded values, filling the defaults. */
export const make = (fields: {
  readonly command: string
  readonly args?: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  readonly cwd: string
  readonly allowOutsideWorkspace?: true | ReadonlyArray<string>
  readonly fileTypes?: ReadonlyArray<string>
  readonly settings?: { readonly [section: string]: unknown }
  readonly initializationOptions?: unknown
}): LspSpec =>
  Schema.decodeUnknownSync(LspSpec)({
    command: fields.command,
    args: fields.args ?? [],
    cwd: fields.cwd,
    fileTypes: fields.fileTypes ?? [],
    ...(fields.env === undefined ? {} : { env: fields.env }),
    ...(fields.allowOutsideWorkspace === undefined ? {} : { allowOutsideWorkspace: fields.allowOutsideWorkspace }),
    ...(fields.settings === undefined ? {} : { settings: fields.settings }),
    ...(fields.initializationOptions === undefined ? {} : { initializationOptions: fields.initializationOptions })
  })

/**
 * The settings of one `workspace/configuration` section, e.g. `typescript.inlayHints`; all of
 * them for no section; an empty object when absent — not null: vscode-css-language-server pushes
 * nothing without an object.
 */
export const section = (spec: Pick<LspSpec, "settings">, name: string | undefined): unknown => {
  let value: unknown = spec.settings ?? {}
  for (const key of name === undefined || name === "" ? [] : name.split(".")) {
    value = Predicate.hasProperty(value, key) ? value[key] : undefined
  }
  return value ?? {}
}

const normalize = (extension: string): string => extension.replace(/^\./, "").toLowerCase()

/** True when the server is responsible for `path`, by extension (case-insensitive, dot optional). */
export const handles = (spec: Pick<LspSpec, "fileTypes">, path: string): boolean => {
  if (spec.fileTypes.length === 0) return true
  const extension = normalize(NodePath.extname(path))
  return extension !== "" && spec.fileTypes.some((type) => normalize(type) === extension)
}

/** A description safe to log: the command line. */
export const describe = (spec: LspSpec): string => `${spec.command} ${spec.args.join(" ")}`.trim()
