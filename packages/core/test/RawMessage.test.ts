import { assert, describe, it } from "@effect/vitest"
import * as RawMessage from "../src/RawMessage.ts"

const bytes = (text: string) => Buffer.from(text, "utf8")

/** The same scan fed one byte at a time: pieces may split anything, a key, an id, an escape. */
const byteByByte = (text: string) => {
  const scan = new RawMessage.Scan()
  const all = bytes(text)
  for (let i = 0; i < all.length; i++) scan.feed(all, i, i + 1)
  return scan.found()
}

const cases: ReadonlyArray<readonly [string, string, RawMessage.Found]> = [
  ["id first", '{"jsonrpc":"2.0","id":7,"result":{}}', { id: 7, isRequest: false }],
  [
    "id last, after a result",
    '{"result":{"id":1,"a":[{"id":2}]},"jsonrpc":"2.0","id":42}',
    { id: 42, isRequest: false }
  ],
  [
    "a string id with escapes",
    '{"id":"a\\"b\\u00e9","error":{"code":1,"message":"x"}}',
    { id: 'a"bé', isRequest: false }
  ],
  ["a negative id, spaces around", '{ "id" : -3 , "result" : null }', { id: -3, isRequest: false }],
  ["a request from the peer", '{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage"}', { id: 5, isRequest: true }],
  ["a key spelled with an escape", '{"\\u0069d":9,"result":{}}', { id: 9, isRequest: false }],
  ["a null id", '{"id":null,"error":{}}', { id: undefined, isRequest: false }],
  ["an id only in a string value", '{"result":"\\"id\\":3","x":"id"}', { id: undefined, isRequest: false }],
  ["not an object", '["id",1]', { id: undefined, isRequest: false }],
  ["a key that is not id but starts like it", '{"idx":1,"result":{}}', { id: undefined, isRequest: false }]
]

describe("RawMessage", () => {
  for (const [name, text, expected] of cases) {
    it(`${name}: found whole and byte by byte`, () => {
      assert.deepStrictEqual(RawMessage.scan(bytes(text)), expected)
      assert.deepStrictEqual(byteByByte(text), expected)
      assert.deepStrictEqual(byteByByte(text), found(JSON.parse(text)))
    })
  }

  it("a message 100 000 levels deep and megabytes long is scanned, its id after it all", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`
    const text = `{"result":{"deep":${deep},"text":"${"é".repeat(1_000_000)}"},"id":"last"}`
    assert.deepStrictEqual(RawMessage.scan(bytes(text)), { id: "last", isRequest: false })
  })

  it("isTooDeep: deeper than 64 levels, whatever brackets are in strings or side by side", () => {
    const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
    assert.isFalse(RawMessage.isTooDeep(`{"result":${nested(63)}}`))
    assert.isTrue(RawMessage.isTooDeep(`{"result":${nested(64)}}`))
    assert.isFalse(RawMessage.isTooDeep(JSON.stringify({ items: Array.from({ length: 1000 }, (_, i) => ({ i })) })))
    assert.isFalse(RawMessage.isTooDeep(JSON.stringify({ text: "{[".repeat(1000) })))
    assert.isTrue(RawMessage.isTooDeep(`{"a":${'{"b":'.repeat(100)}1${"}".repeat(100)}}`))
  })

  it("an id too long to be ours is not kept", () => {
    assert.deepStrictEqual(RawMessage.scan(bytes(`{"id":"${"x".repeat(1000)}","result":{}}`)), {
      id: undefined,
      isRequest: false
    })
  })
})

/** What `JSON.parse` says the same message is: the scan must agree with it. */
const found = (message: unknown): RawMessage.Found => {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return { id: undefined, isRequest: false }
  }
  const id = "id" in message ? message.id : undefined
  return { id: typeof id === "string" || typeof id === "number" ? id : undefined, isRequest: "method" in message }
}
