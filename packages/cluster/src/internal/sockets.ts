/**
 * How cluster members reach each other: Effect's TCP sockets, except that the frames written
 * during one turn of the event loop go out together. Effect writes every RPC frame with its own
 * write(2), and on loopback the kernel delivers the data inside the sender's call, so with 16
 * concurrent callers a quarter of a runner's CPU went into answering each call with its own write
 * (bench:cluster, issue 28). Batched, the frames keep their order and the socket's backpressure:
 * a writer waits until its frame was handed on, and a batch waits for the one before to drain.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Runners from "effect/cluster/Runners"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RpcClient from "effect/rpc/RpcClient"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"

type Frame = Uint8Array | string

interface Batch {
  readonly frames: Array<Frame>
  readonly sent: Deferred.Deferred<void, Socket.SocketError>
}

/**
 * A writer that hands the frames written until the next turn of the event loop to `inner` in one
 * `writeAll` (which Node writes as one). A close waits for the frames written before it.
 */
const batching = (inner: Socket.Writer): Socket.Writer => {
  /** The frames not handed on yet. */
  let pending: Batch | undefined
  /** The batch handed on last, until it has drained. */
  let inFlight: Batch | undefined
  let scheduled = false

  const flush = (): void => {
    scheduled = false
    const batch = pending
    const [first, ...rest] = batch?.frames ?? []
    if (batch === undefined || first === undefined || inFlight !== undefined) return
    pending = undefined
    inFlight = batch
    Effect.runCallback(inner.writeAll([first, ...rest]), {
      onExit: (exit) => {
        inFlight = undefined
        Deferred.doneUnsafe(batch.sent, exit)
        // What was written while this batch drained goes out at once.
        flush()
      }
    })
  }

  const add = (frames: ReadonlyArray<Frame>) =>
    Effect.suspend(() => {
      if (pending === undefined) pending = { frames: [], sent: Deferred.makeUnsafe() }
      pending.frames.push(...frames)
      if (!scheduled && inFlight === undefined) {
        scheduled = true
        setImmediate(flush)
      }
      return Deferred.await(pending.sent)
    })

  /** Until the frames written so far have been handed on (whether or not that succeeded). */
  const settled = Effect.suspend(() => {
    const last = pending ?? inFlight
    return last === undefined ? Effect.void : Effect.exit(Deferred.await(last.sent))
  })

  return {
    write: (chunk) => (Socket.isCloseEvent(chunk) ? Effect.andThen(settled, inner.write(chunk)) : add([chunk])),
    writeAll: add
  }
}

/** `socket`, its frames written in batches. */
export const batched = (socket: Socket.Socket): Socket.Socket =>
  Socket.make({ reader: socket.reader, writer: Effect.map(socket.writer, batching) })

/** How a member opens connections to runners (Effect's `layerClientProtocol`, batched). */
export const clientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> =
  Layer.effect(Runners.RpcClientProtocol)(
    Effect.gen(function* () {
      const serialization = yield* RpcSerialization.RpcSerialization
      return {
        codecFor: serialization.codecFor,
        make: (address) =>
          NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port }).pipe(
            Effect.flatMap((socket) =>
              RpcClient.makeProtocolSocket().pipe(
                Effect.provideService(Socket.Socket, batched(socket)),
                Effect.provideService(RpcSerialization.RpcSerialization, serialization)
              )
            )
          )
      }
    })
  )

/** The runner's listening socket (Effect's `layerSocketServer`), its connections batched. */
export const server = Layer.effect(SocketServer.SocketServer)(
  Effect.map(SocketServer.SocketServer, (inner) =>
    SocketServer.SocketServer.of({
      address: inner.address,
      run: (handler) => inner.run((socket) => handler(batched(socket)))
    })
  )
).pipe(Layer.provide(NodeClusterSocket.layerSocketServer))
