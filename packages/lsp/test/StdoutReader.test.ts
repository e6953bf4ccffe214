/**
 * The bounded LSP reader over in-memory streams: it reads what vscode-jsonrpc's own reader reads
 * (the contract), and where that one buffers without limit — a huge announced length, headers
 * without an end — it keeps a bounded amount and fails the one request concerned.
 */
import * as NodeStream from "node:stream"
import * as NodeV8 from "node:v8"
import * as NodeVm from "node:vm"
import { assert, describe, it } from "@effect/vitest"
import { RawMessage } from "@toolvisor/core"
import * as Rpc from "vscode-jsonrpc/node"
import * as StdoutReader from "../src/internal/stdoutReader.ts"

NodeV8.setFlagsFromString("--expose-gc")
const collect: unknown = NodeVm.runInNewContext("gc")

/**
 * The memory of buffers still held, after full garbage collections (with a turn of the event loop
 * between, for the memory behind collected buffers to be freed).
 */
const heldBuffers = async () => {
  for (let i = 0; i < 3; i++) {
    if (typeof collect === "function") collect()
    await settle()
  }
  return process.memoryUsage().arrayBuffers
}

const frame = (body: string, extraHeader = "") =>
  `Content-Length: ${Buffer.byteLength(body, "utf8")}\r\n${extraHeader}\r\n${body}`

/** Lets the stream events of what was written so far run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * A reader on a PassThrough that the test writes into, and what it reported; `awaiting` the ids
 * of the requests it takes answers to.
 */
const open = (awaiting: ReadonlyArray<Rpc.RequestMessage["id"]> = []) => {
  const stream = new NodeStream.PassThrough()
  const reader = StdoutReader.make(stream, new Set(awaiting))
  const messages: Array<Rpc.Message> = []
  const errors: Array<string> = []
  let closed = false
  reader.onError((error) => errors.push(error.message))
  reader.onClose(() => (closed = true))
  reader.listen((message) => messages.push(message))
  return { stream, reader, messages, errors, closed: () => closed }
}

const errorOf = (message: Rpc.Message | undefined) =>
  message !== undefined && Rpc.Message.isResponse(message) ? message.error : undefined

const idOf = (message: Rpc.Message | undefined) =>
  message !== undefined && Rpc.Message.isResponse(message) ? message.id : undefined

