/**
 * One source of truth for permanence: the errors `reprobe` leaves alone are exactly those
 * `LifecycleError` classifies as permanent, for every tag of the closed error union — so a tag
 * reclassified there is reclassified here, with no second list to forget.
 */
import { assert, describe, it } from "@effect/vitest"
import { LifecycleError, type State } from "@toolvisor/core"
import * as Registry from "../src/internal/registry.ts"

/** Every tag of the lifecycle error union, read from the union itself. */
const tags = LifecycleError.LifecycleError.members.map((member) => member.fields._tag.schema.literal)

const downOn = (state: State.State, tag: string): State.StatusSnapshot => ({
  name: "fs",
  kind: "mcp",
  state,
  since: 0,
  lastError: { tag, message: `fs: ${tag}` },
  restarts: 0,
  attempt: 0,
  toolsVersion: 0
})

describe("reprobe and permanence", () => {
  it("retries a toolset that is down exactly when LifecycleError says its error is not permanent", () => {
    assert.isAbove(tags.length, 5)
    for (const state of ["Failed", "Stopped", "Restarting"] as const) {
      for (const tag of tags) {
        assert.strictEqual(
          Registry.isReprobeable(downOn(state, tag)),
          !LifecycleError.isPermanentTag(tag),
          `${state} on ${tag}`
        )
      }
    }
  })

  it("leaves alone a toolset that is up, or down without an error", () => {
    assert.isFalse(Registry.isReprobeable(downOn("Ready", "ServerCrashed")))
    const { lastError: _, ...clean } = downOn("Stopped", "ServerCrashed")
    assert.isFalse(Registry.isReprobeable(clean))
  })
})
