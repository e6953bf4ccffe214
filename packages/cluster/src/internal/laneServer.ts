/**
 * A runner's call lane: tool calls straight from a client to the runner hosting the toolset,
 * beside the cluster's RPC. Through effect/cluster a cross-runner call cost ≈ 0.3 ms of CPU
 * between client and runner (envelopes, the entity's mailbox and RPC server on both ends), which
 * held cross-runner throughput to a third of in-process (bench:cluster, issue 28). The lane
 * carries calls only, and hands each to the same `HostedCalls` as the entity's `CallTool`
 * handler, so the fence, the call ledger and `CallOutcome`'s table hold unchanged; a call for a
 * toolset not hosted here is answered `Elsewhere` (nothing ran) and goes through the cluster.
 * It binds the runner's own host and trusts its peers as the cluster's RPC port does.
 */
import * as NodeNet from "node:net"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as LaneWire from "./laneWire.ts"
import type { Call, CallError, ToolResult } from "./toolsetEntity.ts"

/** How a hosted toolset runs a call (`HostedCalls.call`). */
export type Handler = (call: Call) => Effect.Effect<typeof ToolResult.Type, typeof CallError.Type>

export interface Service {
  /** Where clients reach the lane, "host:port". */
  readonly address: string
  /**
   * Takes calls for `entity` while this runner `holds` its shard, until the scope closes; a call
   * that comes once it does not is answered `Elsewhere`, to go where the cluster routes it.
   * Closing the scope stops taking calls, then waits for those running while the shard is still
   * held (a graceful move), and ends the rest.
   */
  readonly host: (entity: string, handler: Handler, holds: () => boolean) => Effect.Effect<void, never, Scope.Scope>
}

export class LaneServer extends Context.Service<LaneServer, Service>()("@toolvisor/cluster/LaneServer") {}

/** The lane cannot listen on its address. */
export class LaneListenError extends Data.TaggedError("LaneListenError")<{
  readonly address: string
  readonly cause: unknown
}> {}

/** A hosted entity, as the lane sees it. */
interface Host {
  readonly run: (call: Call) => Fiber.Fiber<LaneWire.Answer>
  readonly holds: () => boolean
}

/** The most connections a lane holds at once. */
const maxConnections = 1024

/** The host's exit as the answer a client reads. */
const answerOf = (effect: Effect.Effect<typeof ToolResult.Type, typeof CallError.Type>) =>
  Effect.matchCause(effect, {
    onSuccess: (result): LaneWire.Answer => ({ _tag: "Ok", result }),
    onFailure: (cause): LaneWire.Answer => {
      const error = Cause.findErrorOption(cause)
      if (error._tag === "Some") return { _tag: "Error", error: error.value }
      if (Cause.hasInterruptsOnly(cause)) return { _tag: "Interrupted" }
      const defect = Cause.squash(cause)
      return { _tag: "Died", message: defect instanceof Error ? defect.message : "a defect" }
    }
  })

/** The lane on `host` (bound on `listenHost` when given), on `port` (0: any free port). */
export const layer = (options: { readonly host: string; readonly listenHost?: string; readonly port?: number }) =>
  Layer.effect(LaneServer)(
    Effect.gen(function* () {
      const hosts = new Map<string, Host>()
      const sockets = new Set<NodeNet.Socket>()

      const serve = (socket: NodeNet.Socket) => {
        sockets.add(socket)
        const running = new Map<number, Fiber.Fiber<LaneWire.Answer>>()
        const write = LaneWire.batchedWriter(socket)
        const split = LaneWire.lines()
        socket.on("data", (chunk: Buffer) => {
          const got = split(chunk)
          if (got === undefined) return socket.destroy()
          for (const line of got) {
            const request = LaneWire.decodeRequest(line)
            // A peer that does not speak the lane is not answered.
            if (request === undefined || (request._tag === "Call" && running.has(request.i))) return socket.destroy()
            const { i } = request
            if (request._tag === "Cancel") {
              running.get(i)?.interruptUnsafe()
              continue
            }
            const host = hosts.get(request.entity)
            if (host === undefined || !host.holds()) {
              write(LaneWire.encodeAnswer(i, { _tag: "Elsewhere" }))
              continue
            }
            const fiber = host.run(request.payload)
            running.set(i, fiber)
            fiber.addObserver((exit) => {
              running.delete(i)
              write(LaneWire.encodeAnswer(i, Exit.isSuccess(exit) ? exit.value : { _tag: "Interrupted" }))
            })
          }
        })
        socket.on("error", () => socket.destroy())
        socket.on("close", () => {
          sockets.delete(socket)
          for (const fiber of running.values()) fiber.interruptUnsafe()
        })
      }

      const server = NodeNet.createServer({ noDelay: true }, serve)
      // A member keeps one connection per process: more than this is no member.
      server.maxConnections = maxConnections
      const bind = options.listenHost ?? options.host
      yield* Effect.acquireRelease(
        Effect.callback<void, LaneListenError>((resume) => {
          const failed = (cause: Error) => resume(Effect.fail(new LaneListenError({ address: bind, cause })))
          server.once("error", failed)
          try {
            server.listen(options.port ?? 0, bind, () => {
              server.off("error", failed)
              // Once listening, a failed accept costs that connection only.
              server.on("error", () => undefined)
              resume(Effect.void)
            })
          } catch (error) {
            // A port out of range throws at once.
            failed(error instanceof Error ? error : new Error(String(error)))
          }
        }),
        () =>
          Effect.callback<void>((resume) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => resume(Effect.void))
          })
      )
      const bound = server.address()
      const port = typeof bound === "object" && bound !== null ? bound.port : (options.port ?? 0)

      return LaneServer.of({
        address: `${options.host}:${port}`,
        host: (entity, handler, holds) =>
          Effect.gen(function* () {
            const calls = yield* FiberSet.make<LaneWire.Answer>()
            const runIn = yield* FiberSet.runtime(calls)<never>()
            const host: Host = { run: (call) => runIn(answerOf(handler(call))), holds }
            hosts.set(entity, host)
            yield* Effect.addFinalizer(() =>
              Effect.suspend(() => {
                if (hosts.get(entity) === host) hosts.delete(entity)
                return holds() ? FiberSet.awaitEmpty(calls) : Effect.void
              })
            )
          })
      })
    })
  )