describe("StdoutReader", () => {
  it("reads what vscode-jsonrpc's reader reads, however the bytes are split", async () => {
    const bodies = [
      { jsonrpc: "2.0", id: 1, result: { contents: "naïve café ☕ 𝄞" } },
      { jsonrpc: "2.0", method: "textDocument/publishDiagnostics", params: { uri: "file:///a", diagnostics: [] } },
      { jsonrpc: "2.0", id: "x", error: { code: -32803, message: "no symbol" } },
      { jsonrpc: "2.0", id: 7, method: "workspace/configuration", params: { items: [{ section: "a" }] } },
      { jsonrpc: "2.0", id: 2, result: null }
    ]
    const bytes = Buffer.from(
      bodies
        .map((body, i) =>
          frame(JSON.stringify(body), i % 2 === 0 ? "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" : "")
        )
        .join("")
    )
    const stock = new NodeStream.PassThrough()
    const expected: Array<Rpc.Message> = []
    new Rpc.StreamMessageReader(stock).listen((message) => expected.push(message))
    stock.end(bytes)
    while (expected.length < bodies.length) await settle()
    for (const size of [1, 3, 17, bytes.length]) {
      const { stream, messages, errors } = open([1, "x", 2])
      for (let i = 0; i < bytes.length; i += size) stream.write(bytes.subarray(i, i + size))
      await settle()
      assert.deepStrictEqual(messages, expected)
      assert.deepStrictEqual(errors, [])
    }
  })

  it("a body over the limit fails the request it answers, naming its size; the next message is read", async () => {
    const { stream, messages } = open([3, 4])
    const huge = JSON.stringify({ jsonrpc: "2.0", id: 3, result: { contents: "h".repeat(20 * 1024 * 1024) } })
    const bytes = Buffer.from(frame(huge) + frame(JSON.stringify({ jsonrpc: "2.0", id: 4, result: "next" })))
    for (let i = 0; i < bytes.length; i += 65536) stream.write(bytes.subarray(i, i + 65536))
    await settle()
    assert.strictEqual(messages.length, 2)
    const [refused, next] = messages
    assert.strictEqual(idOf(refused), 3)
    assert.instanceOf(errorOf(refused)?.data, RawMessage.Refused)
    assert.include(errorOf(refused)?.message, "20.0 MiB, over the limit of 16 MiB")
    assert.include(errorOf(refused)?.message, "the request ran")
    assert.deepStrictEqual<unknown>(next, { jsonrpc: "2.0", id: 4, result: "next" })
  })

  it("a body nested deeper than the limit fails the request it answers; the next message is read", async () => {
    const { stream, messages } = open([5, 6])
    const deep = `{"jsonrpc":"2.0","result":${"[".repeat(100_000)}${"]".repeat(100_000)},"id":5}`
    stream.write(frame(deep) + frame(JSON.stringify({ jsonrpc: "2.0", id: 6, result: 1 })))
    await settle()
    assert.strictEqual(idOf(messages[0]), 5)
    assert.include(errorOf(messages[0])?.message, "nested deeper than 64 levels")
    assert.deepStrictEqual<unknown>(messages[1], { jsonrpc: "2.0", id: 6, result: 1 })
  })

  it("a Content-Length of 256 MiB, the most it skips, is not buffered: 128 MiB of its body leave next to nothing held", async () => {
    const { stream, messages, closed } = open([8])
    const before = await heldBuffers()
    stream.write(`Content-Length: ${StdoutReader.maxSkipBytes}\r\n\r\n{"jsonrpc":"2.0","id":8,"result":"`)
    for (let i = 0; i < 128; i++) {
      stream.write(Buffer.alloc(1024 * 1024, "x"))
      await settle()
    }
    const held = (await heldBuffers()) - before
    assert.isBelow(held, 32 * 1024 * 1024)
    assert.deepStrictEqual(messages, [])
    assert.isFalse(closed())
  })

  it("a Content-Length past the most it skips ends the connection at once, saying why", async () => {
    const { stream, reader, messages, errors, closed } = open([9])
    stream.write(`Content-Length: 99999999999\r\n\r\n${JSON.stringify({ jsonrpc: "2.0", id: 9, result: 1 })}`)
    await settle()
    const why = "the server sent a Content-Length of 99999999999 bytes, past the 256 MiB it would skip"
    assert.deepStrictEqual(errors, [why])
    assert.strictEqual(reader.broken, why)
    assert.isTrue(closed())
    assert.deepStrictEqual(messages, [])
  })

  it("a second answer to a request is dropped, and an answer to none: the first answer is the one read", async () => {
    const { stream, messages, errors } = open([11])
    const answer = (id: number, result: string) => frame(JSON.stringify({ jsonrpc: "2.0", id, result }))
    stream.write(answer(11, "first") + answer(11, "second") + answer(12, "never asked"))
    await settle()
    assert.deepStrictEqual<unknown>(messages, [{ jsonrpc: "2.0", id: 11, result: "first" }])
    assert.deepStrictEqual(errors, [
      "dropped an answer to request 11: no request of ours awaits one (answered already, or never sent)",
      "dropped an answer to request 12: no request of ours awaits one (answered already, or never sent)"
    ])
  })

  it("headers without an end are cut off at 8 KiB: the error is reported and the connection ends", async () => {
    const { stream, reader, messages, errors, closed } = open()
    for (let i = 0; i < 1024; i++) stream.write(`X-Flood-${i}: ${"y".repeat(1000)}\r\n`)
    await settle()
    assert.deepStrictEqual(messages, [])
    assert.deepStrictEqual(errors, ["the server sent 8192 bytes of headers without an end"])
    assert.strictEqual(reader.broken, "the server sent 8192 bytes of headers without an end")
    assert.isTrue(closed())
  })

  it("headers without a valid Content-Length end the connection", async () => {
    const { stream, errors, closed } = open()
    stream.write("Content-Length: -5\r\n\r\n{}")
    await settle()
    assert.deepStrictEqual(errors, ["the server sent headers without a valid Content-Length"])
    assert.isTrue(closed())
  })
})
