/**
 * A toolset's tool count is one number everywhere: the tools it offers the agent after its
 * `tools:` filter. One config with a real MCP server behind an allow-list and a real LSP server,
 * and every output that shows the count — `run --json` status lines and its `status` answer,
 * `/status`, `/metrics`, `status` and `validate --check` — is compared with the catalog.
 */
import { assert, describe, it } from "@effect/vitest"
import { everythingEntry, freePort, runCli, Session, tsProject, tsServer, writeConfig, yaml } from "./helpers.ts"

const allowed = ["everything_echo", "everything_get-sum", "everything_get-tiny-image"]
const lsp = "typescript-language-server"

const config = () =>
  writeConfig(
    yaml([
      [...everythingEntry("everything"), `        tools: [${allowed.join(", ")}]`],
      [
        "      - type: lsp",
        `        command: "${tsServer}"`,
        '        args: ["--stdio"]',
        `        working_dir: "${tsProject}"`,
        '        file_types: [".ts"]'
      ]
    ])
  )

type Line = { readonly [key: string]: unknown }

const rowsOf = (value: unknown): ReadonlyArray<Line> => (Array.isArray(value) ? value : [])

const countsOf = (rows: ReadonlyArray<Line>) => Object.fromEntries(rows.map((row) => [row.toolset, row.tools]))

describe("tool counts", () => {
  it("every output gives each toolset the number of tools the catalog offers from it", async () => {
    const file = config()
    const port = await freePort()
    const session = new Session(["run", file, "--json", "--http", String(port)])
    try {
      const firstReady = {
        everything: await session.waitFor(
          (l) => l.type === "status" && l.toolset === "everything" && l.state === "Ready"
        ),
        [lsp]: await session.waitFor((l) => l.type === "status" && l.toolset === lsp && l.state === "Ready")
      }
      await session.waitFor((l) => l.type === "tools" && l.complete === true)
      const mark = session.lines.length
      session.send({ cmd: "tools", id: "catalog" })
      session.send({ cmd: "status", id: "status" })
      const catalog = await session.waitFor((l) => l.id === "catalog", mark)
      const expected: { readonly [toolset: string]: number } = {
        everything: rowsOf(catalog.tools).filter((t) => t.toolset === "everything").length,
        [lsp]: rowsOf(catalog.tools).filter((t) => t.toolset === lsp).length
      }
      assert.strictEqual(expected.everything, allowed.length)
      assert.isAtLeast(expected[lsp] ?? 0, 5)

      assert.deepStrictEqual(
        countsOf([firstReady.everything, firstReady[lsp]]),
        expected,
        "run --json: the first Ready lines"
      )
      const answer = await session.waitFor((l) => l.id === "status", mark)
      assert.deepStrictEqual(countsOf(rowsOf(answer.toolsets)), expected, "run --json: the status command")

      const http = `http://127.0.0.1:${port}`
      const status: unknown = await (await fetch(`${http}/status`)).json()
      assert.deepStrictEqual(countsOf(rowsOf(status)), expected, "GET /status")

      const metrics = await (await fetch(`${http}/metrics`)).text()
      const gauge = (toolset: string) =>
        Number(
          new RegExp(`^toolvisor_toolset_tools\\{[^}]*toolset="${toolset}"[^}]*\\} (\\d+)`, "m").exec(metrics)?.[1]
        )
      assert.deepStrictEqual({ everything: gauge("everything"), [lsp]: gauge(lsp) }, expected, "GET /metrics")

      const table = await runCli(["status", file])
      assert.strictEqual(table.code, 0, table.stderr)
      const tableRow = (toolset: string) =>
        table.stdout
          .split("\n")
          .find((line) => line.trimStart().startsWith(toolset))
          ?.trim()
          .split(/\s+/)
      const header = table.stdout
        .split("\n")
        .find((line) => line.includes("TOOLS"))
        ?.trim()
        .split(/\s+/)
      const column = header?.indexOf("TOOLS") ?? -1
      assert.deepStrictEqual(
        { everything: Number(tableRow("everything")?.[column]), [lsp]: Number(tableRow(lsp)?.[column]) },
        expected,
        `status:\n${table.stdout}`
      )

      const check = await runCli(["validate", file, "--check"])
      assert.strictEqual(check.code, 0, check.stderr)
      const checked = (toolset: string) => Number(new RegExp(`${toolset}: Ready, (\\d+) tool`).exec(check.stdout)?.[1])
      assert.deepStrictEqual(
        { everything: checked("everything"), [lsp]: checked(lsp) },
        expected,
        `validate --check:\n${check.stdout}`
      )
    } finally {
      session.child.kill("SIGKILL")
    }
  })
})
