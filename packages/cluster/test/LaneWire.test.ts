import { LifecycleError } from "@toolvisor/core"
import { assert, describe, it } from "vitest"
import * as LaneWire from "../src/internal/laneWire.ts"

const call = { tool: "echo", args: { message: "hé" }, callId: "c1", sentAt: 1 }

describe("the call lane's frames", () => {
  it("lines come whole however the bytes are cut, a character split across chunks included", () => {
    const bytes = Buffer.from(`${LaneWire.encodeRequest({ _tag: "Call", i: 0, entity: "e", payload: call })}{"i":1,`)
    const push = LaneWire.lines()
    const cut = bytes.indexOf(Buffer.from("é")) + 1
    assert.deepStrictEqual(push(bytes.subarray(0, cut)), [])
    const [line] = push(bytes.subarray(cut)) ?? []
    assert.deepStrictEqual(LaneWire.decodeRequest(line ?? ""), { _tag: "Call", i: 0, entity: "e", payload: call })
    assert.deepStrictEqual(push(Buffer.from(`"cancel":true}\n`))?.map(LaneWire.decodeRequest), [
      { _tag: "Cancel", i: 1 }
    ])
  })

  it("a line past 16 MiB ends the stream, in one chunk or held across many", () => {
    assert.isUndefined(LaneWire.lines()(Buffer.alloc(LaneWire.maxFrame + 2, 120)))
    const push = LaneWire.lines()
    const chunk = Buffer.alloc(LaneWire.maxFrame / 4, 120)
    for (let i = 0; i < 4; i++) assert.deepStrictEqual(push(chunk), [])
    assert.isUndefined(push(Buffer.from("x\n")))
  })

  it("anything but a request is refused", () => {
    for (const line of [
      "",
      "not json",
      "[1]",
      `{"i":"0","e":"e","p":{}}`,
      `{"i":-1,"cancel":true}`,
      `{"i":1.5,"cancel":true}`,
      `{"i":0,"e":7,"p":${JSON.stringify(call)}}`,
      `{"i":0,"e":"e","p":{"tool":"echo","args":[],"callId":"c","sentAt":1}}`,
      `{"i":0,"e":"e"}`
    ]) {
      assert.isUndefined(LaneWire.decodeRequest(line), line)
    }
  })

  it("answers round-trip, a typed error as its class; one that does not match its schema reads as 'died'", () => {
    const error = new LifecycleError.NotStarted({ toolset: "t", message: "t: not started" })
    const answers: ReadonlyArray<LaneWire.Answer> = [
      { _tag: "Ok", result: { content: [{ type: "text", text: "hi" }], isError: false } },
      { _tag: "Error", error },
      { _tag: "Elsewhere" },
      { _tag: "Interrupted" },
      { _tag: "Died", message: "boom" }
    ]
    for (const answer of answers) {
      const decoded = LaneWire.decodeAnswer(LaneWire.encodeAnswer(3, answer).trimEnd())
      assert.strictEqual(decoded?.i, 3)
      assert.deepStrictEqual(decoded?.answer, answer)
    }
    const back = LaneWire.decodeAnswer(LaneWire.encodeAnswer(0, { _tag: "Error", error }))
    assert.instanceOf(back?.answer._tag === "Error" ? back.answer.error : undefined, LifecycleError.NotStarted)
    assert.deepStrictEqual(LaneWire.decodeAnswer(`{"i":2,"ok":{"content":"no"}}`)?.answer._tag, "Died")
    assert.deepStrictEqual(LaneWire.decodeAnswer(`{"i":2,"error":{"_tag":"Nope"}}`)?.answer._tag, "Died")
    assert.isUndefined(LaneWire.decodeAnswer(`{"ok":{}}`))
  })
})
