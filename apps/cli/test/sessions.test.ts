/**
 * The MCP sessions of `serve --http`, black-box: the bundled CLI on a real port. Sessions are
 * capped with a clear 503, and a session no client uses expires while one with an open stream
 * stays. (Thousands of abandoned sessions and the gateway's memory: sessions-rss.soak.test.ts.)
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import { until } from "./helpers.ts"
import { abandon, close, initialize, openSessions, ping, post, serve, stopGateways } from "./serve-http.ts"

afterEach(stopGateways)

describe("serve --http sessions", () => {
  it("past --max-sessions an initialize is refused with a clear 503; a DELETE frees a place", async () => {
    const { port } = await serve(["--max-sessions", "2"])
    const first = await abandon(port)
    await abandon(port)
    const refused = await post(port, initialize)
    assert.strictEqual(refused.status, 503)
    assert.include(refused.text, "2 MCP sessions are open, the most --max-sessions allows")
    assert.isUndefined(refused.session)
    // The sessions already open are untouched.
    assert.strictEqual((await ping(port, first)).status, 200)

    assert.strictEqual(await close(port, first), 200)
    assert.strictEqual((await post(port, initialize)).status, 200)
  })

  it("--session-idle expires a session nobody uses, while one with an open stream stays", async () => {
    const { base, port } = await serve(["--session-idle", "1s"])
    const abandoned = await abandon(port)
    const listening = await abandon(port)
    // The client's GET stream for server notifications, held open.
    const stream = new AbortController()
    const opened = await fetch(`${base}/mcp`, {
      headers: { accept: "text/event-stream", "mcp-session-id": listening, "mcp-protocol-version": "2025-06-18" },
      signal: stream.signal
    })
    assert.strictEqual(opened.status, 200)
    try {
      assert.strictEqual(await openSessions(base), 2)
      await until(async () => (await openSessions(base)) === 1, 20_000)
      // The abandoned one was idle a full second; the listening one too, but with its stream open.
      assert.strictEqual((await ping(port, abandoned)).status, 404)
      assert.strictEqual((await ping(port, listening)).status, 200)
    } finally {
      stream.abort()
    }
    await until(async () => (await openSessions(base)) === 0, 20_000)
    assert.strictEqual((await ping(port, listening)).status, 404)
  })
})
