/**
 * The protocol of a toolset hosted on a cluster runner: one entity per toolset definition, its
 * messages as schema'd RPCs. Everything here crosses the wire or sits in the message table, so
 * it is plain data: the resolved config travels as a `Spec`, the policy as its `lifecycle` block.
 */
import { AgentConfig } from "@toolvisor/config"
import { LifecycleError, Policy, State, Toolset } from "@toolvisor/core"
import type { Toolsets } from "@toolvisor/runtime"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as Entity from "effect/cluster/Entity"
import * as Duration from "effect/Duration"
import * as Rpc from "effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import * as Sealing from "../Sealing.ts"

const Env = Schema.Record(Schema.String, Schema.String)

const remoteExtras = {
  oauth: Schema.optionalKey(AgentConfig.OAuth),
  headersHelper: Schema.optionalKey(Schema.Struct({ command: Schema.String, cwd: Schema.String }))
}

/** How to reach the server, in the clear. */
export const Reach = Schema.Union([
  Schema.TaggedStruct("stdio", {
    command: Schema.String,
    args: Schema.Array(Schema.String),
    env: Env,
    cwd: Schema.optionalKey(Schema.String),
    /** Read on the runner, when the server starts there, as it would be read locally. */
    envFile: Schema.optionalKey(Schema.String)
  }),
  // `oauth` travels (sealed with the transport when it holds secrets from the environment); the
  // tokens do not: a runner logs in from its own token store. A `headersHelper` runs on the runner
  // at each connect, as a stdio server's command does.
  Schema.TaggedStruct("http", { url: Schema.String, headers: Env, ...remoteExtras }),
  Schema.TaggedStruct("sse", { url: Schema.String, headers: Env, ...remoteExtras })
])
export type Reach = typeof Reach.Type

/** How to reach the server, and the secrets in it, sealed with the cluster key. */
export const Sealed = Schema.TaggedStruct("sealed", { data: Schema.String })

const SealedPart = Schema.fromJsonString(Schema.Struct({ transport: Reach, secrets: Schema.Array(Schema.String) }))

/** What a runner needs to build a toolset: a resolved config entry, as data. */
export const Spec = Schema.Struct({
  name: Schema.String,
  identity: Schema.String,
  signature: Schema.String,
  type: Schema.Literals(["mcp", "lsp"]),
  transport: Schema.Union([Reach, Sealed]),
  fileTypes: Schema.Array(Schema.String),
  /** LSP only: where its tools may reach besides the working directory (absent: nowhere else). */
  allowOutsideWorkspace: Schema.optionalKey(Schema.Union([Schema.Literal(true), Schema.Array(Schema.String)])),
  lifecycle: Policy.Lifecycle,
  /** MCP only: the level asked of the server on every connect. */
  logLevel: Schema.optionalKey(AgentConfig.LogLevel),
  /** Every value from the environment, to mask in status; empty when sealed (they are inside). */
  secrets: Schema.Array(Schema.String)
})
export type Spec = typeof Spec.Type

/** A spec whose transport is in the clear. */
export type Opened = Spec & { readonly transport: Reach }

/**
 * The spec of a config entry. With a cluster key, an entry that holds secrets has its transport
 * and secrets sealed, so that the persisted start request does not hold them in the clear, and
 * its signature keyed, so that it does not confirm a guess of them either.
 */
export const toSpec = (config: AgentConfig.ToolsetConfig, key?: Sealing.Key): Spec => {
  const transport = reachOf(config.transport)
  const spec = {
    name: config.name,
    identity: config.identity,
    signature: config.signature,
    type: config.type,
    transport,
    fileTypes: config.fileTypes,
    ...(config.allowOutsideWorkspace === undefined ? {} : { allowOutsideWorkspace: config.allowOutsideWorkspace }),
    lifecycle: config.lifecycle,
    ...(config.logLevel === undefined ? {} : { logLevel: config.logLevel }),
    secrets: config.secrets
  }
  if (key === undefined || config.secrets.length === 0) return spec
  const sealed = Sealing.seal(key, Schema.encodeSync(SealedPart)({ transport, secrets: config.secrets }))
  return {
    ...spec,
    signature: Sealing.digest(key, config.signature),
    transport: { _tag: "sealed", data: sealed },
    secrets: []
  }
}

const reachOf = (transport: AgentConfig.Transport): Reach => {
  if (transport._tag === "stdio") {
    const { cwd, envFile, ...rest } = transport
    return { ...rest, ...(cwd === undefined ? {} : { cwd }), ...(envFile === undefined ? {} : { envFile }) }
  }
  const { headersHelper, ...rest } = transport
  return headersHelper === undefined ? rest : { ...rest, headersHelper }
}

/** The spec in the clear, or why it cannot be opened here. */
export const open = (spec: Spec, key: Sealing.Key | undefined): Opened | string => {
  const transport = spec.transport
  if (transport._tag !== "sealed") return { ...spec, transport }
  if (key === undefined) {
    return `${spec.name}: its config is sealed, and this runner has no cluster key (set ${Sealing.envKey} as on the client)`
  }
  const plaintext = Sealing.open(key, transport.data)
  if (plaintext === undefined) {
    return `${spec.name}: its config is sealed with another cluster key than this runner's ${Sealing.envKey}`
  }
  return { ...spec, ...Schema.decodeSync(SealedPart)(plaintext) }
}

