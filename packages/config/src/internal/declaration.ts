/**
 * What every format's resolution shares: a declared toolset becomes an outcome (declared,
 * skipped or invalid), and the outcomes of every agent are assembled into the resolved config —
 * identities shared, display names made unique, policies computed.
 */
import * as NodePath from "node:path"
import { Policy, Redaction } from "@toolvisor/core"
import * as HttpUrl from "@toolvisor/core/internal/httpUrl"
import type * as AgentConfig from "../AgentConfig.ts"
import type * as ConfigError from "../ConfigError.ts"
import * as ToolsetDiff from "../ToolsetDiff.ts"
import * as Interpolation from "./interpolation.ts"

export interface Context {
  readonly source: string
  /**
   * The config's folder: relative paths in it are resolved against it, and a stdio server with
   * no `cwd` runs there (`folderOf` in `ConfigLoader.ts`).
   */
  readonly baseDir: string
  /** The environment values expanded into each entry, by the entry's path. */
  readonly secrets: ReadonlyMap<string, ReadonlyArray<string>>
  /** What each entry needs that the environment lacks, by the entry's path. */
  readonly unresolved: ReadonlyMap<string, ReadonlyArray<AgentConfig.Unresolved>>
}

export interface Resolution {
  readonly config: AgentConfig.Config
  readonly issues: ReadonlyArray<ConfigError.Issue>
  /** Where the toolsets that will run were written: a problem elsewhere cannot stop them. */
  readonly live: ReadonlyArray<string>
}

/** A toolset as one entry declares it, before sharing and naming. */
export interface Declaration extends ToolsetDiff.Signed {
  readonly path: string
  readonly identity: string
  readonly derivedName: string
  /** An explicit name is the user's identity for the toolset: a clash with it is an error. */
  readonly named: boolean
  /** The `mcps` definition it came from, if any. */
  readonly sourcePath: string
  readonly secrets: ReadonlyArray<string>
  readonly unresolved: ReadonlyArray<AgentConfig.Unresolved>
}

export type Outcome =
  | { readonly _tag: "Declared"; readonly declaration: Declaration; readonly offer?: AgentConfig.Offer | undefined }
  | { readonly _tag: "Skipped"; readonly skipped: AgentConfig.Skipped }
  | { readonly _tag: "Invalid"; readonly issues: ReadonlyArray<ConfigError.Issue> }

export interface Source {
  readonly command?: string | undefined
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  readonly url?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly oauth?: AgentConfig.OAuth | undefined
  readonly sse: boolean
}

/**
 * A command that names a file (`./bin/server`, `scripts/run.sh`) rather than a program to look
 * up on PATH (`npx`, `node`): it is found where the server runs, as a shell would find it there.
 */
const isPath = (command: string): boolean => command.includes("/") || command.includes(NodePath.sep)

/**
 * A stdio server runs in its `cwd` / `working_dir`, relative to the config's folder, which is
 * also where it runs when the entry names none: a host that starts `serve /abs/agent.yaml` from
 * a folder of its own gets the servers of that file, not whatever its folder holds. A command
 * that is a path is made absolute there; `args` are passed as written, and a relative one is
 * the server's to read against the folder it runs in, as every host and shell has it.
 */
const transportOf = (
  source: Source,
  context: Context,
  urlPath: string,
  resolved: boolean
): AgentConfig.Transport | ReadonlyArray<ConfigError.Issue> => {
  if (source.command !== undefined) {
    // A path that still holds an unset variable is shown as written: it will not run.
    const within = (folder: string, path: string) =>
      !resolved && Interpolation.hasReference(path) ? path : NodePath.resolve(folder, path)
    const cwd = within(context.baseDir, source.cwd ?? ".")
    return {
      _tag: "stdio",
      command: isPath(source.command) ? within(cwd, source.command) : source.command,
      args: source.args ?? [],
      env: source.env ?? {},
      cwd
    }
  }
  const url = source.url ?? ""
  // A URL that holds a variable the environment lacks cannot be judged; its toolset will not start.
  const problem = resolved ? HttpUrl.serverProblem(url) : undefined
  if (problem !== undefined) return [{ path: urlPath, message: problem }]
  const { authServerMetadataUrl: _, xaa: __, ...oauth } = source.oauth ?? {}
  return {
    _tag: source.sse ? "sse" : "http",
    url,
    headers: source.headers ?? {},
    ...(source.oauth === undefined ? {} : { oauth })
  }
}

