/**
 * Hostile config text: nesting deep enough to overflow a recursive parser, YAML alias bombs and
 * minified lines of hundreds of KB. Each is one `ConfigError` that names the file, says what was
 * refused and where, and shows a bounded excerpt — never a stack overflow, a defect or the whole line.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeTimers from "node:timers/promises"
import { assert, describe, it } from "@effect/vitest"
import { JsonLimits } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as ConfigLoader from "../src/ConfigLoader.ts"
import * as ConfigText from "../src/internal/configText.ts"

const tempFile = (name: string, text: string): string => {
  const path = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-text-")), name)
  NodeFs.writeFileSync(path, text)
  return path
}

/** The one issue of a config that fails to load, checked to name the file and to stay short. */
const refusal = (path: string) =>
  Effect.gen(function* () {
    const error = yield* Effect.flip(ConfigLoader.load(path, { env: {} }))
    assert.strictEqual(error._tag, "ConfigError")
    assert.strictEqual(error.issues.length, 1)
    assert.include(error.message, `Invalid config ${path}`)
    assert.isBelow(error.message.length, 600, "the error shows an excerpt, not the file")
    for (const line of error.message.split("\n")) assert.isAtMost(line.length, 200)
    return error.issues[0]?.message ?? ""
  })

const limit = JsonLimits.maxDepth

describe("ConfigText: nesting", () => {
  it.effect("JSON nested 100 000 deep on one line is refused where it passes the limit", () =>
    Effect.gen(function* () {
      const depth = 100_000
      const text = `{"mcpServers": {"a": {"command": "x", "args": ${"[".repeat(depth)}${"]".repeat(depth)}}}}`
      const message = yield* refusal(tempFile(".mcp.json", text))
      const column = text.indexOf("[") + (limit - 3) + 1
      assert.match(message, new RegExp(`^Refused: nested deeper than ${limit} levels at line 1, column ${column}:\n`))
      const [, excerpt = "", caret = ""] = message.split("\n")
      assert.strictEqual(excerpt.trim().length, ConfigText.excerptWidth + 2, "cut to the width, with … each side")
      assert.strictEqual(excerpt[caret.indexOf("^")], "[", "the caret points at the bracket that is too deep")
    })
  )

  it.effect("comments and strings in JSONC do not count as nesting", () =>
    Effect.gen(function* () {
      const noise = "[".repeat(limit * 2)
      const text = `// ${noise}\n{ /* ${noise} */ "mcpServers": { "a": { "command": "x", "args": ["${noise}"] } } }`
      const config = yield* ConfigLoader.parse(text, { source: "<inline>", baseDir: "/p", env: {} })
      assert.strictEqual(config.toolsets.length, 1)
    })
  )

  it.effect("YAML nested deeply in flow style on a 200 KB line: refused with a bounded excerpt", () =>
    Effect.gen(function* () {
      const depth = 100_000
      const path = tempFile("agent.yaml", `agents: ${"[".repeat(depth)}${"]".repeat(depth)}\n`)
      const message = yield* refusal(path)
      // `agents:` opens level 1, so the 64th bracket (from column 9) is the one too deep.
      assert.match(message, new RegExp(`^Refused: nested deeper than ${limit} levels at line 1, column ${8 + limit}:`))
    })
  )

  it.effect("YAML nested deeply in block style is refused at the line that passes the limit", () =>
    Effect.gen(function* () {
      const lines = Array.from({ length: 200 }, (_, level) => `${"  ".repeat(level)}k${level}:`)
      const message = yield* refusal(tempFile("agent.yaml", `${lines.join("\n")} end\n`))
      // The mapping at level 65 starts on line 65 (`k64:`), indented by 128.
      assert.match(
        message,
        new RegExp(`^Refused: nested deeper than ${limit} levels at line ${limit + 1}, column 129:`)
      )
    })
  )

  it.effect("YAML that nests deeply only through aliases is refused too", () =>
    Effect.gen(function* () {
      // Each anchor nests 30 deep in the text, and holds the previous one at its bottom: 90 deep in all.
      const nested = (inner: string) => `${"[".repeat(30)}${inner}${"]".repeat(30)}`
      const text = `a: &a ${nested("x")}\nb: &b ${nested("*a")}\nc: ${nested("*b")}\n`
      const message = yield* refusal(tempFile("agent.yaml", text))
      assert.strictEqual(message, `Refused: nested deeper than ${limit} levels through its YAML aliases`)
    })
  )
})

