import * as NodeNet from "node:net"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Socket from "effect/socket/Socket"
import { batched } from "../src/internal/sockets.ts"

/** A socket whose writer records what it is handed, each hand-off as one entry. */
const recording = (fail = false) => {
  const handed: Array<ReadonlyArray<string>> = []
  const record = (frames: ReadonlyArray<Uint8Array | string | Socket.CloseEvent>) =>
    Effect.suspend(() => {
      handed.push(frames.map((f) => (Socket.isCloseEvent(f) ? `close ${f.code}` : String(f))))
      return fail
        ? Effect.fail(new Socket.SocketError({ reason: new Socket.SocketWriteError({ cause: new Error("reset") }) }))
        : Effect.void
    })
  const socket = Socket.make({
    reader: Effect.never,
    writer: Effect.succeed({ write: (chunk) => record([chunk]), writeAll: record })
  })
  return { handed, socket: batched(socket) }
}

describe("Sockets", () => {
  it.effect("frames written in one turn are handed on together, in order, and a close after them", () =>
    Effect.gen(function* () {
      const { handed, socket } = recording()
      const writer = yield* socket.writer
      yield* Effect.forEach(
        Array.from({ length: 16 }, (_, i) => `frame ${i}`),
        (frame) => writer.write(frame),
        { concurrency: "unbounded", discard: true }
      )
      yield* writer.write("next turn")
      yield* Effect.forEach([writer.write("last"), writer.write(new Socket.CloseEvent(1000))], (w) => w, {
        concurrency: "unbounded",
        discard: true
      })
      assert.deepStrictEqual(handed, [
        Array.from({ length: 16 }, (_, i) => `frame ${i}`),
        ["next turn"],
        ["last"],
        ["close 1000"]
      ])
    }).pipe(Effect.scoped)
  )

  it.effect("a batch that cannot be written fails every writer in it", () =>
    Effect.gen(function* () {
      const { socket } = recording(true)
      const writer = yield* socket.writer
      const results = yield* Effect.forEach(["a", "b", "c"], (frame) => Effect.result(writer.write(frame)), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(
        results.map((r) => r._tag),
        ["Failure", "Failure", "Failure"]
      )
    }).pipe(Effect.scoped)
  )

  it.live("over TCP, frames from concurrent writers arrive whole and in order", () =>
    Effect.gen(function* () {
      let received = ""
      const server = NodeNet.createServer((conn) => conn.on("data", (chunk) => (received += chunk.toString())))
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const address = server.address()
      if (address === null || typeof address === "string") return assert.fail("no TCP address")
      const socket = batched(yield* NodeSocket.makeNet({ host: "127.0.0.1", port: address.port }))
      yield* Effect.forkScoped(socket.reader)
      const writer = yield* socket.writer
      const frames = Array.from({ length: 200 }, (_, i) => `${i}\n`)
      yield* Effect.forEach(frames, (frame) => writer.write(frame), { concurrency: "unbounded", discard: true })
      const expected = frames.join("")
      while (received.length < expected.length) yield* Effect.sleep("10 millis")
      assert.strictEqual(received, expected)
    }).pipe(Effect.scoped)
  )
})