/**
 * The secrets written into the file itself, which no `${VAR}` announced: keys after secret flags
 * and in `env`, literal header values, URL credentials and tokens, a configured client secret,
 * and keys after secret flags in a `headersHelper` command (as in a server's `args`: the command is
 * shown by `validate` and quoted by the helper's errors).
 */
const literalSecrets = (transport: AgentConfig.Transport): ReadonlyArray<string> =>
  transport._tag === "stdio"
    ? [...Redaction.argSecrets(transport.args), ...Redaction.envSecrets(transport.env)]
    : [
        ...Redaction.urlSecrets(transport.url),
        ...Redaction.headerSecrets(transport.headers),
        ...(transport.oauth?.clientSecret === undefined ? [] : [transport.oauth.clientSecret]),
        ...(transport.headersHelper === undefined ? [] : Redaction.commandSecrets(transport.headersHelper.command))
      ]

const nameFrom = (transport: AgentConfig.Transport): string =>
  transport._tag === "stdio"
    ? NodePath.basename(transport.command)
    : HttpUrl.is(transport.url)
      ? new URL(transport.url).host
      : transport.url

/**
 * The name of an entry that has none: from what it runs, unless that shows a secret (`command:
 * ${API_TOKEN}`), which a name would print everywhere; then its type's.
 */
const nameOf = (type: Declare["type"], transport: AgentConfig.Transport, secrets: ReadonlyArray<string>): string => {
  const name = nameFrom(transport)
  return secrets.some((secret) => name.includes(secret)) ? type : name
}

export interface Declare {
  readonly path: string
  readonly headersHelper?: string | undefined
  readonly envFile?: string | undefined
  readonly sourcePath?: string | undefined
  readonly type: "mcp" | "lsp"
  readonly name: string | undefined
  readonly ref: string | undefined
  readonly source: Source
  readonly urlPath: string
  readonly fileTypes: ReadonlyArray<string> | undefined
  /** LSP only: `true`, or extra folders, relative ones against the config file's directory. */
  readonly allowOutsideWorkspace?: boolean | ReadonlyArray<string> | undefined
  readonly tools: ReadonlyArray<string> | undefined
  /** Tools never exposed (a host's disabled-tools list). */
  readonly deny?: ReadonlyArray<string> | undefined
  readonly lifecycle: Policy.Lifecycle | undefined
  readonly lazy: boolean | undefined
  readonly logLevel?: AgentConfig.LogLevel | undefined
  readonly secrets: ReadonlyArray<string>
  readonly unresolved: ReadonlyArray<AgentConfig.Unresolved>
}

/** Some hosts write `tools: ["*"]` for "every tool"; the runtime's filter knows that as no filter. */
export const allowList = (tools: ReadonlyArray<string> | undefined): ReadonlyArray<string> | undefined =>
  tools === undefined || tools.includes("*") ? undefined : tools

/**
 * What runs or is read only when the toolset connects: a stdio server's `envFile` (relative to the
 * config file's folder) and a remote server's `headersHelper` (run in that folder). Loading reads
 * neither; they are part of the transport, so changing one is a change of the toolset.
 */
const withConnectInputs = (
  transport: AgentConfig.Transport,
  input: Declare,
  context: Context
): AgentConfig.Transport => {
  if (transport._tag === "stdio") {
    return input.envFile === undefined
      ? transport
      : { ...transport, envFile: NodePath.resolve(context.baseDir, input.envFile) }
  }
  return input.headersHelper === undefined
    ? transport
    : { ...transport, headersHelper: { command: input.headersHelper, cwd: context.baseDir } }
}

/** `allow_outside_workspace` as the toolset takes it: `false` is the default, extra roots absolute. */
const outsideWorkspace = (
  allowed: Declare["allowOutsideWorkspace"],
  context: Context
): Pick<AgentConfig.ToolsetConfig, "allowOutsideWorkspace"> =>
  allowed === undefined || allowed === false
    ? {}
    : {
        allowOutsideWorkspace: allowed === true ? true : allowed.map((root) => NodePath.resolve(context.baseDir, root))
      }

