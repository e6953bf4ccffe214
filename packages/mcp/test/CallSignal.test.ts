/**
 * The signal a fiber's request carries behaves as an `AbortController`'s does where the SDK and
 * `TaskCall` read it; the cancellation of real calls through it is pinned in `McpToolset.test.ts`
 * and `TaskCall.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { CallSignal } from "../src/internal/callSignal.ts"

describe("CallSignal", () => {
  it("tells each abort listener once, with an abort event, and then reads as aborted", () => {
    const signal = new CallSignal()
    const heard: Array<string> = []
    const listener = (event: Event) => heard.push(`fn:${event.type}`)
    signal.addEventListener("abort", listener)
    signal.addEventListener("abort", listener)
    signal.addEventListener("abort", { handleEvent: (event) => heard.push(`object:${event.type}`) })
    signal.onabort = (event) => heard.push(`onabort:${event.type}`)
    signal.throwIfAborted()
    signal.abort()
    signal.abort()
    assert.deepStrictEqual(heard, ["onabort:abort", "fn:abort", "object:abort"])
    assert.isTrue(signal.aborted)
    assert.strictEqual((signal.reason as DOMException).name, "AbortError")
    assert.throws(() => signal.throwIfAborted(), "aborted")
  })

  it("keeps a reason it is given; removed listeners and those added once aborted are not called", () => {
    const signal = new CallSignal()
    const heard: Array<string> = []
    const removed = () => heard.push("removed")
    signal.addEventListener("abort", removed)
    signal.removeEventListener("abort", removed)
    signal.addEventListener("other", () => heard.push("other"))
    const reason = new Error("stop")
    signal.abort(reason)
    signal.addEventListener("abort", () => heard.push("late"))
    assert.deepStrictEqual(heard, [])
    assert.strictEqual(signal.reason, reason)
  })
})
