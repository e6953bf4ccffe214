/**
 * `toolvisor validate` and `toolvisor schema`. `validate` prints what Toolvisor understood of a
 * file (`--json`: as one document): the format it was read as, each toolset (kind, how it starts,
 * its policy) with secrets masked, what would run or be read when it connects (loading runs and
 * reads nothing), control characters escaped (a config from someone else's repository is
 * hostile text), and each skipped entry and warning with its reason — a command not found here
 * among them (`Executable`). A config that cannot be
 * used is the command's result too: the file, its format and every problem one a line on stdout
 * (`ConfigProblems`), exit 2. `--check` also starts each toolset through the registry, lists its
 * tools and stops it: a dry run that finds a missing binary, a wrong URL, an allow-list entry
 * that names no tool, or two toolsets offering the same tool names, before an agent does.
 */
import { type AgentConfig, AllowList, ConfigLoader, DeferList, JsonSchema, ToolGroups } from "@toolvisor/config"
import { Redaction, type Toolset } from "@toolvisor/core"
import { Catalog, OrphanSweep, Surfaces, ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Failure, Shown, UsageError } from "./CliError.ts"
import * as ConfigProblems from "./ConfigProblems.ts"
import * as Executable from "./Executable.ts"
import * as Open from "./Open.ts"
import * as Printable from "./Printable.ts"

const seconds = (duration: Duration.Duration | undefined) =>
  duration === undefined ? "none" : `${Duration.toSeconds(duration)}s`

/** How a toolset starts, with every secret of its config masked. */
export const startsWith = (toolset: AgentConfig.ToolsetConfig): string => {
  const mask = Redaction.make(toolset.secrets).text
  const transport = toolset.transport
  if (transport._tag === "stdio") {
    const cwd = transport.cwd === undefined ? "" : ` (in ${transport.cwd})`
    const env = Object.keys(transport.env)
    const withEnv = env.length === 0 ? "" : ` env: ${env.join(", ")}`
    return mask(`stdio: ${[transport.command, ...transport.args].join(" ")}${cwd}${withEnv}`)
  }
  const headers = Object.keys(transport.headers)
  const withHeaders = headers.length === 0 ? "" : ` headers: ${headers.join(", ")}`
  return mask(`${transport._tag === "sse" ? "SSE" : "streamable HTTP"}: ${transport.url}${withHeaders}`)
}

/**
 * What would run or be read when the toolset connects: loading ran nothing and read no other
 * file, so `validate` says what a start would do instead (`--check` does it). Masked.
 */
export const onConnect = (
  toolset: AgentConfig.ToolsetConfig
): { readonly headersHelper?: AgentConfig.HeadersHelper; readonly envFile?: string } => {
  const mask = Redaction.make(toolset.secrets).text
  const transport = toolset.transport
  if (transport._tag === "stdio") return transport.envFile === undefined ? {} : { envFile: mask(transport.envFile) }
  const helper = transport.headersHelper
  return helper === undefined ? {} : { headersHelper: { command: mask(helper.command), cwd: mask(helper.cwd) } }
}

const onConnectLines = (toolset: AgentConfig.ToolsetConfig): ReadonlyArray<string> => {
  const { headersHelper, envFile } = onConnect(toolset)
  return [
    ...(headersHelper === undefined
      ? []
      : [`headersHelper would run: ${headersHelper.command} (in ${headersHelper.cwd})`]),
    ...(envFile === undefined ? [] : [`envFile would be read: ${envFile}`])
  ]
}

/** The policy in one line: what a user tunes in `lifecycle`. */
export const policyLine = (toolset: AgentConfig.ToolsetConfig): string => {
  const p = toolset.policy
  const restarts = p.maxRestarts === -1 ? "unlimited" : String(p.maxRestarts)
  return [
    `restart ${p.restart} (max ${restarts})`,
    `startup ${seconds(p.startupTimeout)}`,
    `call ${seconds(p.callTimeout)}`,
    ...(p.required ? ["required"] : []),
    ...(toolset.lazy ? ["lazy"] : []),
    ...(toolset.tools === undefined ? [] : [`tools: ${toolset.tools.join(", ")}`]),
    ...(toolset.deny === undefined ? [] : [`never: ${toolset.deny.join(", ")}`])
  ].join(", ")
}