describe("ConfigLoader: size", () => {
  it.effect("a file past the size limit is refused without being read whole; one at the limit is read", () =>
    Effect.gen(function* () {
      const comment = (bytes: number) => `# ${"x".repeat(bytes - 3)}\n`
      const big = tempFile("agent.yaml", comment(ConfigLoader.maxBytes + 1))
      assert.strictEqual(yield* refusal(big), "Refused: larger than 4 MiB, which no config is")
      const edge = tempFile("agent.yaml", `${comment(ConfigLoader.maxBytes - 40)}agents: { root: { toolsets: [] } }\n`)
      assert.isAtMost(NodeFs.statSync(edge).size, ConfigLoader.maxBytes)
      assert.strictEqual((yield* ConfigLoader.load(edge, { env: {} })).agents.length, 1)
    })
  )
})

describe("ConfigLoader: what the path names", () => {
  it.effect("a FIFO nobody writes to, a device and a directory are refused at once, never waited on", () =>
    Effect.gen(function* () {
      const fifo = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-text-")), "agent.yaml")
      NodeChildProcess.execFileSync("mkfifo", [fifo])
      // Opening the FIFO blocked until a writer came, and the first Ctrl-C only began a shutdown
      // that waited on the open.
      assert.strictEqual(yield* refusal(fifo), `${fifo} is a named pipe (FIFO) with no writer: nothing was read`)
      assert.strictEqual(yield* refusal("/dev/zero"), "Refused: not a regular file (a character device): /dev/zero")
      const folder = NodePath.dirname(fifo)
      assert.strictEqual(yield* refusal(folder), `Refused: not a regular file (a directory): ${folder}`)
    })
  )
})

describe("ConfigLoader: a named pipe", () => {
  it.effect("with no writer says so, not that the document is empty; with one it loads what was written", () =>
    Effect.gen(function* () {
      const fifo = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-text-")), "agent.yaml")
      NodeChildProcess.execFileSync("mkfifo", [fifo])
      const refused = yield* Effect.flip(ConfigLoader.load(fifo, { env: {} }))
      assert.deepStrictEqual(refused.issues, [
        { path: "", message: `${fifo} is a named pipe (FIFO) with no writer: nothing was read` }
      ])
      assert.notInclude(refused.message, "empty document")

      // The writer holds the FIFO open until the read has begun; it only writes once it has a reader.
      const writer = NodeChildProcess.spawn("sh", ["-c", `exec 3>'${fifo}'; sleep 0.5; printf 'agents: {}' >&3`], {
        stdio: "ignore"
      })
      // Until the writer has the FIFO open, a load finds none and is refused: try again.
      const loaded = yield* Effect.gen(function* () {
        for (let tries = 0; tries < 500; tries++) {
          const result = yield* Effect.result(ConfigLoader.load(fifo, { env: {} }))
          if (result._tag === "Success") return result.success.agents
          yield* Effect.promise(() => NodeTimers.setTimeout(10))
        }
        return undefined
      }).pipe(Effect.ensuring(Effect.sync(() => writer.kill("SIGKILL"))))
      assert.deepStrictEqual(loaded, [])
    })
  )
})

describe("ConfigText: YAML aliases", () => {
  it.effect("an alias bomb is refused, naming the file, what was refused and where the aliases start", () =>
    Effect.gen(function* () {
      const rows = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
      for (const [name, previous] of [
        ["b", "a"],
        ["c", "b"],
        ["d", "c"],
        ["e", "d"],
        ["f", "e"],
        ["g", "f"]
      ]) {
        rows.push(`${name}: &${name} [${Array.from({ length: 9 }, () => `*${previous}`).join(", ")}]`)
      }
      const message = yield* refusal(tempFile("agent.yaml", `${rows.join("\n")}\nagents: *g\n`))
      assert.match(
        message,
        /^Refused: its YAML aliases expand past 100 nodes, as an alias bomb does; its first alias is at line 2, column 8:/
      )
    })
  )

  it.effect("ordinary anchors and aliases still load", () =>
    Effect.gen(function* () {
      const text = [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - { type: mcp, command: a, lifecycle: &never { restart: never } }",
        "      - { type: mcp, command: b, lifecycle: *never }"
      ].join("\n")
      const config = yield* ConfigLoader.parse(text, { source: "<inline>", baseDir: "/p", env: {} })
      assert.deepStrictEqual(
        config.toolsets.map((t) => t.policy.restart),
        ["never", "never"]
      )
    })
  )
})

describe("ConfigText: excerpts", () => {
  it.effect("a syntax error on a 200 KB minified line shows 80 characters around it, caret in place", () =>
    Effect.gen(function* () {
      const padding = `"${"x".repeat(200_000)}"`
      const text = `{"mcpServers": {"a": {"command": ${padding}, "args": [1 2]}}}`
      const message = yield* refusal(tempFile(".mcp.json", text))
      const [head = "", excerpt = "", caret = ""] = message.split("\n")
      assert.match(head, /^Not valid JSON \(CommaExpected\) at line 1, column \d+:$/)
      assert.strictEqual(excerpt.slice(caret.indexOf("^"), caret.indexOf("^") + 1), "2")
      assert.include(excerpt, '"args": [1 2]')
    })
  )

  it.effect("control characters in the excerpt are not sent to the terminal", () =>
    Effect.gen(function* () {
      const message = yield* refusal(tempFile(".mcp.json", '{"mcpServers": \u001b[31m{"a": 1 2}}'))
      assert.notInclude(message, "\u001b")
    })
  )
})