export const declare = (input: Declare, context: Context): Outcome => {
  const bare = transportOf(input.source, context, input.urlPath, input.unresolved.length === 0)
  if (!("_tag" in bare)) return { _tag: "Invalid", issues: bare }
  const transport = withConnectInputs(bare, input, context)
  const signed: ToolsetDiff.Signed = {
    type: input.type,
    prefix: input.name,
    transport,
    fileTypes: input.fileTypes ?? [],
    ...outsideWorkspace(input.allowOutsideWorkspace, context),
    tools: allowList(input.tools),
    ...(input.deny === undefined || input.deny.length === 0 ? {} : { deny: input.deny }),
    lifecycle: input.lifecycle ?? {},
    lazy: input.lazy ?? false,
    ...(input.logLevel === undefined ? {} : { logLevel: input.logLevel })
  }
  // A reference still in the transport (an unset variable) is text of the file, not a secret.
  const secrets = [
    ...new Set([
      ...input.secrets,
      ...literalSecrets(transport).filter(
        (value) => input.unresolved.length === 0 || !Interpolation.hasReference(value)
      )
    ])
  ]
  const declaration: Declaration = {
    ...signed,
    path: input.path,
    identity: ToolsetDiff.identity({
      type: input.type,
      name: input.name,
      ref: input.ref,
      command: input.source.command,
      url: input.source.url
    }),
    derivedName: input.name ?? input.ref ?? nameOf(input.type, transport, secrets),
    named: input.name !== undefined,
    sourcePath: input.sourcePath ?? input.path,
    secrets,
    unresolved: input.unresolved
  }
  return { _tag: "Declared", declaration }
}

/** The environment values expanded into the entries at these paths (an entry, the `mcps` definition it refs). */
export const secretsAt = (context: Context, ...paths: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(paths)].flatMap((path) => context.secrets.get(path) ?? [])

/** What the entries at these paths (an entry, the `mcps` definition it refs) need and the environment lacks. */
export const unresolvedAt = (
  context: Context,
  ...paths: ReadonlyArray<string>
): ReadonlyArray<AgentConfig.Unresolved> => [...new Set(paths)].flatMap((path) => context.unresolved.get(path) ?? [])

export const skipped = (path: string, type: string, reason: string): Outcome => ({
  _tag: "Skipped",
  skipped: { path, type, reason }
})

const uniqueName = (base: string, used: Set<string>): string => {
  let name = base
  for (let n = 2; used.has(name); n++) name = `${base}-${n}`
  used.add(name)
  return name
}

export const assemble = (
  source: string,
  agents: ReadonlyArray<{
    readonly name: string
    readonly outcomes: ReadonlyArray<Outcome>
    readonly deferAbove?: number | undefined
  }>
): Resolution => {
  const issues: Array<ConfigError.Issue> = []
  const skippedEntries: Array<AgentConfig.Skipped> = []
  const byIdentity = new Map<string, AgentConfig.ToolsetConfig>()
  const usedNames = new Set<string>()
  const live: Array<string> = []
  const specs = agents.map(({ name, outcomes, deferAbove }): AgentConfig.AgentSpec => {
    const identities: Array<string> = []
    const offers: Record<string, AgentConfig.Offer> = {}
    for (const outcome of outcomes) {
      if (outcome._tag === "Invalid") issues.push(...outcome.issues)
      else if (outcome._tag === "Skipped") skippedEntries.push(outcome.skipped)
      else {
        const {
          path,
          identity: declared,
          derivedName,
          named,
          sourcePath,
          secrets,
          unresolved,
          ...signed
        } = outcome.declaration
        live.push(path, sourcePath)
        const signature = ToolsetDiff.signature(signed)
        const taken = byIdentity.get(declared)
        // Two different unnamed servers with the same command are two toolsets: the second one's
        // identity carries its signature, so the same file always gives the same identities.
        const identity =
          taken === undefined || taken.signature === signature || named
            ? declared
            : `${declared}#${signature.slice(0, 8)}`
        const existing = byIdentity.get(identity)
        if (existing === undefined) {
          byIdentity.set(identity, {
            ...signed,
            identity,
            signature,
            name: uniqueName(derivedName, usedNames),
            policy: Policy.fromLifecycle(signed.lifecycle),
            secrets,
            ...(unresolved.length === 0 ? {} : { unresolved }),
            path
          })
        } else if (existing.signature !== signature) {
          const message = (other: string) =>
            `toolset ${identity} is also declared at ${other} with a different definition; give one a different name`
          issues.push({ path: existing.path, message: message(path) }, { path, message: message(existing.path) })
        }
        if (!identities.includes(identity)) {
          identities.push(identity)
          if (outcome.offer !== undefined) offers[identity] = outcome.offer
        }
      }
    }
    return {
      name,
      toolsets: identities,
      ...(Object.keys(offers).length === 0 ? {} : { offers }),
      ...(deferAbove === undefined ? {} : { deferAbove })
    }
  })
  return {
    config: { source, agents: specs, toolsets: [...byIdentity.values()], skipped: skippedEntries },
    issues,
    live
  }
}
