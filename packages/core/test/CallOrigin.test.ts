import { assert, describe, it } from "@effect/vitest"
import * as CallOrigin from "../src/CallOrigin.ts"

describe("CallOrigin.leaving", () => {
  it("leaves once when the call succeeds, and answers with its value", async () => {
    let left = 0
    const value = await CallOrigin.leaving(Promise.resolve("answer"), () => left++)
    assert.strictEqual(value, "answer")
    assert.strictEqual(left, 1)
  })

  it("leaves once when the call rejects, and rejects with its error", async () => {
    let left = 0
    const error = new Error("the call failed")
    const settled = await CallOrigin.leaving(Promise.reject(error), () => left++).then(
      () => undefined,
      (e: unknown) => e
    )
    assert.strictEqual(settled, error)
    assert.strictEqual(left, 1)
  })

  it("leaves only once the call settles", async () => {
    let left = 0
    let settle: (value: string) => void = () => {}
    const call = CallOrigin.leaving(
      new Promise<string>((resolve) => {
        settle = resolve
      }),
      () => left++
    )
    await Promise.resolve()
    assert.strictEqual(left, 0)
    settle("late")
    assert.strictEqual(await call, "late")
    assert.strictEqual(left, 1)
  })
})
