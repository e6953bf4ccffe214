/**
 * The stdio transport over in-memory streams: what reaches the server and in how many writes,
 * which lines from the server become messages and which are counted as garbage, and what a line
 * too long or too deep to parse becomes.
 */
import * as NodeStream from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { RawMessage } from "@toolvisor/core"
import { maxLine, NotDelivered, PipeTransport } from "../src/internal/pipeTransport.ts"

/** A transport whose server side is two PassThrough streams: what we write, and what we make it read. */
const open = async () => {
  const fromServer = new NodeStream.PassThrough()
  const toServer = new NodeStream.PassThrough()
  const writes: Array<string> = []
  toServer.on("data", (chunk: Buffer) => writes.push(chunk.toString("utf8")))
  const garbage: Array<{ readonly count: number; readonly last: string }> = []
  const dropped: Array<RawMessage.Refused> = []
  const received: Array<JSONRPCMessage> = []
  const transport = new PipeTransport(fromServer, toServer, {
    garbage: (count, last) => garbage.push({ count, last }),
    dropped: (refused) => dropped.push(refused)
  })
  transport.onmessage = (message) => received.push(message)
  await transport.start()
  /** Lets the stream events of what was written so far run. */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve))
  return { transport, fromServer, writes, garbage, dropped, received, settle }
}

const request = (id: number): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { message: `m${id}` } }
})

