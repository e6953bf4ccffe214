/**
 * The lane client against scripted peers on real loopback sockets: what it hands back for
 * re-delivery, and what it sends when a call is taken back.
 */
import * as NodeNet from "node:net"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as LaneClient from "../src/internal/laneClient.ts"
import * as LaneWire from "../src/internal/laneWire.ts"

const call = { tool: "echo", args: { message: "x" }, callId: "c", sentAt: 1 }
const noMoves = () => () => undefined

/** A peer on a free loopback port that hands each line it reads to `script`; closed with the scope. */
const peer = (script: (line: string, socket: NodeNet.Socket) => void) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const sockets = new Set<NodeNet.Socket>()
    /** Connections made to it, and how many of them ended. */
    const connections = { made: 0, ended: 0 }
    const server = NodeNet.createServer((socket) => {
      sockets.add(socket)
      connections.made++
      socket.on("close", () => connections.ended++)
      const split = LaneWire.lines()
      socket.on("data", (chunk: Buffer) => {
        for (const line of split(chunk) ?? []) {
          lines.push(line)
          script(line, socket)
        }
      })
      socket.on("error", () => undefined)
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => {
          const bound = server.address()
          resume(Effect.succeed(typeof bound === "object" && bound !== null ? bound.port : 0))
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return { address: `127.0.0.1:${port}`, lines, connections }
  })

const client = Effect.service(LaneClient.LaneClient)
const withClient = <A, E>(effect: Effect.Effect<A, E, LaneClient.LaneClient | Scope.Scope>) =>
  Effect.scoped(Effect.flatMap(Layer.build(LaneClient.layer), (context) => Effect.provideContext(effect, context)))

describe("the lane client", () => {
  it.live("answers come back to their calls; 'elsewhere' and 'interrupted' are handed back for re-delivery", () =>
    withClient(
      Effect.gen(function* () {
        const lanes = yield* client
        const { address } = yield* peer((line, socket) => {
          const request = LaneWire.decodeRequest(line)
          if (request?._tag !== "Call") return
          const { i } = request
          const reply: LaneWire.Answer =
            request.payload.tool === "away"
              ? { _tag: "Elsewhere" }
              : request.payload.tool === "cut"
                ? { _tag: "Interrupted" }
                : { _tag: "Ok", result: { content: [{ type: "text", text: `${i}` }] } }
          socket.write(LaneWire.encodeAnswer(i, reply))
        })
        const outcomes = yield* Effect.forEach(
          ["echo", "away", "cut", "echo"],
          (tool) => lanes.call(address, "e", { ...call, tool }, noMoves),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          outcomes.map((o) => o._tag),
          ["Ok", "Redeliver", "Redeliver", "Ok"]
        )
        assert.deepStrictEqual(lanes.stats(), { answered: 2, redelivered: 2 })
      })
    )
  )

  it.live("a lane that closes or garbles its stream hands back every call waiting on it", () =>
    withClient(
      Effect.gen(function* () {
        const lanes = yield* client
        for (const misbehave of [
          (socket: NodeNet.Socket) => socket.destroy(),
          (socket: NodeNet.Socket) => socket.write("not an answer\n")
        ]) {
          let seen = 0
          const { address } = yield* peer((_, socket) => {
            if (++seen === 3) misbehave(socket)
          })
          const outcomes = yield* Effect.forEach([1, 2, 3], () => lanes.call(address, "e", call, noMoves), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(
            outcomes.map((o) => o._tag),
            ["Redeliver", "Redeliver", "Redeliver"]
          )
        }
      })
    )
  )

  it.live("a call taken back (interrupted, or its runner gone silent) is cancelled on the lane", () =>
    withClient(
      Effect.gen(function* () {
        const lanes = yield* client
        const { address, lines } = yield* peer(() => undefined)
        const sent = (n: number) =>
          Effect.sync(() => lines.length).pipe(
            Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (count) => count >= n }),
            Effect.timeout("5 seconds")
          )
        const interrupted = yield* Effect.forkChild(lanes.call(address, "e", call, noMoves), { startImmediately: true })
        yield* sent(1)
        yield* Fiber.interrupt(interrupted)
        yield* sent(2)
        let silent: () => void = () => undefined
        const waiting = yield* Effect.forkChild(
          lanes.call(address, "e", call, (f) => {
            silent = f
            return () => undefined
          }),
          { startImmediately: true }
        )
        yield* sent(3)
        silent()
        const outcome = yield* Fiber.join(waiting)
        assert.strictEqual(outcome._tag, "Redeliver")
        yield* sent(4)
        assert.deepStrictEqual(lines.map(LaneWire.decodeRequest), [
          { _tag: "Call", i: 0, entity: "e", payload: call },
          { _tag: "Cancel", i: 0 },
          { _tag: "Call", i: 1, entity: "e", payload: call },
          { _tag: "Cancel", i: 1 }
        ])
      })
    )
  )

  it.live("one connection per lane, shared by its calls, and closed with the client's scope", () =>
    Effect.gen(function* () {
      const { address, connections } = yield* peer((line, socket) => {
        const request = LaneWire.decodeRequest(line)
        if (request?._tag === "Call") socket.write(LaneWire.encodeAnswer(request.i, { _tag: "Elsewhere" }))
      })
      yield* withClient(
        Effect.flatMap(client, (lanes) =>
          Effect.forEach([1, 2, 3, 4, 5], () => lanes.call(address, "e", call, noMoves), { concurrency: 2 })
        )
      )
      yield* Effect.sync(() => connections.ended).pipe(
        Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (ended) => ended === 1 }),
        Effect.timeout("5 seconds")
      )
      assert.deepStrictEqual(connections, { made: 1, ended: 1 })
    }).pipe(Effect.scoped)
  )

  it.live("a lane that cannot be reached hands its call back, and the next ones at once for a while", () =>
    withClient(
      Effect.gen(function* () {
        const lanes = yield* client
        // A port nothing listens on: the connection is refused.
        const closed = yield* Effect.callback<number>((resume) => {
          const server = NodeNet.createServer().listen(0, "127.0.0.1", () => {
            const bound = server.address()
            server.close(() => resume(Effect.succeed(typeof bound === "object" && bound ? bound.port : 1)))
          })
        })
        const address = `127.0.0.1:${closed}`
        const first = yield* lanes.call(address, "e", call, noMoves)
        assert.strictEqual(first._tag, "Redeliver")
        const started = Date.now()
        const next = yield* lanes.call(address, "e", call, noMoves)
        assert.deepStrictEqual(next, { _tag: "Redeliver", why: `the lane at ${address} was unreachable just now` })
        assert.isBelow(Date.now() - started, 50)
      })
    )
  )
})
