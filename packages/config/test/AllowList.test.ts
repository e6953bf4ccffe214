import { assert, describe, it } from "@effect/vitest"
import * as AllowList from "../src/AllowList.ts"

describe("AllowList", () => {
  const offered = ["fs_read_file", "fs_write_file"]

  it("reports the entries that name no offered tool, and nothing when all match", () => {
    assert.deepStrictEqual(AllowList.unmatched(["fs_read_file", "fs_read"], offered), ["fs_read"])
    assert.deepStrictEqual(AllowList.unmatched(["fs_read_file"], offered), [])
  })

  it("no allow-list matches everything", () => {
    assert.deepStrictEqual(AllowList.unmatched(undefined, []), [])
    assert.isUndefined(AllowList.check({ name: "fs", tools: undefined }, offered))
  })

  it("the message names the toolset, each entry, and what is offered", () => {
    const found = AllowList.check({ name: "fs", tools: ["fs_read", "fs_list"] }, offered)
    assert.isDefined(found)
    if (found === undefined) return
    assert.strictEqual(
      AllowList.message(found),
      'fs: tools allow-list entries "fs_read", "fs_list" match no tool it offers (offered: fs_read_file, fs_write_file)'
    )
  })
})
