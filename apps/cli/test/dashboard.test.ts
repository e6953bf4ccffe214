/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core, no download),
 * against the real CLI and real servers. A SIGKILLed server turns Restarting then Ready in its
 * card, its timeline and the event log; the restart button restarts it; the page reconnects by
 * itself after Toolvisor itself restarts. Beside a healthy toolset, a crash-looping one shows the
 * loop in its timeline's legend, its spent budget and "gave up"; buttons follow the state, stop
 * asks first, the log is filled on load, times are 24-hour, the charts show real calls, the drawer
 * shows tools, policy, transitions and stderr (a server's markup as text), and 400 px wide nothing
 * overflows. Screenshots at
 * 1280 and 400 px are kept under `.ci-out/` as CI artifacts.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type Browser, chromium, type Page } from "playwright-core"
import { fixtureServer, freePort, mcpEntry, root, Session, until, writeConfig, yaml } from "./helpers.ts"

const sessions: Array<Session> = []
const browsers: Array<Browser> = []
const clients: Array<Client> = []

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  for (const browser of browsers.splice(0)) await browser.close()
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGTERM")
    await session.exited()
  }
})

const start = (args: ReadonlyArray<string>) => {
  const session = new Session(args)
  sessions.push(session)
  return session
}

const launch = async () => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" })
  browsers.push(browser)
  return browser
}

const healthy = async (base: string) =>
  until(async () => (await fetch(`${base}healthz`).catch(() => undefined))?.ok === true)

const screenshot = async (page: Page, name: string) => {
  const out = NodePath.join(root, ".ci-out")
  NodeFs.mkdirSync(out, { recursive: true })
  await page.screenshot({ path: NodePath.join(out, name), fullPage: true })
}

/** A toolset's card, and the parts the tests read. */
const cardOf = (page: Page, toolset: string) => {
  const card = page.locator(`article[data-toolset="${toolset}"]`)
  return {
    card,
    state: card.locator(".head .state"),
    budget: card.locator(".budget"),
    button: (action: string) => card.locator(`button[data-action="${action}"]`),
    summary: card.locator(".summary")
  }
}

describe("the dashboard at GET /", () => {
  it("shows Ready, a SIGKILL as Restarting then Ready, restarts on a press, reconnects after a restart of Toolvisor", async () => {
    const port = await freePort()
    const config = writeConfig(yaml([mcpEntry("fx")]))
    const args = ["run", config, "--json", "--http", String(port)]
    const first = start(args)
    const base = `http://127.0.0.1:${port}/`
    await healthy(base)

    const browser = await launch()
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } })
    await page.goto(base)
    const fx = cardOf(page, "fx")
    await fx.state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })
    // Every state the card shows, however briefly: a restart can be quicker than any poll.
    await page.evaluate(`
      window.seen = []
      new MutationObserver(() => {
        const text = document.querySelector('article[data-toolset="fx"] .head .state')?.textContent ?? ""
        if (window.seen[window.seen.length - 1] !== text) window.seen.push(text)
      }).observe(document.body, { subtree: true, childList: true, characterData: true })
    `)
    const pidOf = () => fx.card.getAttribute("data-pid")
    /** Until the card is Ready again with a server other than `previous` (state and pid read at once). */
    const readyAgain = (previous: string | null) =>
      until(async () => {
        const [state, pid] = await fx.card.evaluate((card) => [card.getAttribute("data-state"), card.dataset.pid])
        return state === "Ready" && pid !== previous
      })
    const pid = Number(await pidOf())
    assert.isAbove(pid, 0)

    process.kill(pid, "SIGKILL")
    await readyAgain(String(pid))
    const seen: unknown = await page.evaluate("window.seen")
    assert.isTrue(Array.isArray(seen))
    if (!Array.isArray(seen)) return
    assert.includeMembers(seen, ["Restarting", "Ready"])
    assert.isBelow(seen.indexOf("Restarting"), seen.lastIndexOf("Ready"))
    await page.locator("#log li", { hasText: "fx Ready → Restarting" }).waitFor()
    await page.locator("#log li", { hasText: "fx Restarting → Ready" }).waitFor()
    await fx.card.locator('.seg[data-state="Restarting"]').waitFor({ state: "attached" })
    assert.include(await fx.budget.textContent(), "restarts 1 of 5")
    // A page opened after the crash draws it too: the server keeps the last hour of states.
    const late = await browser.newPage()
    await late.goto(base)
    await cardOf(late, "fx").card.locator('.seg[data-state="Restarting"]').waitFor({ state: "attached" })
    await late.close()

    const beforePress = await pidOf()
    await fx.button("restart").click()
    await page.locator("#log li", { hasText: "restart fx: ok" }).waitFor()
    await readyAgain(beforePress)

    // Toolvisor restarts on the same port: the page notices, waits, and follows the new process.
    first.child.kill("SIGTERM")
    await first.exited()
    await page.locator("#link", { hasText: "reconnecting" }).waitFor({ timeout: 10_000 })
    start(args)
    await page.locator("#link", { hasText: "live" }).waitFor({ timeout: 30_000 })
    await fx.state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })
    assert.isAtLeast(await page.locator("#log li", { hasText: "connected: snapshot" }).count(), 2)
  })
})

