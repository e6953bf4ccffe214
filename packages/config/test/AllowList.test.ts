import { assert, describe, it } from "@effect/vitest"
import * as AllowList from "../src/AllowList.ts"

describe("AllowList", () => {
  const offered = ["fs_read_file", "fs_write_file"]

  it("an entry names a tool by the server's own name or by the prefixed one the agent sees", () => {
    assert.isTrue(AllowList.allows(["read_file"], "fs", "read_file"))
    assert.isTrue(AllowList.allows(["fs_read_file"], "fs", "read_file"))
    assert.isFalse(AllowList.allows(["fs_read_file"], "fs", "write_file"))
    assert.isTrue(AllowList.allows(["read_file"], undefined, "read_file"))
    assert.isTrue(AllowList.allows(undefined, "fs", "anything"))
    assert.isUndefined(AllowList.check({ name: "fs", prefix: "fs", tools: ["read_file", "fs_write_file"] }, offered))
  })

  it("reports the entries that name no offered tool, and nothing when all match", () => {
    const found = AllowList.check({ name: "fs", prefix: "fs", tools: ["fs_read_file", "fs_read"] }, offered)
    assert.deepStrictEqual(found?.entries, [{ entry: "fs_read", near: undefined }])
    assert.isUndefined(AllowList.check({ name: "fs", prefix: "fs", tools: ["fs_read_file"] }, offered))
  })

  it("no allow-list matches everything", () => {
    assert.isUndefined(AllowList.check({ name: "fs", tools: undefined }, offered))
  })

  it("the message names the toolset, each entry with the closest name, and the server's tools", () => {
    const found = AllowList.check({ name: "fs", prefix: "fs", tools: ["fs_list", "read_fil"] }, offered)
    assert.isDefined(found)
    if (found === undefined) return
    assert.strictEqual(
      AllowList.message(found),
      'fs: tools allow-list entries "fs_list", "read_fil" (did you mean "read_file"?) match no tool it offers (its tools: read_file, write_file)'
    )
  })
})