describe("PipeTransport", () => {
  it("owes the other side an answer to each request until it is written; a cancelled one is owed nothing", async () => {
    const { transport, fromServer, settle } = await open()
    const state = { answered: false }
    await transport.answered()
    fromServer.write(`${JSON.stringify(request(1))}\n${JSON.stringify(request(2))}\n`)
    await settle()
    const answered = transport.answered().then(() => {
      state.answered = true
    })
    fromServer.write(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } })}\n`
    )
    await settle()
    assert.isFalse(state.answered)
    const written = transport.send({ jsonrpc: "2.0", id: 1, result: { content: [] } })
    assert.isFalse(state.answered, "given before it was written")
    await written
    await answered
    assert.isTrue(state.answered)
  })

  it("abandon answers each open request once with an error; the answer given after it is not written", async () => {
    const { transport, fromServer, writes, settle } = await open()
    fromServer.write(`${JSON.stringify(request(7))}\n${JSON.stringify(request(8))}\n`)
    await settle()
    await transport.send({ jsonrpc: "2.0", id: 8, result: { content: [] } })
    await transport.abandon("stopping")
    await transport.abandon("stopping again")
    await transport.send({ jsonrpc: "2.0", id: 7, result: { content: [] } })
    await transport.answered()
    await settle()
    const answers = writes
      .join("")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line))
    assert.deepStrictEqual(answers, [
      { jsonrpc: "2.0", id: 8, result: { content: [] } },
      { jsonrpc: "2.0", id: 7, error: { code: -32603, message: "stopping" } }
    ])
  })

  it("the first message of a tick is written at once, the others sent during it in one write, in order", async () => {
    const { transport, writes, settle } = await open()
    const sent = [transport.send(request(1)), transport.send(request(2)), transport.send(request(3))]
    await Promise.all(sent)
    await settle()
    const ids = (write: string) =>
      write
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line).id)
    assert.deepStrictEqual(writes.map(ids), [[1], [2, 3]])
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

  it("JSON that is not JSON-RPC is counted and skipped; a malformed JSON-RPC answer fails its request", async () => {
    const { transport, fromServer, received, garbage, settle } = await open()
    const lines = [
      '{"level":"info","msg":"a log line on stdout"}',
      '{"jsonrpc":"2.0","id":null,"result":{}}',
      '{"jsonrpc":"1.0","id":1,"result":{}}',
      "not json at all"
    ]
    const malformed = ['{"jsonrpc":"2.0","id":1,"result":[]}', '{"jsonrpc":"2.0","id":2,"result":{},"extra":true}']
    fromServer.write(
      `${[...lines, ...malformed].join("\n")}\n${JSON.stringify({ jsonrpc: "2.0", id: 7, result: {} })}\n`
    )
    await settle()
    // Skipped, they left their requests to their deadlines.
    assert.deepStrictEqual(
      received.map((message) => [
        "id" in message ? message.id : undefined,
        "error" in message ? message.error.code : 0
      ]),
      [
        [1, -32603],
        [2, -32603],
        [7, 0]
      ]
    )
    // The first at once, the others when the transport closes (or 10 s later): one warning per burst.
    assert.deepStrictEqual(garbage, [{ count: 1, last: lines[0] }])
    await transport.close()
    assert.deepStrictEqual(garbage, [
      { count: 1, last: lines[0] },
      { count: lines.length - 1, last: lines.at(-1) }
    ])
  })

  it("a flood of 100 000 lines that are not JSON-RPC is two reports, with the count, and the answer after it arrives", async () => {
    const { transport, fromServer, received, garbage, settle } = await open()
    fromServer.write(`${"not JSON-RPC\n".repeat(100_000)}${JSON.stringify({ jsonrpc: "2.0", id: 1, result: {} })}\n`)
    await settle()
    assert.deepStrictEqual(received, [{ jsonrpc: "2.0", id: 1, result: {} }])
    await transport.close()
    assert.deepStrictEqual(garbage, [
      { count: 1, last: "not JSON-RPC" },
      { count: 99_999, last: "not JSON-RPC" }
    ])
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

  it("a character split between two reads arrives whole", async () => {
    const { fromServer, received, settle } = await open()
    const bytes = Buffer.from(`${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: "café ☕" } })}\n`)
    const split = bytes.indexOf("☕") + 1
    fromServer.write(bytes.subarray(0, split))
    await settle()
    fromServer.write(bytes.subarray(split))
    await settle()
    assert.deepStrictEqual(received, [{ jsonrpc: "2.0", id: 1, result: { text: "café ☕" } }])
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
    const transport = new PipeTransport(fromServer, toServer, { garbage: () => undefined, dropped: () => undefined })
    const events: Array<string> = []
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => {
        events.push("close")
        resolve()
      }
    })
    await transport.start()
    const sent = transport.send(request(1)).then(
      () => events.push("delivered"),
      (e: unknown) => events.push(e instanceof NotDelivered ? "not delivered" : "other")
    )
    await new Promise<void>((resolve) => process.nextTick(resolve))
    fromServer.end()
    await Promise.all([sent, closed])
    assert.deepStrictEqual(events, ["not delivered", "close"])
  })

  it("an answer longer than the limit, in pieces, fails the request it answers, naming its size; the next line parses", async () => {
    const { fromServer, received, dropped, settle } = await open()
    const text = "z".repeat(1024 * 1024)
    fromServer.write('{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"')
    for (let i = 0; i < 20; i++) fromServer.write(text)
    fromServer.write(`"}]},"id":4}\n${JSON.stringify({ jsonrpc: "2.0", id: 5, result: {} })}\n`)
    await settle()
    assert.strictEqual(received.length, 2)
    const [refused, next] = received
    assert.deepInclude(refused, { jsonrpc: "2.0", id: 4 })
    const error = refused !== undefined && "error" in refused ? refused.error : undefined
    assert.instanceOf(error?.data, RawMessage.Refused)
    assert.include(error?.message, "20.0 MiB, over the limit of 16 MiB")
    assert.deepStrictEqual(next, { jsonrpc: "2.0", id: 5, result: {} })
    assert.deepStrictEqual(dropped, [])
  })

  it("an answer past the limit fails its request while it still arrives, once, when its id came first", async () => {
    const { fromServer, received, settle } = await open()
    const text = "z".repeat(1024 * 1024)
    fromServer.write('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"')
    for (let i = 0; i < 20; i++) fromServer.write(text)
    await settle()
    // No newline yet, maybe never: the request failed only when the line ended, so it waited.
    assert.strictEqual(received.length, 1)
    const error = received[0] !== undefined && "error" in received[0] ? received[0].error : undefined
    assert.deepInclude(received[0], { id: 7 })
    assert.match(error?.message ?? "", /more than 1\d\.\d MiB, over the limit of 16 MiB/)
    fromServer.write(`"}]}}\n${JSON.stringify({ jsonrpc: "2.0", id: 8, result: {} })}\n`)
    await settle()
    assert.deepStrictEqual(received.slice(1), [{ jsonrpc: "2.0", id: 8, result: {} }])
  })

  it("a line of the limit's length, in small pieces, is joined once, not searched again at every piece", async () => {
    const { fromServer, received, settle } = await open()
    const head = '{"jsonrpc":"2.0","id":1,"result":{"text":"'
    const tail = '"}}'
    const piece = "a".repeat(4096)
    const started = performance.now()
    fromServer.write(head)
    for (let written = 0; written + piece.length < maxLine - head.length - tail.length; written += piece.length) {
      fromServer.write(piece)
    }
    fromServer.write(`${tail}\n`)
    await settle()
    const took = performance.now() - started
    assert.strictEqual(received.length, 1)
    assert.deepInclude(received[0], { id: 1 })
    assert.isBelow(took, 3_000)
  })

  it("an answer nested deeper than the limit fails the request it answers; the next line parses", async () => {
    const { fromServer, received, settle } = await open()
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`
    fromServer.write(`{"jsonrpc":"2.0","result":{"deep":${deep}},"id":"d1"}\n{"jsonrpc":"2.0","id":2,"result":{}}\n`)
    await settle()
    assert.strictEqual(received.length, 2)
    const [refused, next] = received
    const error = refused !== undefined && "error" in refused ? refused.error : undefined
    assert.deepInclude(refused, { id: "d1" })
    assert.instanceOf(error?.data, RawMessage.Refused)
    assert.include(error?.message, "nested deeper than 64 levels")
    assert.deepStrictEqual(next, { jsonrpc: "2.0", id: 2, result: {} })
  })

  it("a refused message that answers no request of ours is reported, and a request among them answered with an error", async () => {
    const { fromServer, received, dropped, writes, settle } = await open()
    const deep = `${"[".repeat(1000)}${"]".repeat(1000)}`
    fromServer.write(`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"deep":${deep}}}\n`)
    fromServer.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"deep":${deep}}}\n`)
    await settle()
    await settle()
    assert.deepStrictEqual(received, [])
    assert.strictEqual(dropped.length, 2)
    assert.isTrue(dropped.every((refused) => refused.tooDeep))
    assert.deepStrictEqual(
      writes.map((w) => JSON.parse(w)),
      [
        {
          jsonrpc: "2.0",
          id: 3,
          error: { code: -32600, message: "the request is nested deeper than 64 levels, the limit; it was not handled" }
        }
      ]
    )
  })

  it("a request that is not valid JSON-RPC is answered with an error; one without an id only counted", async () => {
    const { fromServer, received, garbage, writes, settle } = await open()
    fromServer.write(`{"jsonrpc":"2.0","id":"r1","method":5}\n`)
    fromServer.write(`{"jsonrpc":"2.0","method":{}}\n`)
    await settle()
    await settle()
    assert.deepStrictEqual(received, [])
    assert.strictEqual(garbage[0]?.count, 1)
    assert.deepStrictEqual(
      writes.map((w) => JSON.parse(w)),
      [
        {
          jsonrpc: "2.0",
          id: "r1",
          error: { code: -32600, message: "not a valid JSON-RPC request; it was not handled" }
        }
      ]
    )
  })
})
