/**
 * A language server as a supervised toolset: a Supervisor over `LspConnector`, a catalogue of
 * `lsp_*` tools filtered by what the server supports, and tool calls bounded by `call_timeout`.
 * Before the first connect the catalogue is the full one (the capabilities are not known yet);
 * after it, only the tools the server can answer, updated when it registers providers later.
 *
 * The session is self-bounded: its requests carry the call's `Deadline` themselves and fail as
 * soon as the connection is lost, so `Supervisor.use` runs a call on it directly, with no race
 * against the session's end and no sleeping deadline fiber.
 */
import { LifecycleError, Policy, Redaction, State, Supervisor, Toolset } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Capabilities from "./internal/capabilities.ts"
import * as ToolHandlers from "./internal/toolHandlers.ts"
import * as ToolResults from "./internal/toolResults.ts"
import * as LspConnector from "./LspConnector.ts"
import type * as LspSpec from "./LspSpec.ts"
import * as LspTools from "./LspTools.ts"

/** What an LSP toolset is built from. */
export interface Options {
  readonly name: string
  readonly spec: LspSpec.LspSpec
  readonly policy?: Policy.Policy
}

/** A language server as a toolset, with its supervisor and spec. */
export interface LspToolset extends Toolset.Toolset {
  readonly spec: LspSpec.LspSpec
  readonly supervisor: Supervisor.Supervisor<LspConnector.LspSession>
}

/**
 * Probes a language server unless the user configured otherwise: a wedged server (alive, but no
 * longer reading) is otherwise only noticed by the requests that time out on it.
 */
export const defaultHealth: Policy.Health = {
  interval: Duration.seconds(30),
  timeout: Duration.seconds(10),
  failures: 2
}

/** The toolset's policy with the LSP health check (`defaultHealth`) when the config sets none. */
export const effectivePolicy = (policy: Policy.Policy): Policy.Policy => ({
  ...policy,
  health: policy.health ?? defaultHealth
})

/**
 * How long a handshake waits for the server to finish what `initialized` set off: half the
 * `startup_timeout`, so a server still busy then is Ready (and answers, if incompletely) instead
 * of failing its start.
 */
export const settleWithin = (policy: Policy.Policy): number =>
  policy.startupTimeout === undefined ? LspConnector.defaultSettle : Duration.toMillis(policy.startupTimeout) / 2

/** A supervised LSP toolset, in the current scope (closing it stops the server); nothing starts until `start`. */
export const make = (options: Options): Effect.Effect<LspToolset, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name, spec } = options
    const policy = effectivePolicy(options.policy ?? Policy.defaults)
    const supervisor = yield* Supervisor.make({
      name,
      kind: "lsp",
      policy,
      connector: LspConnector.make({ name, spec, settleWithin: settleWithin(policy) })
    })

    /** The capabilities of the last session, kept across disconnects for the incomplete listing. */
    let lastCapabilities: Capabilities.Capabilities | undefined
    const catalogue = () => LspTools.available(lastCapabilities).map(LspTools.toTool)

    const tools: Effect.Effect<Toolset.Listing<Toolset.Tool>, LifecycleError.LifecycleError> = Effect.gen(function* () {
      const status = yield* supervisor.state
      if (!State.isUsable(status.state)) {
        const reason = LifecycleError.notStarted(name, `not ready (${status.state})`)
        return { complete: false as const, items: catalogue(), reason }
      }
      return yield* supervisor.use((session) =>
        Effect.sync(() => {
          lastCapabilities = session.capabilities
          return { complete: true as const, items: catalogue() }
        })
      )
    }).pipe(
      Effect.catchTag("NotStarted", (reason) =>
        Effect.succeed({ complete: false as const, items: catalogue(), reason })
      )
    )

    type CallResult = Effect.Effect<Toolset.ToolResult, Toolset.ToolError | LifecycleError.LifecycleError>

    /**
     * What a handler's failure is to the agent: a bad file or edit, or a path outside the
     * workspace, is a result it reads and acts on, a server's error answer a typed failure; the
     * session's own errors pass as they are.
     */
    const recover = (tool: string, error: ToolHandlers.HandlerError): CallResult => {
      switch (error._tag) {
        case "FileProblem":
          return Effect.succeed(ToolResults.failure(error.message))
        case "InvalidPath":
        case "OutsideWorkspace":
          return Effect.succeed(ToolResults.refusal(error))
        case "EditFailed":
        case "MalformedEdit":
          return Effect.succeed(ToolResults.failure(`${tool}: ${error.message}`))
        case "MalformedAnswer":
          return Effect.fail(
            new Toolset.ToolCallFailed({
              toolset: name,
              tool,
              message: `${name}/${tool}: ${Redaction.redact(error.message)}`,
              cause: error.cause
            })
          )
        case "ResponseFailed":
          return Effect.fail(
            new Toolset.ToolCallFailed({
              toolset: name,
              tool,
              message: `${name}/${tool}: ${error.method} failed: ${Redaction.redact(error.message)}`,
              code: error.code
            })
          )
        default:
          return Effect.fail(error)
      }
    }

    const callTool = (tool: string, args: { readonly [key: string]: unknown }): CallResult => {
      const handler = ToolHandlers.handlers.get(tool)
      if (handler === undefined) {
        return Effect.fail(
          new Toolset.ToolNotFound({
            toolset: name,
            tool,
            message: `${name}: no tool named "${tool}" (it has ${LspTools.all.map((d) => d.name).join(", ")})`
          })
        )
      }
      return supervisor.use((session): CallResult => {
        lastCapabilities = session.capabilities
        const provider = handler.definition.provider
        if (provider !== undefined && !session.capabilities.supports(provider)) {
          return Effect.fail(
            new Toolset.ToolNotFound({
              toolset: name,
              tool,
              message: `${name}: the server does not support ${tool} (no ${provider})`
            })
          )
        }
        return Effect.catch(handler.call(session, args), (error) => recover(tool, error))
      })
    }

    return {
      name,
      kind: "lsp",
      spec,
      supervisor,
      ...Toolset.supervisedBy(supervisor),
      tools,
      callTool
    } satisfies LspToolset
  })
