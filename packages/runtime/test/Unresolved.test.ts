// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} is the config syntax under test, not a template
/**
 * A toolset whose config needs a variable the environment lacks cannot start, and runs nothing;
 * it holds back no other toolset, unless it is required.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import * as Effect from "effect/Effect"
import * as Unresolved from "../src/Unresolved.ts"
import { config, fixtureEntry, open, statusOf, text } from "./helpers.ts"

/** A fixture entry whose env needs `TOKEN`, unset; it would write its pid to `pidFile` if it ever ran. */
const needsToken = (name: string, pidFile: string, required = false): AgentConfig.ToolsetConfig => {
  const entry = fixtureEntry(name, {
    prefix: name,
    env: { FIXTURE_PID_FILE: pidFile, TOKEN: "${TOKEN}" },
    lifecycle: { required }
  })
  return {
    ...entry,
    unresolved: [
      {
        path: `mcpServers.${name}.env.TOKEN`,
        variable: "TOKEN",
        message: "Environment variable TOKEN is not set (write ${TOKEN:-default} for a default)"
      }
    ]
  }
}

const pidFileIn = () => NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-unres-")), "pid")

describe("Unresolved toolsets", () => {
  it.live("fail alone, from the start, naming the variable and where it is needed; the others start and serve", () =>
    Effect.gen(function* () {
      const pidFile = pidFileIn()
      const { registry, close } = yield* open(
        config([fixtureEntry("fine", { prefix: "fine" }), needsToken("gh", pidFile)])
      )
      yield* registry.start
      const fine = yield* statusOf(registry, "fine")
      assert.strictEqual(fine?.state, "Ready")
      const gh = yield* statusOf(registry, "gh")
      assert.strictEqual(gh?.state, "Failed")
      assert.strictEqual(gh?.kind, "mcp-stdio")
      assert.deepStrictEqual(gh?.lastError, {
        tag: "NotStarted",
        message:
          "gh: cannot start: Environment variable TOKEN is not set (write ${TOKEN:-default} for a default); needed at mcpServers.gh.env.TOKEN"
      })
      assert.include(text(yield* registry.callTool("fine_echo", { message: "still here" })), "still here")
      const catalog = yield* registry.catalog()
      assert.deepStrictEqual(
        catalog.missing.map((m) => m.toolset),
        ["gh"]
      )
      // Starting it again fails the same way, with the variables in a typed cause.
      const again = yield* Effect.flip(registry.restartToolset("gh"))
      assert.strictEqual(again._tag, "NotStarted")
      const cause = again._tag === "NotStarted" ? again.cause : undefined
      assert.instanceOf(cause, Unresolved.MissingVariables)
      assert.deepStrictEqual(cause instanceof Unresolved.MissingVariables ? cause.variables : [], ["TOKEN"])
      yield* close
      assert.isFalse(NodeFs.existsSync(pidFile), "the unresolved server ran")
    })
  )

  it.live("a required one fails the start, naming it, as any required toolset that does not start", () =>
    Effect.gen(function* () {
      const pidFile = pidFileIn()
      const { registry, close } = yield* open(config([fixtureEntry("fine"), needsToken("gh", pidFile, true)]))
      const failed = yield* Effect.flip(registry.start)
      assert.strictEqual(failed._tag, "StartFailed")
      assert.include(failed.message, "gh: NotStarted: gh: cannot start: Environment variable TOKEN is not set")
      yield* close
      assert.isFalse(NodeFs.existsSync(pidFile), "the unresolved server ran")
    })
  )
})
