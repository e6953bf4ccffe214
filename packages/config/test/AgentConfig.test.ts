import { assert, describe, it } from "@effect/vitest"
import { Policy } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as AgentConfig from "../src/AgentConfig.ts"
import * as JsonSchema from "../src/JsonSchema.ts"
import { agentYaml, issuesOf, parse, toolset } from "./helpers.ts"

/** The resolved policy of a single `type: mcp` toolset with this lifecycle block (YAML flow map). */
const policyOf = (lifecycle: string | undefined) =>
  parse(
    agentYaml(`      - { type: mcp, command: server${lifecycle === undefined ? "" : `, lifecycle: ${lifecycle}`} }\n`)
  ).pipe(Effect.map((config) => config.toolsets[0]!))

const millis = (duration: Duration.Duration | undefined) =>
  duration === undefined ? undefined : Duration.toMillis(duration)

describe("AgentConfig.DurationInput", () => {
  const decode = Schema.decodeUnknownSync(AgentConfig.DurationInput)

  it("accepts 500ms, 30s, 1m, 1h, 0 and integer seconds", () => {
    assert.deepStrictEqual(
      ["500ms", "30s", "1m", "1h", "0", 30, 0].map((input) => Duration.toMillis(decode(input))),
      [500, 30_000, 60_000, 3_600_000, 0, 30_000, 0]
    )
  })

  it.effect("rejects other spellings and negative or fractional numbers, with the path", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        agentYaml(`      - type: mcp
        command: x
        lifecycle: { startup_timeout: "30 sec", call_timeout: -5, backoff: { initial: 1.5 } }
`)
      )
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        [
          "agents.root.toolsets[0].lifecycle.backoff.initial",
          "agents.root.toolsets[0].lifecycle.startup_timeout",
          "agents.root.toolsets[0].lifecycle.call_timeout"
        ]
      )
      assert.include(issues[1]?.message, "Expected a duration like")
      assert.include(issues[2]?.message, "or a whole number of seconds")
    })
  )
})

describe("AgentConfig: the lifecycle block (anchor §3.4 at config level)", () => {
  it.effect("no block: lifecycle {} and the resilient defaults", () =>
    Effect.gen(function* () {
      const toolset = yield* policyOf(undefined)
      assert.deepStrictEqual(toolset.lifecycle, {})
      assert.deepStrictEqual(toolset.policy, Policy.defaults)
      assert.strictEqual(toolset.policy.restart, "on_failure")
      assert.strictEqual(toolset.policy.maxRestarts, 5)
      assert.isFalse(toolset.policy.required)
    })
  )

  it.effect("strict: no restart, required, 30s startup timeout", () =>
    Effect.gen(function* () {
      const { policy } = yield* policyOf("{ profile: strict }")
      assert.strictEqual(policy.restart, "never")
      assert.isTrue(policy.required)
      assert.strictEqual(millis(policy.startupTimeout), 30_000)
    })
  )

  it.effect("best-effort: no restart, not required", () =>
    Effect.gen(function* () {
      const { policy } = yield* policyOf("{ profile: best-effort }")
      assert.strictEqual(policy.restart, "never")
      assert.isFalse(policy.required)
    })
  )

  it.effect("explicit overrides are all applied", () =>
    Effect.gen(function* () {
      const { policy } = yield* policyOf(
        "{ restart: always, max_restarts: 12, backoff: { initial: 500ms, max: 10s, multiplier: 1.5, jitter: 0.3 } }"
      )
      assert.strictEqual(policy.restart, "always")
      assert.strictEqual(policy.maxRestarts, 12)
      assert.strictEqual(millis(policy.backoff.initial), 500)
      assert.strictEqual(millis(policy.backoff.max), 10_000)
      assert.strictEqual(policy.backoff.multiplier, 1.5)
      assert.strictEqual(policy.backoff.jitter, 0.3)
    })
  )

  it.effect("partial overrides keep the profile's other defaults", () =>
    Effect.gen(function* () {
      const { policy } = yield* policyOf("{ max_restarts: 7 }")
      assert.deepStrictEqual(policy, { ...Policy.defaults, maxRestarts: 7 })
    })
  )

  it.effect("explicit required and timeouts win over the profile; integer seconds count", () =>
    Effect.gen(function* () {
      const { policy } = yield* policyOf("{ profile: strict, required: false, startup_timeout: 5s, call_timeout: 45 }")
      assert.isFalse(policy.required)
      assert.strictEqual(millis(policy.startupTimeout), 5_000)
      assert.strictEqual(millis(policy.callTimeout), 45_000)
    })
  )

  it.effect("max_restarts -1 is unlimited; below is rejected", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* policyOf("{ max_restarts: -1 }")).policy.maxRestarts, -1)
      const issues = yield* issuesOf(agentYaml(`      - { type: mcp, command: x, lifecycle: { max_restarts: -2 } }\n`))
      assert.deepStrictEqual(issues, [
        { path: "agents.root.toolsets[0].lifecycle.max_restarts", message: "Expected -1 (unlimited) or more" }
      ])
    })
  )

  it.effect("a bad profile, restart or jitter is an issue naming the field", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        agentYaml(
          `      - { type: lsp, command: x, lifecycle: { profile: eager, restart: sometimes, backoff: { jitter: 2 } } }\n`
        )
      )
      assert.deepStrictEqual(
        issues.map((issue) => issue.path.replace("agents.root.toolsets[0].lifecycle.", "")),
        ["profile", "restart", "backoff.jitter"]
      )
    })
  )

  it.effect("the block is kept as decoded, for display and diff", () =>
    Effect.gen(function* () {
      const { lifecycle } = yield* policyOf("{ profile: resilient, startup_timeout: 20 }")
      assert.strictEqual(lifecycle.profile, "resilient")
      assert.strictEqual(millis(lifecycle.startup_timeout), 20_000)
    })
  )
})