/** Everything `validate` prints for a loaded config, one line per item. */
export const describe = (path: string, config: AgentConfig.Config): ReadonlyArray<string> => {
  const byIdentity = new Map(config.toolsets.map((t) => [t.identity, t]))
  const warnings = config.warnings ?? []
  const counts = [
    `${config.agents.length} agent(s)`,
    `${config.toolsets.length} toolset(s)`,
    ...(config.skipped.length > 0 ? [`${config.skipped.length} skipped`] : []),
    ...(warnings.length > 0 ? [`${warnings.length} warning(s)`] : [])
  ]
  return [
    `${path}: read as ${config.format ?? "an agent config"}`,
    ...config.agents.flatMap((agent) => [
      `agent ${agent.name}: ${agent.toolsets.length === 0 ? "no toolsets" : `${agent.toolsets.length} toolset(s)`}`,
      ...agent.toolsets.flatMap((identity) => {
        const toolset = byIdentity.get(identity)
        return toolset === undefined
          ? []
          : [
              `  ${toolset.name} (${toolset.type}) ${startsWith(toolset)}`,
              ...onConnectLines(toolset).map((line) => `    ${line}`),
              `    policy: ${policyLine(toolset)}`
            ]
      })
    ]),
    ...Object.entries(config.groups ?? {}).map(([group, patterns]) => `group ${group}: ${patterns.join(", ")}`),
    ...config.skipped.map((s) => `skipped ${s.path} (${s.type}): ${s.reason}`),
    ...warnings.map((w) => `warning ${w.path === "" ? "" : `${w.path}: `}${w.message}`),
    `valid: ${counts.join(", ")}`
  ]
}

/** `validate --json`: what `describe` prints, as one JSON document (secrets masked the same way). */
export const report = (path: string, config: AgentConfig.Config) => {
  const names = new Map(config.toolsets.map((t) => [t.identity, t.name]))
  return {
    valid: true as const,
    source: path,
    format: config.format ?? "agent config",
    agents: config.agents.map((agent) => ({
      name: agent.name,
      toolsets: agent.toolsets.flatMap((identity) => names.get(identity) ?? [])
    })),
    toolsets: config.toolsets.map((toolset) => ({
      name: toolset.name,
      type: toolset.type,
      startsWith: startsWith(toolset),
      policy: policyLine(toolset),
      onConnect: onConnect(toolset)
    })),
    groups: config.groups ?? {},
    skipped: config.skipped,
    warnings: config.warnings ?? []
  }
}

/**
 * The dry run: every toolset once, one after another, through the registry, and no retries so a
 * failure is reported at once. Each toolset sits alone in an agent of its own (several LSP
 * toolsets are not merged behind one router) with its filters lifted, so the check sees every
 * tool: it prints those the toolset offers through its `tools:` filter — the count every status
 * output shows — and warns of `tools:` and `defer:` entries that match none, and, per agent, of
 * tools hidden because an earlier toolset offers the same names.
 */
const check = (config: AgentConfig.Config, print: (line: string) => Effect.Effect<void>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const trial: AgentConfig.Config = {
        ...config,
        agents: config.toolsets.map((t) => ({ name: t.identity, toolsets: [t.identity] })),
        toolsets: config.toolsets.map((t) => ({
          ...t,
          tools: undefined,
          deny: undefined,
          policy: { ...t.policy, required: true, restart: "never" as const }
        }))
      }
      // As every CLI registry: its servers are marked, so a killed check leaves none behind for long.
      const registry = yield* Effect.andThen(OrphanSweep.start, ToolsetRegistry.make(trial))
      const failed: Array<string> = []
      const listed = new Map<string, ReadonlyArray<Toolset.Tool>>()
      const surfaces = new Map<string, Surfaces.Listed>()
      for (const toolset of config.toolsets) {
        const started = yield* Effect.result(registry.startToolset(toolset.name))
        if (started._tag === "Failure") {
          failed.push(toolset.name)
          yield* print(Printable.line(`✗ ${toolset.name}: ${started.failure._tag}: ${started.failure.message}`))
          continue
        }
        const catalog = yield* registry.catalog(toolset.identity)
        listed.set(
          toolset.identity,
          catalog.tools.map((entry) => entry.tool)
        )
        const filter = Catalog.filterOf(toolset)
        const offered = catalog.tools.filter((entry) => Catalog.offers(filter, entry.tool.name)).map((e) => e.name)
        yield* print(Printable.line(`✓ ${toolset.name}: Ready, ${offered.length} tool(s): ${offered.join(", ")}`))
        const unmatched = AllowList.check(
          toolset,
          catalog.tools.map((entry) => entry.name)
        )
        if (unmatched !== undefined) yield* print(Printable.line(`warning ${AllowList.message(unmatched)}`))
        const names = catalog.tools.map((entry) => ({ exposed: entry.name, server: entry.tool.name }))
        for (const found of DeferList.check(config, toolset, names)) {
          yield* print(Printable.line(`warning ${DeferList.message(found)}`))
        }
        const prompts = yield* registry.prompts(toolset.identity)
        const resources = yield* registry.resources(toolset.identity)
        surfaces.set(toolset.identity, {
          toolset: toolset.name,
          prefix: toolset.prefix,
          prompts: prompts.prompts.map((entry) => entry.item),
          resources: resources.resources.map((entry) => entry.item),
          templates: resources.templates.map((entry) => entry.item)
        })
        yield* registry.stopToolset(toolset.name)
      }
      for (const line of collisionLines(config, listed)) yield* print(Printable.line(`warning ${line}`))
      for (const line of surfaceClashLines(config, surfaces)) yield* print(Printable.line(`warning ${line}`))
      for (const found of ToolGroups.check(config, exposedNames(config, listed))) {
        yield* print(Printable.line(`warning ${ToolGroups.message(found)}`))
      }
      if (failed.length > 0) {
        return yield* new Failure({ message: `toolset(s) that did not start: ${failed.join(", ")}` })
      }
    })
  )