describe("the dashboard with a crash loop beside a healthy toolset", () => {
  it("names the loop in the timeline's legend, shows the spent budget and gave up, and keeps everything else usable", async () => {
    const maxRestarts = 4
    const markup = "<img src=x onerror=window.pwned=1>"
    const port = await freePort()
    const config = writeConfig(
      yaml([
        // One tool whose name reverses what follows it (U+202E): the drawer shows the character, escaped.
        mcpEntry("fx", [
          "        lifecycle: { call_timeout: 2s }",
          '        env: { FIXTURE_EXTRA_TOOLS: "ok_\\u202etxt.exe" }'
        ]),
        // Its server says markup on stderr first: the drawer must show it as text.
        [
          "      - type: mcp",
          "        name: loop",
          "        command: bash",
          `        args: ["-c", ${JSON.stringify(`echo '${markup}' >&2; exec "${process.execPath}" "${fixtureServer}"`)}]`,
          '        env: { FIXTURE_EXIT_AFTER_MS: "3000" }',
          "        lifecycle:",
          `          max_restarts: ${maxRestarts}`,
          "          backoff: { initial: 200ms, max: 1s, reset_after: 30s }"
        ]
      ])
    )
    start(["serve", config, "--http", String(port)])
    const base = `http://127.0.0.1:${port}/`
    await healthy(base)

    // Real calls through the gateway once fx is Ready: twenty answers and one that runs past its call_timeout.
    await until(async () => {
      const status: unknown = await (await fetch(`${base}status`)).json()
      return Array.isArray(status) && status.some((s) => s.toolset === "fx" && s.state === "Ready")
    })
    const client = new Client({ name: "dashboard-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}mcp`)))
    clients.push(client)
    for (let i = 0; i < 20; i++) {
      const answer = await client.callTool({ name: "fx_echo", arguments: { message: `hi ${i}` } })
      assert.notStrictEqual(answer.isError, true)
    }
    const slow = await client.callTool({ name: "fx_sleep", arguments: { ms: 4_000 } })
    assert.isTrue(slow.isError)

    const browser = await launch()
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const problems: Array<string> = []
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text())
    })
    page.on("pageerror", (error) => problems.push(error.message))
    await page.goto(base)
    const fx = cardOf(page, "fx")
    const loop = cardOf(page, "loop")
    await fx.state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })
    await loop.state.filter({ hasText: "Failed" }).waitFor({ timeout: 60_000 })

    // The crash loop: every restart of the budget in the timeline and its legend, then Failed.
    assert.strictEqual(await loop.budget.textContent(), `gave up after ${maxRestarts} of ${maxRestarts} restarts`)
    assert.match((await fx.budget.textContent()) ?? "", /^restarts 0 of 5 · resets after 30 s Ready$/)
    assert.strictEqual(await loop.card.locator('.seg[data-state="Restarting"]').count(), maxRestarts)
    assert.strictEqual(await loop.card.locator(".crash").count(), maxRestarts)
    assert.isAtLeast(await loop.card.locator('.seg[data-state="Failed"]').count(), 1)
    assert.match(
      (await loop.summary.locator('[data-state="Restarting"]').textContent()) ?? "",
      new RegExp(`^Restarting ${maxRestarts}× \\d+ s$`)
    )
    assert.isAtLeast(await loop.summary.locator('[data-state="Failed"]').count(), 1)
    const named = (await loop.summary.locator(".loop").textContent()) ?? ""
    assert.match(
      named,
      new RegExp(
        `^crash loop: ${maxRestarts} restarts in \\d+ s, \\d\\d:\\d\\d:\\d\\d–\\d\\d:\\d\\d:\\d\\d, then gave up at \\d\\d:\\d\\d:\\d\\d$`
      )
    )
    assert.strictEqual(await fx.summary.locator(".loop").count(), 0)
    assert.strictEqual(await loop.card.locator(".track .band").count(), 1)
    assert.strictEqual(await fx.card.locator(".track .band").count(), 0)
    assert.include(await loop.card.locator(".error").textContent(), "ServerCrashed")

    // The header: the config, the agent, counts by state and uptime.
    assert.include(await page.locator("#title").textContent(), `${NodePath.basename(config)} · agent root`)
    assert.strictEqual(await page.locator('#counts .chip[data-state="Ready"]').textContent(), "1 Ready")
    assert.strictEqual(await page.locator('#counts .chip[data-state="Failed"]').textContent(), "1 Failed")
    assert.match((await page.locator("#uptime").textContent()) ?? "", /^up \d+ (s|min)\b/)

    // Buttons by state: no start on a Ready toolset, no stop or restart on a Failed one.
    const enabled = async (card: ReturnType<typeof cardOf>) =>
      Object.fromEntries(
        await Promise.all(["start", "restart", "stop"].map(async (a) => [a, await card.button(a).isEnabled()] as const))
      )
    assert.deepStrictEqual(await enabled(fx), { start: false, restart: true, stop: true })
    assert.deepStrictEqual(await enabled(loop), { start: true, restart: false, stop: false })

    // The charts: the calls made above, with the one that failed.
    const rate = fx.card.locator('figure[data-chart="rate"] figcaption b')
    await rate.filter({ hasText: "21 in 1 h" }).waitFor({ timeout: 20_000 })
    assert.match((await fx.card.locator('figure[data-chart="errors"] b').textContent()) ?? "", /^4\.76 % · 1$/)
    assert.match((await fx.card.locator('figure[data-chart="latency"] b').textContent()) ?? "", /ms · .*s$/)
    assert.isAtLeast(await fx.card.locator('figure[data-chart="rate"] rect.rate').count(), 1)
    assert.strictEqual(await loop.card.locator(".charts").textContent(), "no calls in the last hour")
    const failedBars = await fx.card.locator('figure[data-chart="errors"] rect.errors title').allTextContents()
    assert.match(failedBars.join("\n"), /^\d\d:\d\d:\d\d · 1 of \d+ failed$/m)

    // Times are 24-hour UTC, as the CLI prints them; the log was filled from the last hour on load.
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await fresh.goto(base)
    await fresh.locator("#log li", { hasText: /^\d\d:\d\d:\d\dloop \w+ → Failed {2}ServerCrashed/ }).waitFor()
    assert.strictEqual(await fresh.locator("#log li", { hasText: /loop \w+ → Restarting/ }).count(), maxRestarts)
    const times = await fresh.locator("#log time").allTextContents()
    assert.isAbove(times.length, 2 * maxRestarts)
    for (const time of times) assert.match(time, /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d$/)
    assert.notMatch((await fresh.locator("body").innerText()) ?? "", /\b[AP]M\b/)
    await fresh.close()

    // The drawer: the crash-looping server's stderr and transitions with their errors; fx's tools and policy.
    await loop.card.locator("button.name").click()
    await page.locator("#d-stderr", { hasText: "fixture gave up on purpose" }).waitFor()
    assert.include(await page.locator("#d-stderr").textContent(), markup)
    assert.strictEqual(await page.locator("img").count(), 0)
    assert.isUndefined(await page.evaluate("window.pwned"))
    assert.isAtLeast(await page.locator("#d-transitions li .why", { hasText: "ServerCrashed" }).count(), 1)
    await screenshot(page, "dashboard-drawer.png")
    await page.locator("#d-close").click()
    await fx.card.locator("button.name").click()
    await page.locator("#d-tools span", { hasText: "fx_echo" }).waitFor()
    const names = await page.locator("#d-tools span").allTextContents()
    assert.include(names, "fx_ok_\\u202etxt.exe")
    assert.notMatch(names.join(" "), /[\p{Cf}]/u, "no format character reaches the page raw")
    const offered = await page.locator("#d-tools span").count()
    assert.strictEqual(await page.locator("#d-tools-count").textContent(), `(${offered})`)
    assert.include(await fx.card.locator(".facts").textContent(), ` · ${offered} tools · `)
    assert.include(await page.locator("#d-policy").innerText(), "call timeout\n2 s")
    await page.keyboard.press("Escape")
    assert.isTrue(await page.locator("#drawer").isHidden())

    await screenshot(page, "dashboard-1280.png")
    await page.locator('.window button[data-window="300000"]').click()
    assert.strictEqual(await loop.card.locator(".axis span").first().textContent(), "−5 min")
    assert.strictEqual(await loop.card.locator('.seg[data-state="Restarting"]').count(), maxRestarts)

    // Stop asks first: cancelled, nothing is sent; confirmed, fx stops and only start is offered.
    await fx.button("stop").click()
    const dialog = page.locator("dialog#confirm")
    assert.include(await dialog.textContent(), "Stop fx?")
    await dialog.locator("#confirm-cancel").click()
    assert.isFalse(await dialog.isVisible())
    assert.strictEqual(await page.locator("#log li", { hasText: "stop fx" }).count(), 0)
    assert.strictEqual(await fx.state.textContent(), "Ready")
    await fx.button("stop").click()
    await dialog.locator("#confirm-stop").click()
    await fx.state.filter({ hasText: "Stopped" }).waitFor()
    await page.locator("#log li", { hasText: "stop fx: ok" }).waitFor()
    assert.deepStrictEqual(await enabled(fx), { start: true, restart: false, stop: false })
    await fx.button("start").click()
    await fx.state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })

    // 400 px wide: everything wraps, nothing scrolls sideways.
    await page.setViewportSize({ width: 400, height: 900 })
    await until(async () => (await page.evaluate("document.documentElement.scrollWidth")) === 400)
    assert.isAtMost(await loop.card.evaluate((card) => card.getBoundingClientRect().right), 400)
    await screenshot(page, "dashboard-400.png")

    // The favicon is the page's own, and nothing the page ran was refused by its policy.
    assert.strictEqual(await page.locator('link[rel="icon"]').getAttribute("href"), "favicon.svg")
    const icon = await fetch(`${base}favicon.svg`)
    assert.strictEqual(icon.headers.get("content-type"), "image/svg+xml")
    assert.include(await icon.text(), "<svg")
    assert.deepStrictEqual(problems, [])
  })
})