describe("ConfigText: keys that JSON readers take differently", () => {
  it.effect('a JSON "__proto__" key is an own key, as the hosts\' JSON.parse reads it, never the prototype', () =>
    Effect.gen(function* () {
      const text = '{"__proto__": {"mcpServers": {"hidden": {"command": "touch"}}}, "a": {"__proto__": []}}'
      const value = yield* ConfigText.parse(text, "json", "<inline>")
      assert.deepStrictEqual(value, JSON.parse(text))
      assert.strictEqual(Object.getPrototypeOf(value), Object.prototype)
      const error = yield* Effect.flip(ConfigLoader.parse(text, { source: "<inline>", baseDir: "/p", env: {} }))
      assert.include(error.message, "Not a config format Toolvisor reads (found top-level keys __proto__, a)")
    })
  )

  it.effect('a YAML "__proto__" key is an own key too', () =>
    Effect.gen(function* () {
      const value = yield* ConfigText.parse("__proto__:\n  mcpServers: { hidden: { command: touch } }\n", "yaml", "y")
      assert.deepStrictEqual(Object.keys(value ?? {}), ["__proto__"])
      assert.strictEqual(Object.getPrototypeOf(value), Object.prototype)
    })
  )

  it.effect("a key written twice in JSON is refused at the second, with its path, as YAML refuses it", () =>
    Effect.gen(function* () {
      const text = [
        "{",
        "  // a reviewer reads the first; a host runs the last",
        '  "mcpServers": {"a": {"command": "echo"}, "a": {"command": "rm"}}',
        "}"
      ].join("\n")
      const path = tempFile(".mcp.json", text)
      const error = yield* Effect.flip(ConfigLoader.load(path, { env: {} }))
      assert.strictEqual(error.issues.length, 1)
      assert.strictEqual(error.issues[0]?.path, "mcpServers.a")
      assert.match(error.issues[0]?.message ?? "", /^Duplicate key \(.*\) at line 3, column 44:\n/)
      const yaml = yield* refusal(tempFile("agent.yaml", "mcpServers:\n  a: { command: echo }\n  a: { command: rm }\n"))
      assert.match(yaml, /^Not valid YAML \(Map keys must be unique\) at line 3, column 3:/)
    })
  )

  it.effect("a UTF-8 byte order mark before JSON or JSONC is skipped, as before YAML", () =>
    Effect.gen(function* () {
      for (const [name, text] of [
        [".mcp.json", '\uFEFF{"mcpServers": {"a": {"command": "echo"}}}'],
        ["settings", '\uFEFF// Cursor\n{"mcpServers": {"a": {"command": "echo"}}}'],
        ["agent.yaml", "\uFEFFmcpServers:\n  a: { command: echo }\n"]
      ] as const) {
        const config = yield* ConfigLoader.load(tempFile(name, text), { env: {} })
        assert.deepStrictEqual(
          config.toolsets.map((t) => t.name),
          ["a"],
          name
        )
      }
    })
  )
})

describe("ConfigText: YAML merge keys", () => {
  it.effect("<<: *base merges a mapping under the keys written beside it, as docker-agent's Go YAML does", () =>
    Effect.gen(function* () {
      const text = [
        "base: &base { type: mcp, command: srv, args: [--stdio], lifecycle: { restart: never } }",
        "agents:",
        "  root:",
        "    toolsets:",
        "      - <<: *base",
        "        name: one",
        "      - { <<: *base, name: two, args: [--http] }"
      ].join("\n")
      const config = yield* ConfigLoader.parse(text, { source: "<inline>", baseDir: "/p", env: {} })
      assert.deepStrictEqual(
        config.toolsets.map((t) => [t.name, t.transport._tag === "stdio" && t.transport.args, t.policy.restart]),
        [
          ["one", ["--stdio"], "never"],
          ["two", ["--http"], "never"]
        ]
      )
    })
  )

  it.effect("merge keys that would expand like an alias bomb are refused as one", () =>
    Effect.gen(function* () {
      const rows = ["a: &a { k: v }"]
      const names = "abcdefgh"
      for (let level = 1; level < names.length; level += 1) {
        const previous = Array.from({ length: 9 }, () => `*${names[level - 1]}`).join(", ")
        rows.push(`${names[level]}: &${names[level]} { <<: [${previous}] }`)
      }
      const message = yield* refusal(tempFile("agent.yaml", `${rows.join("\n")}\nagents: { root: *h }\n`))
      assert.match(message, /^Refused: its YAML aliases expand past 100 nodes, as an alias bomb does;/)
    })
  )
})
