/**
 * `toolvisor auth [CONFIG] NAME`: the one command that opens a browser. It logs in to a remote
 * MCP toolset's server (OAuth authorization code with PKCE, or client credentials), stores the
 * tokens where every later connection finds them, and then starts the toolset to show that it
 * now connects. `--logout` forgets the stored login instead.
 */
import * as NodeChildProcess from "node:child_process"
import type { AgentConfig } from "@toolvisor/config"
import { Redaction } from "@toolvisor/core"
import { McpSpec, OAuth } from "@toolvisor/mcp"
import { Toolsets, Unresolved } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { Failure, UsageError } from "./CliError.ts"
import * as Open from "./Open.ts"
import * as Operands from "./Operands.ts"

/** Opens the URL in the desktop's browser when there is one; the URL is printed either way. */
const openBrowser = (url: URL, browser: boolean) =>
  Effect.gen(function* () {
    yield* Console.error(`Open this URL to log in:\n  ${url.href}`)
    const desktop = process.platform === "darwin" || process.env.DISPLAY || process.env.WAYLAND_DISPLAY
    if (!browser || !desktop) return
    const command = process.platform === "darwin" ? "open" : "xdg-open"
    yield* Effect.sync(() => {
      const child = NodeChildProcess.spawn(command, [url.href], { stdio: "ignore", detached: true })
      child.on("error", () => undefined)
      child.unref()
    })
  })

const remoteEntry = (config: AgentConfig.Config, name: string) =>
  Effect.gen(function* () {
    const entry = config.toolsets.find((toolset) => toolset.name === name)
    if (entry === undefined) {
      const names = config.toolsets.map((toolset) => toolset.name).join(", ")
      return yield* new UsageError({ message: `auth: no toolset named "${name}" (toolsets: ${names})` })
    }
    // A login with a `${VAR}` the environment lacks would send the reference as written.
    const lacks = Unresolved.of(entry)
    if (lacks !== undefined) return yield* new Failure({ message: Unresolved.error(name, lacks).message })
    const spec = entry.type === "mcp" ? Toolsets.mcpSpec(entry.transport) : undefined
    if (spec === undefined || !McpSpec.isRemote(spec)) {
      return yield* new UsageError({ message: `auth: ${name} is not a remote MCP server; only those log in` })
    }
    return { entry, spec }
  })

/**
 * `toolvisor auth [CONFIG] NAME`: logs in (or, with `logout`, forgets the login), then shows the
 * toolset connects. What it says, a failure included, is masked with every secret the config
 * holds, as a registry over the same config would mask it.
 */
export const run = (options: Options) =>
  Effect.gen(function* () {
    const { config, rest } = yield* Operands.split({ command: "auth", names: ["NAME"] }, options.operands)
    const loaded = (yield* Open.load({ ...options, config })).config
    const redactor = Redaction.make(loaded.toolsets.flatMap((toolset) => toolset.secrets))
    return yield* login(loaded, rest[0] ?? "", options, redactor).pipe(
      Effect.provideService(Redaction.Current, redactor),
      Effect.mapError((error) => Redaction.error(error, redactor.text))
    )
  }).pipe(Effect.withSpan("toolvisor.auth"))

interface Options {
  readonly operands: ReadonlyArray<string>
  readonly agent: Option.Option<string>
  readonly input: ReadonlyArray<string>
  readonly logout: boolean
  readonly noBrowser: boolean
}

const login = Effect.fnUntraced(function* (
  loaded: AgentConfig.Config,
  name: string,
  options: Options,
  redactor: Redaction.Redactor
) {
  const { entry, spec } = yield* remoteEntry(loaded, name)
  if (options.logout) {
    const removed = yield* OAuth.logout(spec)
    return yield* Console.log(removed ? `${name}: logged out` : `${name}: no stored login`)
  }
  const outcome = yield* OAuth.login({ name, spec, open: (url) => openBrowser(url, !options.noBrowser) })
  // A fresh toolset picks the stored tokens up, as a running one does at its next reconnect.
  const { toolset } = yield* Toolsets.make(entry, redactor)
  yield* toolset.start
  const status = yield* toolset.state
  yield* Console.log(
    `${name}: logged in${outcome === "client-credentials" ? " (client credentials)" : ""}; ` +
      `${status.state}, ${status.toolCount ?? 0} tools`
  )
})
