/**
 * `toolvisor auth NAME [CONFIG]`: the one command that opens a browser. It logs in to a remote
 * MCP toolset's server (OAuth authorization code with PKCE, or client credentials), stores the
 * tokens where every later connection finds them, and then starts the toolset to show that it
 * now connects. `--logout` forgets the stored login instead.
 */
import * as NodeChildProcess from "node:child_process"
import { type AgentConfig, ConfigLoader } from "@toolvisor/config"
import { McpSpec, McpToolset, OAuth } from "@toolvisor/mcp"
import { Toolsets } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { UsageError } from "./commands.ts"

/** What the command borrows from the rest of the CLI (passed in, so the modules do not import each other). */
export interface Shared {
  readonly configArgument: Argument.Argument<Option.Option<string>>
  readonly agentFlag: Flag.Flag<Option.Option<string>>
  readonly configPath: (given: Option.Option<string>) => string
  readonly UsageError: typeof UsageError
}

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

const remoteEntry = (config: AgentConfig.Config, name: string, shared: Shared) =>
  Effect.gen(function* () {
    const entry = config.toolsets.find((toolset) => toolset.name === name)
    if (entry === undefined) {
      const names = config.toolsets.map((toolset) => toolset.name).join(", ")
      return yield* new shared.UsageError({ message: `auth: no toolset named "${name}" (toolsets: ${names})` })
    }
    const spec = entry.type === "mcp" ? Toolsets.mcpSpec(entry.transport) : undefined
    if (spec === undefined || !McpSpec.isRemote(spec)) {
      return yield* new shared.UsageError({ message: `auth: ${name} is not a remote MCP server; only those log in` })
    }
    return { entry, spec }
  })

export const make = (shared: Shared) =>
  Command.make(
    "auth",
    {
      name: Argument.String("name").pipe(Argument.withDescription("The remote MCP toolset to log in to")),
      config: shared.configArgument,
      agent: shared.agentFlag,
      logout: Flag.Boolean("logout").pipe(
        Flag.withDescription("Forget the stored login instead"),
        Flag.withDefault(false)
      ),
      noBrowser: Flag.Boolean("no-browser").pipe(
        Flag.withDescription("Only print the login URL (for a browser on another machine)"),
        Flag.withDefault(false)
      )
    },
    Effect.fn("toolvisor.auth")(function* ({ name, config, agent, logout, noBrowser }) {
      const options = Option.match(agent, { onNone: () => ({}), onSome: (a) => ({ agent: a }) })
      const loaded = yield* ConfigLoader.load(shared.configPath(config), options)
      const { entry, spec } = yield* remoteEntry(loaded, name, shared)
      if (logout) {
        const removed = yield* OAuth.logout(spec)
        return yield* Console.log(removed ? `${name}: logged out` : `${name}: no stored login`)
      }
      const outcome = yield* OAuth.login({ name, spec, open: (url) => openBrowser(url, !noBrowser) })
      // A fresh toolset picks the stored tokens up, as a running one does at its next reconnect.
      const toolset = yield* McpToolset.make({ name, spec, policy: entry.policy })
      yield* toolset.start
      const status = yield* toolset.state
      yield* Console.log(
        `${name}: logged in${outcome === "client-credentials" ? " (client credentials)" : ""}; ` +
          `${status.state}, ${status.toolCount ?? 0} tools`
      )
    })
  ).pipe(
    Command.withDescription("Log in to a remote MCP server over OAuth and store the tokens (0600) for later runs"),
    Command.withExamples([
      { command: "toolvisor auth linear agent.yaml", description: "opens the browser, then connects" },
      { command: "toolvisor auth --logout linear agent.yaml", description: "forgets the stored tokens" }
    ])
  )
