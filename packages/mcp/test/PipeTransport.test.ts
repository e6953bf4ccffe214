/**
 * The stdio transport over in-memory streams: what reaches the server and in how many writes,
 * and which lines from the server become messages and which are reported as garbage.
 */
import * as NodeStream from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { NotDelivered, PipeTransport } from "../src/internal/pipeTransport.ts"

/** A transport whose server side is two PassThrough streams: what we write, and what we make it read. */
const open = async () => {
  const fromServer = new NodeStream.PassThrough()
  const toServer = new NodeStream.PassThrough()
  const writes: Array<string> = []
  toServer.on("data", (chunk: Buffer) => writes.push(chunk.toString("utf8")))
  const garbage: Array<string> = []
  const received: Array<JSONRPCMessage> = []
  const transport = new PipeTransport(fromServer, toServer, (line) => garbage.push(line))
  transport.onmessage = (message) => received.push(message)
  await transport.start()
  /** Lets the stream events of what was written so far run. */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve))
  return { transport, fromServer, writes, garbage, received, settle }
}

const request = (id: number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { message: `m${id}` } }
})

describe("PipeTransport", () => {
  it("messages sent in one tick reach the server in one write, in the order they were sent", async () => {
    const { transport, writes, settle } = await open()
    await Promise.all([transport.send(request(1)), transport.send(request(2)), transport.send(request(3))])
    await settle()
    assert.strictEqual(writes.length, 1)
    const lines = writes
      .join("")
      .split("\n")
      .filter((line) => line !== "")
    assert.deepStrictEqual(
      lines.map((line) => JSON.parse(line).id),
      [1, 2, 3]
    )
  })

  it("a lone message is written before the next I/O, and each later tick gets a write of its own", async () => {
    const { transport, writes, settle } = await open()
    await transport.send(request(1))
    await settle()
    await transport.send(request(2))
    await settle()
    assert.deepStrictEqual(
      writes.map((w) => JSON.parse(w).id),
      [1, 2]
    )
  })

  it("send after close rejects, and nothing is written", async () => {
    const { transport, writes, settle } = await open()
    await transport.close()
    const sent = await transport.send(request(1)).then(
      () => "sent",
      (error: unknown) => (error instanceof Error ? error.message : String(error))
    )
    await settle()
    assert.include(sent, "closed")
    assert.strictEqual(writes.length, 0)
  })

  it("a plain result, a result with _meta, an error and a notification are all delivered as they were sent", async () => {
    const { fromServer, received, garbage, settle } = await open()
    const messages: Array<JSONRPCMessage> = [
      { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "x" }] } },
      { jsonrpc: "2.0", id: "two", result: { content: [], _meta: { trace: "abc" } } },
      { jsonrpc: "2.0", id: 3, error: { code: -32602, message: "bad arguments" } },
      { jsonrpc: "2.0", method: "notifications/tools/list_changed" }
    ]
    fromServer.write(messages.map((m) => `${JSON.stringify(m)}\n`).join(""))
    await settle()
    assert.deepStrictEqual(received, messages)
    assert.deepStrictEqual(garbage, [])
  })

  it("JSON that is not JSON-RPC is reported and skipped, including what only looks like a result", async () => {
    const { fromServer, received, garbage, settle } = await open()
    const lines = [
      '{"level":"info","msg":"a log line on stdout"}',
      '{"jsonrpc":"2.0","id":null,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":[]}',
      '{"jsonrpc":"1.0","id":1,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":{},"extra":true}',
      "not json at all"
    ]
    fromServer.write(`${lines.join("\n")}\n${JSON.stringify({ jsonrpc: "2.0", id: 7, result: {} })}\n`)
    await settle()
    assert.deepStrictEqual(garbage, lines)
    assert.deepStrictEqual(received, [{ jsonrpc: "2.0", id: 7, result: {} }])
  })

  it("a message split across reads and CRLF line ends arrive whole", async () => {
    const { fromServer, received, settle } = await open()
    const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [] } })
    fromServer.write(line.slice(0, 10))
    await settle()
    assert.deepStrictEqual(received, [])
    fromServer.write(`${line.slice(10)}\r\n\r\n`)
    await settle()
    assert.deepStrictEqual(received, [{ jsonrpc: "2.0", id: 1, result: { content: [] } }])
  })

  it("a message sent once the server's output has ended is NotDelivered, and never written", async () => {
    const { transport, fromServer, writes, settle } = await open()
    fromServer.end()
    await settle()
    const error = await transport.send(request(1)).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.instanceOf(error, NotDelivered)
    await settle()
    assert.deepStrictEqual(writes, [])
  })

  it("a write that fails is NotDelivered, and the close is reported only after the request learned it", async () => {
    const fromServer = new NodeStream.PassThrough()
    const toServer = new NodeStream.Writable({
      write: (_chunk, _encoding, done) => setImmediate(() => done(new Error("EPIPE")))
    })
    toServer.on("error", () => undefined)
    const transport = new PipeTransport(fromServer, toServer, () => undefined)
    const events: Array<string> = []
    transport.onclose = () => events.push("close")
    await transport.start()
    const sent = transport.send(request(1)).then(
      () => events.push("delivered"),
      (e: unknown) => events.push(e instanceof NotDelivered ? "not delivered" : "other")
    )
    await new Promise<void>((resolve) => process.nextTick(resolve))
    fromServer.end()
    await sent
    await new Promise<void>((resolve) => setTimeout(resolve, 10))
    assert.deepStrictEqual(events, ["not delivered", "close"])
  })
})