describe("AgentConfig: allow_outside_workspace on an lsp toolset", () => {
  /** The one `type: lsp` toolset of a config file in `/project`, with these extra fields. */
  const lspWith = (fields: string) =>
    parse(agentYaml(`      - { type: lsp, command: gopls, working_dir: ./code${fields} }\n`)).pipe(
      Effect.map((config) => config.toolsets[0]!)
    )

  it.effect(
    "absent or false confines; true lets anywhere in; extra roots are resolved against the config's folder",
    () =>
      Effect.gen(function* () {
        const absent = yield* lspWith("")
        const off = yield* lspWith(", allow_outside_workspace: false")
        const anywhere = yield* lspWith(", allow_outside_workspace: true")
        const roots = yield* lspWith(", allow_outside_workspace: [../shared, ./vendor, /opt/lib]")
        assert.isUndefined(absent.allowOutsideWorkspace)
        assert.isUndefined(off.allowOutsideWorkspace)
        assert.strictEqual(anywhere.allowOutsideWorkspace, true)
        assert.deepStrictEqual(roots.allowOutsideWorkspace, ["/shared", "/project/vendor", "/opt/lib"])
        // `false` is the default, the same toolset; any other value is a change a reload applies.
        assert.strictEqual(off.signature, absent.signature)
        assert.notStrictEqual(anywhere.signature, absent.signature)
        assert.notStrictEqual(roots.signature, absent.signature)
      })
  )

  it.effect("it belongs to lsp toolsets, and is true, false or a list of folders", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        agentYaml(`      - { type: mcp, command: x, allow_outside_workspace: true }
      - { type: lsp, command: gopls, allow_outside_workspace: "yes" }
`)
      )
      assert.deepStrictEqual(
        issues.map((issue) => issue.path),
        ["agents.root.toolsets[0].allow_outside_workspace", "agents.root.toolsets[1].allow_outside_workspace"]
      )
      assert.strictEqual(issues[0]?.message, "allow_outside_workspace can only be used with type 'lsp'")
    })
  )
})

describe("log_level", () => {
  it.effect("is kept per toolset, part of its signature, and a level MCP does not know is refused", () =>
    Effect.gen(function* () {
      const yaml = (level: string) =>
        agentYaml(`      - type: mcp\n        name: files\n        command: srv\n        log_level: ${level}\n`)
      const config = yield* parse(yaml("warning"))
      const files = toolset(config, "mcp/files")
      assert.strictEqual(files.logLevel, "warning")
      assert.strictEqual(config.folder, "/project")
      const other = toolset(yield* parse(yaml("debug")), "mcp/files")
      assert.notStrictEqual(other.signature, files.signature)
      const issues = yield* issuesOf(yaml("verbose"))
      assert.isTrue(
        issues.some((issue) => issue.path.endsWith("log_level")),
        JSON.stringify(issues)
      )
      assert.include(JSON.stringify(JsonSchema.make()), '"log_level"')
    })
  )
})

describe("AgentConfig: a NUL byte in what a server process is given", () => {
  it.effect("is refused at load in command, args, env names and values and working_dir, naming the field", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`agents:
  root:
    toolsets:
      - { type: mcp, command: "srv\\0", args: [--port, "80\\0", 3], env: { "KEY\\0": v }, working_dir: "\\0code" }
      - { type: lsp, command: "gopls\\0", args: ["\\0"], working_dir: "src\\0" }
      - { type: mcp, ref: files }
mcps:
  files: { command: files, args: [--root, "/data\\0"], env: { B: "w\\0" } }
`)
      const argument = "which no process argument can carry"
      const environment = "which no environment variable can carry"
      const folder = "which no directory path can carry"
      assert.deepStrictEqual(issues, [
        { path: "agents.root.toolsets[0].command", message: `contains a NUL byte (character 4), ${argument}` },
        { path: "agents.root.toolsets[0].args[1]", message: `contains a NUL byte (character 3), ${argument}` },
        {
          path: 'agents.root.toolsets[0].env["KEY\\u0000"]',
          message: `contains a NUL byte (character 4), ${environment}`
        },
        { path: "agents.root.toolsets[0].working_dir", message: `contains a NUL byte (character 1), ${folder}` },
        { path: "agents.root.toolsets[1].command", message: `contains a NUL byte (character 6), ${argument}` },
        { path: "agents.root.toolsets[1].args[0]", message: `contains a NUL byte (character 1), ${argument}` },
        { path: "agents.root.toolsets[1].working_dir", message: `contains a NUL byte (character 4), ${folder}` },
        { path: "mcps.files.args[1]", message: `contains a NUL byte (character 6), ${argument}` },
        { path: "mcps.files.env.B", message: `contains a NUL byte (character 2), ${environment}` }
      ])
    })
  )

  it.effect("the message says where the NUL is, never the value however long it is", () =>
    Effect.gen(function* () {
      const long = `${"é".repeat(5_000)}\\0`
      const issues = yield* issuesOf(agentYaml(`      - { type: mcp, command: srv, args: ["${long}"] }\n`))
      assert.deepStrictEqual(issues, [
        {
          path: "agents.root.toolsets[0].args[0]",
          message: "contains a NUL byte (character 5001), which no process argument can carry"
        }
      ])
    })
  )
})
