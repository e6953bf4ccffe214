/**
 * A config that cannot be used, as a person meets it: the command's result, not a log line —
 * the file and its format, then one problem a line with its path and did-you-mean, and a syntax
 * error's excerpt with the caret under its column — whatever `--log-level` says, from `validate`
 * (stdout, or `--json` data) and from every other command (stderr). A reload that fails under
 * `run --watch` logs the same problem whole.
 */
import * as NodeFs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { mcpEntry, runCli, Session, until, writeConfig, yaml } from "./helpers.ts"

/** Three mistakes a person makes: two misspelt fields and a duration that is no duration. */
const mistakes = () =>
  writeConfig(
    yaml([
      [
        "      - type: mcp",
        "        comand: node",
        "        lifecycle:",
        "          restrt: always",
        "          startup_timeout: banana"
      ]
    ])
  )

const expected = (config: string) => [
  `Invalid config ${config} (read as docker-agent YAML; 3 problems):`,
  "  agents.root.toolsets[0].comand: Unknown field `comand`; did you mean `command`?",
  "  agents.root.toolsets[0].lifecycle.restrt: Unknown field `restrt`; did you mean `restart`?",
  "  agents.root.toolsets[0].lifecycle.startup_timeout: Expected a duration like 250ms, 30s, 5m or 1h"
]

/** A log line's start: the time of day. */
const timestamp = /^\d\d:\d\d:\d\d\.\d{3} /m

describe("a config with mistakes", () => {
  it("validate prints the file, its format and one problem a line with its did-you-mean, at any log level; exit 2", async () => {
    const config = mistakes()
    for (const args of [
      ["validate", config],
      ["--log-level", "none", "validate", config]
    ]) {
      const result = await runCli(args)
      assert.strictEqual(result.code, 2, result.stderr)
      assert.deepStrictEqual(result.stdout.trimEnd().split("\n"), expected(config), args.join(" "))
      assert.notMatch(result.stdout + result.stderr, timestamp, "a result, not a log line")
    }
  })

  it("validate --json gives the same as data", async () => {
    const config = mistakes()
    const result = await runCli(["validate", config, "--json"])
    assert.strictEqual(result.code, 2, result.stderr)
    const report: {
      readonly valid: boolean
      readonly source: string
      readonly format: string
      readonly problems: ReadonlyArray<{ readonly path: string; readonly message: string }>
    } = JSON.parse(result.stdout)
    assert.isFalse(report.valid)
    assert.strictEqual(report.source, config)
    assert.strictEqual(report.format, "docker-agent YAML")
    assert.deepStrictEqual(
      report.problems.map((p) => `  ${p.path}: ${p.message}`),
      expected(config).slice(1)
    )
  })

  it("a YAML syntax error shows the line with the caret under the column it names", async () => {
    const config = writeConfig(
      yaml([["      - type: mcp", '        command: "node', "        args: [a, b", "        name: x"]])
    )
    const result = await runCli(["validate", config])
    assert.strictEqual(result.code, 2, result.stderr)
    const lines = result.stdout.trimEnd().split("\n")
    assert.strictEqual(lines[0], `Invalid config ${config} (1 problem):`)
    const at = /^ {2}Not valid YAML \(.+\) at line (\d+), column (\d+):$/.exec(lines[1] ?? "")
    assert.isNotNull(at, result.stdout)
    const [line, column] = [Number(at?.[1]), Number(at?.[2])]
    const source = NodeFs.readFileSync(config, "utf8").split("\n")[line - 1] ?? ""
    const excerpt = lines[2] ?? ""
    const caret = lines[3] ?? ""
    assert.match(caret, /^ +\^$/)
    // The excerpt is the source line, indented; the caret sits under the character the column names.
    const indent = excerpt.length - source.length
    assert.strictEqual(excerpt, `${" ".repeat(indent)}${source}`)
    assert.strictEqual(caret.indexOf("^"), indent + column - 1)
  })

  it("every other command prints it the same way on stderr, whatever the log level; nothing on stdout", async () => {
    const config = mistakes()
    for (const command of ["status", "tools"]) {
      const result = await runCli(["--log-level", "none", command, config, "--json"])
      assert.strictEqual(result.code, 2, result.stderr)
      assert.strictEqual(result.stdout, "")
      assert.deepStrictEqual(result.stderr.trimEnd().split("\n"), expected(config), command)
    }
  })

  it("run --watch logs a reload that fails whole: its excerpt and caret on lines of their own", async () => {
    const config = writeConfig(yaml([mcpEntry("fx")]))
    const run = new Session(["run", config, "--watch"])
    try {
      await until(() => run.lines.some((l) => / fx Starting → Ready /.test(l)), 60_000)
      NodeFs.writeFileSync(config, `${NodeFs.readFileSync(config, "utf8")}\n        args: [a, b\n`)
      await until(() => run.stderr.includes("not reloaded"), 60_000)
      await until(() => /\n {2,}\^\n/.test(run.stderr), 10_000)
      const lines = run.stderr.split("\n")
      const head = lines.findIndex((l) => l.includes("not reloaded"))
      assert.match(lines[head] ?? "", timestamp)
      assert.match(lines[head + 1] ?? "", /^ {2}Not valid YAML \(.+\) at line \d+, column \d+:$/)
      assert.match(lines[head + 3] ?? "", /^ +\^$/)
    } finally {
      run.child.kill("SIGTERM")
      await run.exited()
    }
  })
})