/** The spec as the runtime builds it, with the runner's own variables added to a process's environment. */
export const buildable = (spec: Opened, extraEnv: Readonly<Record<string, string>>): Toolsets.Buildable => ({
  name: spec.name,
  type: spec.type,
  transport:
    spec.transport._tag === "stdio"
      ? {
          _tag: "stdio",
          command: spec.transport.command,
          args: spec.transport.args,
          env: { ...spec.transport.env, ...extraEnv },
          cwd: spec.transport.cwd,
          envFile: spec.transport.envFile
        }
      : spec.transport,
  fileTypes: spec.fileTypes,
  allowOutsideWorkspace: spec.allowOutsideWorkspace,
  policy: Policy.fromLifecycle(spec.lifecycle),
  logLevel: spec.logLevel,
  secrets: spec.secrets
})

/**
 * The entity id of a definition: identical definitions (same identity and signature) share one
 * entity, so two clients of one config share one server; a changed definition is a new entity.
 */
export const entityId = (spec: Pick<Spec, "identity" | "signature">): string =>
  `${spec.identity}@${spec.signature.slice(0, 16)}`

/** JSON objects from servers, passed through as they are (they are JSON on the wire already). */
const Json = Schema.Record(Schema.String, Schema.Unknown)

/** A tool as the server listed it, in MCP's shape. */
export const Tool = Schema.Struct({
  name: Schema.String,
  title: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  inputSchema: Json,
  outputSchema: Schema.optional(Json),
  annotations: Schema.optional(
    Schema.Struct({
      title: Schema.optional(Schema.String),
      readOnlyHint: Schema.optional(Schema.Boolean),
      destructiveHint: Schema.optional(Schema.Boolean),
      idempotentHint: Schema.optional(Schema.Boolean),
      openWorldHint: Schema.optional(Schema.Boolean)
    })
  ),
  _meta: Schema.optional(Json)
})

/** The tools of a toolset; incomplete, with why, when it is not started. */
export const Listing = Schema.Union([
  Schema.Struct({ complete: Schema.Literal(true), items: Schema.Array(Tool) }),
  Schema.Struct({ complete: Schema.Literal(false), items: Schema.Array(Tool), reason: LifecycleError.NotStarted })
])

/** A tool's answer, in MCP's shape. */
export const ToolResult = Schema.Struct({
  content: Schema.Array(Schema.StructWithRest(Schema.Struct({ type: Schema.String }), [Json])),
  structuredContent: Schema.optional(Json),
  isError: Schema.optional(Schema.Boolean),
  _meta: Schema.optional(Json)
})

/**
 * One status reading, tagged with where it was taken: `incarnation` names the entity's life on
 * one runner and `seq` orders readings within it, so a watcher that re-subscribes after a move
 * can drop what it has already seen. No snapshot means the entity has not been given a spec yet.
 */
export const Observed = Schema.Struct({
  snapshot: Schema.optionalKey(State.StatusSnapshot),
  runner: Schema.String,
  /** Where the runner takes calls for it directly ("host:port", see `LaneServer`), if it does. */
  lane: Schema.optionalKey(Schema.String),
  incarnation: Schema.String,
  seq: Schema.Int
})
export type Observed = typeof Observed.Type

/**
 * "This toolset should run": persisted, and answered only by `Stop`, so the cluster replays it on
 * whichever runner owns the toolset next — after a crash, a graceful move or a full restart.
 * Interruptible on termination, or a graceful move would wait for it to finish.
 */
export const Ensure = Rpc.make("Ensure", { payload: { spec: Spec } })
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.InterruptOnTermination, true)

/** Builds the toolset if needed and starts it, answering with its start's outcome. */
export const Start = Rpc.make("Start", { payload: { spec: Spec }, error: LifecycleError.LifecycleError })

/** Stops the toolset and answers every open `Ensure`, so it is not brought back. */
export const Stop = Rpc.make("Stop")

/** Restarts the toolset; fails with why it could not start again. */
export const Restart = Rpc.make("Restart", { error: LifecycleError.LifecycleError })

/** The latest status reading: a client reads it after a start or stop, so the board shows their outcome at once. */
export const Status = Rpc.make("Status", { success: Observed })

/**
 * How often a status watch repeats the current reading when nothing changes. A watch whose runner
 * was SIGKILLed neither ends nor fails (the cluster client waits for the new owner), so silence
 * is how a watcher learns that its toolset is moving.
 */
export const heartbeat = Duration.seconds(1)

/** Status readings (and heartbeats) until the entity goes away; `RemoteToolset` re-subscribes. */
export const WatchStatus = Rpc.make("WatchStatus", { success: Observed, stream: true }).annotate(
  ClusterSchema.InterruptOnTermination,
  true
)

/** The toolset's tools. */
export const ListTools = Rpc.make("ListTools", { success: Listing, error: LifecycleError.LifecycleError })

/** Every error a tool call can fail with: the tool's own and the toolset's lifecycle errors. */
export const CallError = Schema.Union([Toolset.ToolError, LifecycleError.LifecycleError])

/**
 * A tool call. `callId` is the caller's id for it, the same on every delivery (the cluster
 * re-delivers a call whose runner died, and a client re-delivers through the cluster a call its
 * lane lost): the call ledger's key, and what a `CallOutcomeUnknown` names. `sentAt` (the
 * caller's clock, epoch ms) tells a runner that took the toolset over whether an earlier delivery
 * could have gone elsewhere.
 */
export const CallPayload = Schema.Struct({
  tool: Schema.String,
  args: Json,
  callId: Schema.String,
  sentAt: Schema.Number
})
export type Call = typeof CallPayload.Type

/** A tool call (`CallPayload`), through the cluster; failures are classified as `CallOutcome` says. */
export const CallTool = Rpc.make("CallTool", {
  payload: CallPayload,
  success: ToolResult,
  error: CallError
})

/** The `Toolset` entity: one per toolset definition (`entityId`), hosted by `ToolsetHost`. */
export const ToolsetEntity = Entity.make("Toolset", [
  Ensure,
  Start,
  Stop,
  Restart,
  Status,
  WatchStatus,
  ListTools,
  CallTool
])
