/**
 * Thousands of clients that vanish without DELETE, against the bundled CLI's `serve --http` on a
 * real port: once their sessions expire, the gateway's memory returns to where it was before the
 * first client came, within the sweep after the last one closed — not whenever V8's idle memory
 * reducer gets round to it (10 to 20 s later in some runs, never in others). A soak (about 55 s,
 * most of it waiting for the sessions to expire): `npm run test:soak`, or alone with
 * `npm run bench:sessions`.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Procs from "../../../test/chaos/procs.ts"
import { until } from "./helpers.ts"
import { abandon, openSessions, ping, serve, stopGateways } from "./serve-http.ts"

afterEach(stopGateways)

/** The sessions' idle time: long enough that all 3,000 are open at once on a loaded machine. */
const idleSeconds = 20
/** The collection comes one sweep (idle / 2) after the last close; this much more for a loaded machine. */
const slackMillis = 5_000

describe("serve --http sessions", () => {
  it("3,000 clients that vanish without DELETE leave RSS near where it began, a sweep after their sessions expire", {
    timeout: 180_000
  }, async () => {
    const { base, port, pid } = await serve(["--session-idle", `${idleSeconds}s`, "--max-sessions", "10000"])
    const rss = () => Procs.usage(pid)?.rssMiB ?? Number.NaN
    // Before any client: what an idle gateway holds. After its sessions are gone it holds up to
    // ~8 MiB more, in the malloc arenas of V8's collector threads, which glibc keeps.
    const baseline = rss()
    const began = Date.now()
    const ids: Array<string> = []
    for (let i = 0; i < 3000; i += 50) ids.push(...(await Promise.all(Array.from({ length: 50 }, () => abandon(port)))))
    const opened = Date.now() - began
    const peakSessions = await openSessions(base)
    const peak = rss()
    // Sessions are idle long enough to expire by now only if opening them all took that long.
    assert.isAbove(peakSessions, 2500, `${opened} ms to open 3,000`)
    await until(async () => (await openSessions(base)) === 0, 60_000)
    const expired = Date.now()
    assert.strictEqual((await ping(port, ids[0] ?? "")).status, 404)
    let settled = rss()
    await until(
      () => {
        settled = rss()
        return settled < baseline + 16
      },
      (idleSeconds * 1000) / 2 + slackMillis
    ).catch(() => undefined)
    console.log(
      `RSS of serve --http: ${baseline.toFixed(1)} MiB before any client; ${peak.toFixed(1)} MiB with ${peakSessions} abandoned sessions open (3,000 opened in ${opened} ms); ${settled.toFixed(1)} MiB ${((Date.now() - expired) / 1000).toFixed(1)} s after they expired`
    )
    assert.isAbove(peak, baseline + 30)
    assert.isBelow(settled, baseline + 16)
  })
})
