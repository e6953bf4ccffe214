import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as JsonSchema from "../src/JsonSchema.ts"
import * as ToolGroups from "../src/ToolGroups.ts"
import { issuesOf, parse } from "./helpers.ts"

const withGroups = (groups: string) =>
  `groups:\n${groups}\nagents:\n  root:\n    toolsets: [{ type: mcp, name: git, command: srv }]\n`

describe("groups: named groups of tools", () => {
  it.effect("are read into the config as written, with no warning", () =>
    Effect.gen(function* () {
      const config = yield* parse(withGroups("  review: [git_*, lsp_*]\n  docs: [fetch_url]"))
      assert.deepStrictEqual(config.groups, { review: ["git_*", "lsp_*"], docs: ["fetch_url"] })
      assert.deepStrictEqual(config.warnings ?? [], [], "groups is a field Toolvisor honours")
      assert.isUndefined((yield* parse(withGroups("").replace("groups:\n\n", ""))).groups)
    })
  )

  it.effect("a name that is no URL path segment, an empty group or an empty pattern is an error at its path", () =>
    Effect.gen(function* () {
      const paths = (issues: ReadonlyArray<{ readonly path: string }>) => issues.map((issue) => issue.path)
      assert.deepStrictEqual(paths(yield* issuesOf(withGroups('  "re/view": [git_*]'))), ['groups["re/view"]'])
      assert.deepStrictEqual(paths(yield* issuesOf(withGroups("  review: []"))), ["groups.review"])
      assert.deepStrictEqual(paths(yield* issuesOf(withGroups('  review: [""]'))), ["groups.review[0]"])
      assert.deepStrictEqual(paths(yield* issuesOf(withGroups("  review: git_*"))), ["groups.review"])
      const [named] = yield* issuesOf(withGroups('  "re/view": [git_*]'))
      assert.include(named?.message, "letters, digits, _ and -")
    })
  )

  it("is in the JSON Schema, with the group name's pattern", () => {
    const groups = JSON.parse(JSON.stringify(JsonSchema.make())).$defs.AgentConfig.properties.groups
    assert.include(JSON.stringify(groups), "/mcp/<group>")
    assert.include(JSON.stringify(groups), "A-Za-z0-9")
  })
})

describe("ToolGroups", () => {
  it("matches exposed names with * for any run of characters, anchored at both ends", () => {
    assert.isTrue(ToolGroups.matches("git_*", "git_status"))
    assert.isTrue(ToolGroups.matches("git_*", "git_"))
    assert.isFalse(ToolGroups.matches("git_*", "gitlab_status"))
    assert.isTrue(ToolGroups.matches("*_search", "web_search"))
    assert.isFalse(ToolGroups.matches("*_search", "web_search_more"))
    assert.isTrue(ToolGroups.matches("a*b*c", "axxbyyc"))
    assert.isFalse(ToolGroups.matches("a*b*c", "axxbyy"))
    assert.isTrue(ToolGroups.matches("fetch_url", "fetch_url"))
    assert.isFalse(ToolGroups.matches("fetch_url", "fetch_urls"))
    assert.isTrue(ToolGroups.matches("*", ""))
  })

  it("takes time linear in the name for a hostile name and a many-star pattern", () => {
    const name = "a".repeat(100_000)
    const started = performance.now()
    assert.isFalse(ToolGroups.matches("*a*a*a*a*a*a*a*a*b", name))
    // A regular expression built from the pattern backtracks for minutes here.
    assert.isBelow(performance.now() - started, 5_000)
  })

  it("reports a pattern that matches no tool, with what it probably meant; an unknown group with the known ones", () => {
    const config = { groups: { review: ["gti_*", "lsp_*"], docs: ["fetch_ulr"] } }
    const found = ToolGroups.check(config, ["git_status", "git_diff", "fetch_url", "lsp_hover"])
    assert.deepStrictEqual(found, [
      { group: "review", pattern: "gti_*", near: "git_*" },
      { group: "docs", pattern: "fetch_ulr", near: "fetch_url" }
    ])
    assert.strictEqual(
      ToolGroups.message(found[0] ?? { group: "", pattern: "", near: undefined }),
      'group review: "gti_*" matches no tool (did you mean "git_*"?)'
    )
    assert.strictEqual(
      ToolGroups.unknownMessage(config, "reveiw"),
      'no tool group "reveiw" (did you mean "review"?); the config names docs, review'
    )
    assert.include(ToolGroups.unknownMessage({}, "review"), "names no groups")
    assert.isUndefined(ToolGroups.find(config, "toString"), "a group is the config's own key, not an object's")
  })
})
