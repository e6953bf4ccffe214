/**
 * A member's side of the call lanes (`LaneServer`): one connection per runner, opened on first
 * use and shared by every call to that runner. A call the lane could not hand to a host comes
 * back `Redeliver`; the caller then sends it through the cluster with the same call id, which
 * the next host judges as the cluster's own re-delivery (see `HostedCalls`).
 */
import * as NodeNet from "node:net"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LaneWire from "./laneWire.ts"
import type { Call } from "./toolsetEntity.ts"

/**
 * How a call over a lane ended: the host's answer, or `Redeliver` when no host ran it to the end
 * here (none of the toolset, the connection lost, the host gone mid-call).
 */
export type Outcome =
  | Extract<LaneWire.Answer, { readonly _tag: "Ok" | "Error" | "Died" }>
  | { readonly _tag: "Redeliver"; readonly why: string }

export interface Service {
  /**
   * Sends a call for `entity` to the lane at `address` ("host:port"); interrupting it cancels it
   * there. `onSilent` registers what to run when that runner stops answering the toolset's
   * watch (paused or dead): the call is then cancelled there and handed back for re-delivery.
   */
  readonly call: (
    address: string,
    entity: string,
    call: Call,
    onSilent: (silent: () => void) => () => void
  ) => Effect.Effect<Outcome>
  /** Calls answered over a lane, and calls it handed back for re-delivery, so far. */
  readonly stats: () => { readonly answered: number; readonly redelivered: number }
}

export class LaneClient extends Context.Service<LaneClient, Service>()("@toolvisor/cluster/LaneClient") {}

type Pending = (outcome: Outcome) => void

/** How long a connection to a lane may take (the cluster's own sockets allow as long). */
const connectWithin = 1_000
/** How long calls skip a lane that could not be reached, before it is tried again. */
const retryAfter = 10_000

interface Connection {
  readonly send: (line: string) => void
  readonly pending: Map<number, Pending>
  next: number
}

/** The lane client, its connections closed with the scope. */
export const layer = Layer.effect(LaneClient)(
  Effect.gen(function* () {
    const connections = new Map<string, Connection>()
    const sockets = new Set<NodeNet.Socket>()
    let answered = 0
    let redelivered = 0
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const socket of sockets) socket.destroy()
      })
    )

    /** Lanes that could not be reached, until when calls to them go through the cluster at once. */
    const unreachable = new Map<string, number>()

    const open = (address: string): Connection => {
      const colon = address.lastIndexOf(":")
      const socket = NodeNet.connect({
        host: address.slice(0, colon),
        port: Number(address.slice(colon + 1)),
        noDelay: true
      })
      sockets.add(socket)
      const connection: Connection = { send: LaneWire.batchedWriter(socket), pending: new Map(), next: 0 }
      connections.set(address, connection)
      const split = LaneWire.lines()
      // A lane that does not answer a connect (a firewall dropping it) must not hold calls for
      // the minutes TCP would try.
      let connected = false
      const connecting = setTimeout(
        () => end(`no connection to the lane at ${address} within ${connectWithin} ms`),
        connectWithin
      )
      socket.once("connect", () => {
        connected = true
        clearTimeout(connecting)
      })
      const end = (why: string) => {
        clearTimeout(connecting)
        if (!connected) unreachable.set(address, Date.now() + retryAfter)
        socket.destroy()
        if (connections.get(address) === connection) connections.delete(address)
        const left = [...connection.pending.values()]
        connection.pending.clear()
        for (const settle of left) settle({ _tag: "Redeliver", why })
      }
      socket.on("data", (chunk: Buffer) => {
        const got = split(chunk)
        if (got === undefined) return end(`the lane at ${address} sent a frame over ${LaneWire.maxFrame} bytes`)
        for (const line of got) {
          const frame = LaneWire.decodeAnswer(line)
          if (frame === undefined) return end(`the lane at ${address} sent something else than an answer`)
          const settle = connection.pending.get(frame.i)
          connection.pending.delete(frame.i)
          const answer = frame.answer
          settle?.(
            answer._tag === "Elsewhere"
              ? { _tag: "Redeliver", why: `the runner at ${address} does not host it now` }
              : answer._tag === "Interrupted"
                ? { _tag: "Redeliver", why: `the runner at ${address} let it go while the call ran` }
                : answer
          )
        }
      })
      socket.on("error", (error) => end(`the lane at ${address} failed: ${error.message}`))
      socket.on("close", () => {
        sockets.delete(socket)
        end(`the lane at ${address} closed`)
      })
      return connection
    }

    return LaneClient.of({
      call: (address, entity, call, onSilent) =>
        Effect.callback<Outcome>((resume) => {
          const settle = (outcome: Outcome) => {
            if (outcome._tag === "Redeliver") redelivered++
            else answered++
            resume(Effect.succeed(outcome))
          }
          if ((unreachable.get(address) ?? 0) > Date.now()) {
            return settle({ _tag: "Redeliver", why: `the lane at ${address} was unreachable just now` })
          }
          const connection = connections.get(address) ?? open(address)
          const i = connection.next++
          const frame = LaneWire.encodeRequest({ _tag: "Call", i, entity, payload: call })
          if (LaneWire.tooLarge(frame))
            return settle({ _tag: "Redeliver", why: "the call is too large for a lane frame" })
          /** Takes the call back from the runner; false once it was answered. */
          const cancel = () => {
            if (!connection.pending.delete(i)) return false
            unwatch()
            connection.send(LaneWire.encodeRequest({ _tag: "Cancel", i }))
            return true
          }
          connection.pending.set(i, (outcome) => {
            unwatch()
            settle(outcome)
          })
          const unwatch = onSilent(() => {
            if (cancel()) settle({ _tag: "Redeliver", why: `the runner at ${address} went silent` })
          })
          connection.send(frame)
          return Effect.sync(cancel)
        }),
      stats: () => ({ answered, redelivered })
    })
  })
)
