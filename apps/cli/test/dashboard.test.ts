/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core, no download):
 * toolsets go Ready, a SIGKILLed server turns Restarting then Ready in the row, the timeline and
 * the event log; the restart button restarts it; and the page reconnects by itself after
 * Toolvisor itself restarts. The screenshot is kept under `.ci-out/` as a CI artifact.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { type Browser, chromium } from "playwright-core"
import { freePort, mcpEntry, root, Session, until, writeConfig, yaml } from "./helpers.ts"

const sessions: Array<Session> = []
const browsers: Array<Browser> = []

afterEach(async () => {
  for (const browser of browsers.splice(0)) await browser.close()
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGTERM")
    await session.exited()
  }
})

const run = (config: string, port: number) => {
  const session = new Session(["run", config, "--json", "--http", String(port)])
  sessions.push(session)
  return session
}

describe("the dashboard at GET /", () => {
  it("shows Ready, a SIGKILL as Restarting then Ready, restarts on a press, reconnects after a restart of Toolvisor", async () => {
    const port = await freePort()
    const config = writeConfig(yaml([mcpEntry("fx")]))
    const first = run(config, port)
    const base = `http://127.0.0.1:${port}/`
    await until(async () => (await fetch(`${base}healthz`).catch(() => undefined))?.ok === true)

    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" })
    browsers.push(browser)
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } })
    await page.goto(base)
    const state = page.locator('tr[data-toolset="fx"] td.state')
    await state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })
    // Every state the row shows, however briefly: a restart can be quicker than any poll.
    await page.evaluate(`
      window.seen = []
      new MutationObserver(() => {
        const text = document.querySelector('tr[data-toolset="fx"] td.state')?.textContent ?? ""
        if (window.seen[window.seen.length - 1] !== text) window.seen.push(text)
      }).observe(document.body, { subtree: true, childList: true, characterData: true })
    `)
    /** Until the row is Ready again with a server other than `previous` (state and pid read at once). */
    const readyAgain = (previous: string | null) =>
      until(async () => {
        const [, , shown, pid] = (await page.locator('tr[data-toolset="fx"]').innerText()).split("\t")
        return shown?.trim() === "Ready" && pid?.trim() !== previous
      })
    const pid = Number(await page.locator('tr[data-toolset="fx"] td.pid').textContent())
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
    await page.locator('.timeline[data-toolset="fx"] span[data-state="Restarting"]').waitFor({ state: "attached" })
    assert.strictEqual(await page.locator('tr[data-toolset="fx"] td.restarts').textContent(), "1")
    // A page opened after the crash draws it too: the server keeps the last hour of states.
    const late = await browser.newPage()
    await late.goto(base)
    await late.locator('.timeline[data-toolset="fx"] span[data-state="Restarting"]').waitFor({ state: "attached" })
    await late.close()

    const beforePress = await page.locator('tr[data-toolset="fx"] td.pid').textContent()
    await page.locator('tr[data-toolset="fx"] button[data-action="restart"]').click()
    await page.locator("#log li", { hasText: "restart fx: ok" }).waitFor()
    await readyAgain(beforePress)
    const out = NodePath.join(root, ".ci-out")
    NodeFs.mkdirSync(out, { recursive: true })
    await page.screenshot({ path: NodePath.join(out, "dashboard.png"), fullPage: true })

    // Toolvisor restarts on the same port: the page notices, waits, and follows the new process.
    first.child.kill("SIGTERM")
    await first.exited()
    await page.locator("#link", { hasText: "reconnecting" }).waitFor({ timeout: 10_000 })
    run(config, port)
    await page.locator("#link", { hasText: "live" }).waitFor({ timeout: 30_000 })
    await state.filter({ hasText: "Ready" }).waitFor({ timeout: 30_000 })
    assert.isAtLeast(await page.locator("#log li", { hasText: "snapshot:" }).count(), 2)
  })
})
