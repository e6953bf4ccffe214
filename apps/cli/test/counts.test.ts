/**
 * A toolset's tool count is one number everywhere: the tools it offers the agent after its
 * `tools:` filter. One config with a real MCP server behind an allow-list and a real LSP server,
 * and every output that shows the count — `run --json` status lines and its `status` answer,
 * `/status`, `/events`, `/metrics`, the dashboard (in a real browser), the live view (in a real
 * terminal), `run`'s lines on a pipe, `status` and `validate --check` — is compared with the
 * catalog.
 */
import { assert, describe, it } from "@effect/vitest"
import { chromium } from "playwright-core"
import {
  cliArgs,
  everythingEntry,
  freePort,
  runCli,
  Session,
  terminal,
  tsProject,
  tsServer,
  until,
  waitForScreen,
  writeConfig,
  yaml
} from "./helpers.ts"

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

/** The data of the first `snapshot` event of an event stream (`GET /events`). */
const firstSnapshot = async (url: string): Promise<Line> => {
  const aborted = new AbortController()
  const response = await fetch(url, { signal: aborted.signal })
  const reader = response.body?.getReader()
  const decoder = new TextDecoder()
  let text = ""
  try {
    for (;;) {
      const read = await reader?.read()
      if (read === undefined || read.done) throw new Error(`the stream ended before a snapshot:\n${text}`)
      text += decoder.decode(read.value, { stream: true })
      const frame = /^event: snapshot\ndata: (.*)$/m.exec(text)
      if (frame?.[1] !== undefined) return JSON.parse(frame[1])
    }
  } finally {
    aborted.abort()
  }
}

/** The number in `column` of each toolset's row of a table whose header names the columns. */
const tableCounts = (lines: ReadonlyArray<string>, column: string, toolsets: ReadonlyArray<string>) => {
  const header =
    lines
      .find((line) => line.includes(column))
      ?.trim()
      .split(/\s+/) ?? []
  const at = header.indexOf(column)
  return Object.fromEntries(
    toolsets.map((toolset) => [
      toolset,
      Number(
        lines
          .find((line) => line.trimStart().startsWith(`${toolset} `))
          ?.trim()
          .split(/\s+/)[at]
      )
    ])
  )
}

describe("tool counts", () => {
  it("every output gives each toolset the number of tools the catalog offers from it", async () => {
    const file = config()
    const port = await freePort()
    const toolsets = ["everything", lsp]
    // Three runs of one config at once: JSON lines with the HTTP routes, lines on a pipe, the live view.
    const session = new Session(["run", file, "--json", "--http", String(port)])
    const piped = new Session(["run", file])
    const term = terminal(`toolvisor-counts-${process.pid}`, [process.execPath, ...cliArgs(["run", file])], 120, 30)
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" })
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
      const snapshot = await firstSnapshot(`${http}/events`)
      assert.deepStrictEqual(countsOf(rowsOf(snapshot.toolsets)), expected, "GET /events: its snapshot")

      const metrics = await (await fetch(`${http}/metrics`)).text()
      const gauge = (toolset: string) =>
        Number(
          new RegExp(`^toolvisor_toolset_tools\\{[^}]*toolset="${toolset}"[^}]*\\} (\\d+)`, "m").exec(metrics)?.[1]
        )
      assert.deepStrictEqual({ everything: gauge("everything"), [lsp]: gauge(lsp) }, expected, "GET /metrics")

      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
      await page.goto(`${http}/`)
      const facts = (toolset: string) => page.locator(`article[data-toolset="${toolset}"] .facts`)
      const shown: { [toolset: string]: number } = {}
      for (const toolset of toolsets) {
        await facts(toolset).filter({ hasText: " tools" }).waitFor({ timeout: 30_000 })
        shown[toolset] = Number(/(\d+) tools/.exec((await facts(toolset).textContent()) ?? "")?.[1])
      }
      assert.deepStrictEqual(shown, expected, "the dashboard's cards")

      const screen = await waitForScreen(term.screen, (t) =>
        toolsets.every((toolset) => new RegExp(`^${toolset}\\s.*\\bReady\\b`, "m").test(t))
      )
      assert.deepStrictEqual(tableCounts(screen.split("\n"), "TOOLS", toolsets), expected, `the live view:\n${screen}`)

      const readyLine = (toolset: string) => piped.lines.find((line) => line.includes(` ${toolset} Starting → Ready (`))
      await until(() => toolsets.every((toolset) => readyLine(toolset) !== undefined), 60_000)
      assert.deepStrictEqual(
        Object.fromEntries(
          toolsets.map((toolset) => [toolset, Number(/\((\d+) tools/.exec(readyLine(toolset) ?? "")?.[1])])
        ),
        expected,
        `run on a pipe:\n${piped.lines.join("\n")}`
      )

      const table = await runCli(["status", file])
      assert.strictEqual(table.code, 0, table.stderr)
      assert.deepStrictEqual(
        tableCounts(table.stdout.split("\n"), "TOOLS", toolsets),
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
      await browser.close()
      term.close()
      session.child.kill("SIGKILL")
      piped.child.kill("SIGKILL")
    }
  })
})
