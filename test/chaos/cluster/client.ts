/**
 * The cluster soak's client, a process the soak can SIGKILL: Effect callers reach the toolsets
 * through a `ClusterRegistry` (a client-only member of the cluster) and one caller through the
 * gateway over MCP. Every answer is appended to the outcomes file as one JSON line, with the
 * class its error type puts it in (`CallOutcome`), so the soak can hold each answer against
 * the journals. SIGTERM lets the calls in flight finish, then exits.
 *
 *   node --conditions=@toolvisor/source client.ts POSTGRES CONFIG SETTINGS OUTCOMES GATEWAY_URL TAG SEED
 */
import * as NodeFs from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ConfigLoader } from "@toolvisor/config"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as CallOutcome from "../../../packages/cluster/src/CallOutcome.ts"
import * as ClusterClient from "../../../packages/cluster/src/ClusterClient.ts"
import * as ClusterRegistry from "../../../packages/cluster/src/ClusterRegistry.ts"
import { seededRandom } from "../../bench/stats.ts"
import { toolsets } from "./setup.ts"

export interface Outcome {
  readonly via: "effect" | "effect-read" | "gateway"
  readonly toolset: string
  readonly line: string
  readonly outcome: "ok" | CallOutcome.Outcome
  readonly tag?: string
  readonly message?: string
  readonly at: number
  readonly ms: number
}

const [postgres = "", config = "", settings = "", outcomes = "", gatewayUrl = "", tag = "c", seedText = "1"] =
  process.argv.slice(2)
const random = seededRandom(Number(seedText))
let stopping = false
process.on("SIGTERM", () => {
  stopping = true
})

const record = (o: Outcome) => NodeFs.appendFileSync(outcomes, `${JSON.stringify(o)}\n`)
const pick = () => toolsets[Math.floor(random() * toolsets.length)] ?? "j0"
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One Effect caller: journaling calls, and now and then a read-only one. */
const effectCaller = (registry: ToolsetRegistry.Registry, n: number) =>
  Effect.gen(function* () {
    for (let seq = 0; !stopping; seq++) {
      const toolset = pick()
      const line = `${tag}-e${n}-${seq}`
      const at = Date.now()
      const exit = yield* Effect.exit(registry.callTool(`${toolset}_append`, { line, ms: Math.floor(random() * 200) }))
      record({ via: "effect", toolset, line, at, ms: Date.now() - at, ...judge(exit) })
      if (seq % 3 === 0) {
        const readAt = Date.now()
        const read = yield* Effect.exit(registry.callTool(`${toolset}_echo`, { message: line }))
        record({ via: "effect-read", toolset, line, at: readAt, ms: Date.now() - readAt, ...judge(read) })
      }
      yield* Effect.sleep("30 millis")
    }
  })

const judge = (exit: Exit.Exit<unknown, CallOutcome.CallError>) => {
  if (Exit.isSuccess(exit)) return { outcome: "ok" as const }
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag === "None") return { outcome: "MayHaveRun" as const, tag: "Defect", message: Cause.pretty(exit.cause) }
  return { outcome: CallOutcome.outcome(error.value), tag: error.value._tag, message: error.value.message }
}

/** The gateway's answer to a failed call reads `Tag: message`; the tag is the type. */
const fromText = (text: string) => {
  const tagged = /^(\w+): /.exec(text)?.[1]
  const known = tagged !== undefined && tagged in CallOutcome.table
  return {
    outcome: known ? CallOutcome.table[tagged as keyof typeof CallOutcome.table] : ("MayHaveRun" as const),
    tag: tagged ?? "Unknown",
    message: text.slice(0, 300)
  }
}

/** Whether the gateway refused the connection: nothing was sent, so the call did not run. */
const refused = (cause: unknown): boolean =>
  cause instanceof Error && (("code" in cause && cause.code === "ECONNREFUSED") || refused(cause.cause))

/**
 * The MCP caller through the gateway, reconnecting whenever the gateway goes away. A call whose
 * answer stream breaks (the gateway was SIGKILLed mid-call) ends then, as lost: the SDK reports
 * the break to `onerror` but would leave the request waiting for its own timeout.
 */
const gatewayCaller = async () => {
  let client: Client | undefined
  let inFlight: AbortController | undefined
  for (let seq = 0; !stopping; seq++) {
    if (client === undefined) {
      const fresh = new Client({ name: "cluster-soak", version: "1.0.0" })
      fresh.onerror = (error) => inFlight?.abort(error)
      try {
        await fresh.connect(new StreamableHTTPClientTransport(new URL(gatewayUrl)))
        client = fresh
      } catch {
        await pause(250)
        continue
      }
    }
    const toolset = pick()
    const line = `${tag}-g-${seq}`
    const at = Date.now()
    inFlight = new AbortController()
    try {
      const result = await client.callTool(
        { name: `${toolset}_append`, arguments: { line, ms: Math.floor(random() * 200) } },
        undefined,
        { timeout: 60_000, signal: inFlight.signal }
      )
      const text = JSON.stringify((result.content as ReadonlyArray<{ text?: string }>)[0]?.text ?? "")
      record({
        via: "gateway",
        toolset,
        line,
        at,
        ms: Date.now() - at,
        ...(result.isError === true ? fromText(JSON.parse(text)) : { outcome: "ok" as const })
      })
    } catch (cause) {
      // Refused before anything was sent: not run. Anything else: the answer was lost on the way.
      const notSent = refused(cause)
      record({
        via: "gateway",
        toolset,
        line,
        at,
        ms: Date.now() - at,
        outcome: notSent ? "NotRun" : "MayHaveRun",
        tag: notSent ? "GatewayDown" : "GatewayLost",
        message: String(cause).slice(0, 300)
      })
      await client.close().catch(() => undefined)
      client = undefined
    } finally {
      inFlight = undefined
    }
    await pause(30)
  }
  await client?.close().catch(() => undefined)
}

const program = Effect.gen(function* () {
  const loaded = yield* ConfigLoader.load(config)
  // The store may be down right now (the soak restarts it): keep trying for a minute.
  const context = yield* Layer.build(ClusterClient.layer({ postgres, settingsFile: settings })).pipe(
    Effect.retry({ schedule: Schedule.spaced("1 second"), times: 60 })
  )
  const registry = yield* ClusterRegistry.make(loaded).pipe(Effect.provideContext(context))
  yield* registry.start.pipe(Effect.ignore)
  const gateway = Effect.promise(gatewayCaller)
  yield* Effect.all([effectCaller(registry, 0), effectCaller(registry, 1), gateway], { concurrency: "unbounded" })
}).pipe(Effect.scoped)

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) console.error(Cause.pretty(exit.cause))
  process.exit(Exit.isSuccess(exit) ? 0 : 1)
})