/** Every tool name the toolsets that started expose, as `groups:` patterns are matched against. */
const exposedNames = (
  config: AgentConfig.Config,
  listed: ReadonlyMap<string, ReadonlyArray<Toolset.Tool>>
): ReadonlyArray<string> =>
  config.toolsets.flatMap((toolset) =>
    (listed.get(toolset.identity) ?? []).map((tool) => Catalog.exposedName(toolset.prefix, tool.name))
  )

/** Prompts and resources of one toolset that an earlier toolset of the same agent hides, per agent. */
const surfaceClashLines = (
  config: AgentConfig.Config,
  listed: ReadonlyMap<string, Surfaces.Listed>
): ReadonlyArray<string> =>
  config.agents.flatMap((agent) => {
    const clashes = Surfaces.clashesOf(agent.toolsets.flatMap((identity) => listed.get(identity) ?? []))
    const named = config.agents.length > 1 ? `agent ${agent.name}: ` : ""
    return [
      ...clashes.prompts.map((clash) => `${named}${Surfaces.clashMessage("prompt", clash)}`),
      ...clashes.resources.map((clash) => `${named}${Surfaces.clashMessage("resource", clash)}`)
    ]
  })

/**
 * Tools of one toolset that an earlier toolset of the same agent hides, as the agent's catalog
 * would build it from what each toolset listed. Several LSP toolsets sit behind one router, so
 * only an agent's first one offers `lsp_*` tools.
 */
const collisionLines = (
  config: AgentConfig.Config,
  listed: ReadonlyMap<string, ReadonlyArray<Toolset.Tool>>
): ReadonlyArray<string> => {
  const byIdentity = new Map(config.toolsets.map((t) => [t.identity, t]))
  return config.agents.flatMap((agent) => {
    const members = agent.toolsets.flatMap((identity) => byIdentity.get(identity) ?? [])
    const firstLsp = members.find((t) => t.type === "lsp")
    const sources = members.flatMap((toolset): ReadonlyArray<Catalog.Source> => {
      const items = listed.get(toolset.identity)
      if (items === undefined || (toolset.type === "lsp" && toolset !== firstLsp)) return []
      const listing = { complete: true as const, items }
      return [{ toolset: toolset.name, listing, state: "Ready", lastKnown: undefined, ...Catalog.filterOf(toolset) }]
    })
    const named = config.agents.length > 1 ? `agent ${agent.name}: ` : ""
    return Catalog.collisions(Catalog.make(sources)).map((c) => `${named}${Catalog.collisionMessage(c)}`)
  })
}

/**
 * `toolvisor validate`: what was understood of the file and, with `check`, a dry run of each
 * toolset. With `json` the description is one JSON document on stdout and the dry run's lines go
 * to stderr. A config that does not load is the result, on stdout as text or (`json`) data.
 */
export const run = Effect.fn("toolvisor.validate")(function* (options: {
  readonly config: string
  readonly check: boolean
  readonly input: ReadonlyArray<string>
  readonly json: boolean
}) {
  const inputs = yield* Open.inputs(options.input)
  const read = yield* ConfigLoader.load(options.config, { inputs }).pipe(
    Effect.catchTag("ConfigError", (error) =>
      Effect.andThen(
        Console.log(options.json ? Printable.json(ConfigProblems.json(error)) : ConfigProblems.text(error)),
        new Shown({ exitCode: 2, message: error.message })
      )
    )
  )
  const loaded = { ...read, warnings: [...(read.warnings ?? []), ...Executable.warnings(read)] }
  if (options.json) yield* Console.log(Printable.json(report(options.config, loaded)))
  else for (const line of describe(options.config, loaded)) yield* Console.log(Printable.line(line))
  if (options.check) yield* check(loaded, options.json ? Console.error : Console.log)
})

const formats: ReadonlyArray<string> = JsonSchema.formats

const isFormat = (format: string): format is JsonSchema.Format => formats.includes(format)

/** `toolvisor schema`: the JSON Schema of one config format. */
export const schema = (format: string) =>
  isFormat(format)
    ? Console.log(JSON.stringify(JsonSchema.make(format), null, 2))
    : Effect.fail(new UsageError({ message: `--format: expected one of ${formats.join(", ")}, got "${format}"` }))
