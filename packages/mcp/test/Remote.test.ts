import { getEventListeners } from "node:events"
import * as NodeHttp from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import { awaitListening, everythingBin, fastPolicy, freePort, textOf, until } from "./helpers.ts"

/** `server-everything` in a remote mode on a loopback port, in a scope the test closes. */
const everythingRemote = (mode: "streamableHttp" | "sse", port: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const server = yield* ServerProcess.spawn("everything", {
      command: process.execPath,
      args: [everythingBin, mode],
      env: { PORT: String(port) }
    }).pipe(Scope.provide(scope))
    yield* awaitListening(port)
    return { pid: server.pid, stop: Scope.close(scope, Exit.void) }
  })

const open = (options: McpToolset.Options) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const toolset = yield* McpToolset.make(options).pipe(Scope.provide(scope))
    return { toolset, close: Scope.close(scope, Exit.void) }
  })

/** A server that answers every request with 401 and an OAuth challenge, counting requests. */
const unauthorized = Effect.acquireRelease(
  Effect.callback<{ readonly port: number; readonly requests: () => number; readonly server: NodeHttp.Server }>(
    (resume) => {
      let requests = 0
      const server = NodeHttp.createServer((req, res) => {
        requests += 1
        req.resume()
        res.writeHead(401, {
          "WWW-Authenticate": 'Bearer realm="mcp", error="invalid_token", error_description="The token expired"',
          "Content-Type": "application/json"
        })
        res.end(JSON.stringify({ error: "invalid_token" }))
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ port, requests: () => requests, server }))
      })
    }
  ),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

/** Longer than fastPolicy's longest backoff: a retry, had one been scheduled, would be sent by then. */
const noRetryWindow = Duration.sum(fastPolicy().backoff.max, Duration.millis(100))

/** Every signal `fetch` is given while the scope is open; the real `fetch` still sends each request. */
const fetchSignals = Effect.acquireRelease(
  Effect.sync(() => {
    const original = globalThis.fetch
    const signals = new Set<AbortSignal>()
    globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
      if (init?.signal) signals.add(init.signal)
      return original(input, init)
    }
    return { signals, original }
  }),
  ({ original }) =>
    Effect.sync(() => {
      globalThis.fetch = original
    })
)

describe("McpToolset over the network", () => {
  for (const [mode, tag, path] of [
    ["streamableHttp", "http", "/mcp"],
    ["sse", "sse", "/sse"]
  ] as const) {
    it.live(`a real server over ${tag} reaches Ready, lists tools and answers a call`, () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const server = yield* everythingRemote(mode, port)
        const spec =
          tag === "http"
            ? McpSpec.Http.make({ url: `http://127.0.0.1:${port}${path}` })
            : McpSpec.Sse.make({ url: `http://127.0.0.1:${port}${path}` })
        const { toolset, close } = yield* open({ name: `everything-${tag}`, spec, policy: fastPolicy() })
        yield* toolset.start
        const status = yield* toolset.state
        assert.strictEqual(status.kind, `mcp-${tag}`)
        assert.isUndefined(status.pid)
        assert.isAtLeast(status.toolCount ?? 0, 10)
        const listing = yield* toolset.tools
        assert.isTrue(listing.complete)
        assert.include(textOf(yield* toolset.callTool("echo", { message: "over the wire" })), "over the wire")
        yield* close
        yield* server.stop
      })
    )
  }

  it.live(
    "a server restarted on the same port: the old session is rejected, the toolset reconnects, the call succeeds",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const first = yield* everythingRemote("streamableHttp", port)
        const { toolset, close } = yield* open({
          name: "restarting",
          spec: McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp` }),
          policy: fastPolicy()
        })
        yield* toolset.start
        assert.include(textOf(yield* toolset.callTool("echo", { message: "before" })), "before")
        yield* first.stop
        const second = yield* everythingRemote("streamableHttp", port)
        const result = yield* toolset.callTool("echo", { message: "after" })
        assert.include(textOf(result), "after")
        const status = yield* until(toolset, (s) => s.state === "Ready")
        assert.isAtLeast(status.restarts, 1)
        yield* close
        yield* second.stop
      })
  )

  it.live("a busy session piles no abort listeners on one signal, with or without a configured token", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { signals } = yield* fetchSignals
        const port = yield* freePort
        const server = yield* everythingRemote("streamableHttp", port)
        const url = `http://127.0.0.1:${port}/mcp`
        for (const spec of [
          McpSpec.Http.make({ url }),
          McpSpec.Http.make({ url, headers: { Authorization: "Bearer t" } })
        ]) {
          const { toolset, close } = yield* open({ name: "busy", spec, policy: fastPolicy() })
          yield* toolset.start
          for (let i = 0; i < 300; i++) yield* toolset.callTool("echo", { message: "again" })
          // fetch keeps a listener on its request's signal until the request is collected.
          const most = Math.max(...Array.from(signals, (signal) => getEventListeners(signal, "abort").length))
          assert.isBelow(most, 10)
          yield* close
          signals.clear()
        }
        yield* server.stop
      })
    )
  )

  it.live("a remote server that dies is noticed by the health probe, though the SDK reports nothing", () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const server = yield* everythingRemote("streamableHttp", port)
      const { toolset, close } = yield* open({
        name: "probed",
        spec: McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp` }),
        policy: fastPolicy({ health: { interval: "300ms", timeout: "1s", failures: 2 } })
      })
      yield* toolset.start
      yield* server.stop
      const noticed = yield* until(toolset, (s) => s.state !== "Ready")
      assert.include(["Degraded", "Restarting", "Failed"], noticed.state)
      yield* until(toolset, (s) => s.state === "Restarting" || s.state === "Failed")
      yield* close
    })
  )

  it.live(
    "callToolNow over HTTP answers at once; a call in flight on a hung server ends with its session, not at its deadline",
    () =>
      Effect.gen(function* () {
        const port = yield* freePort
        const server = yield* everythingRemote("streamableHttp", port)
        const { toolset, close } = yield* open({
          name: "now",
          spec: McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp` }),
          policy: fastPolicy({ call_timeout: "60s", health: { interval: "300ms", timeout: "1s", failures: 2 } })
        })
        yield* toolset.start
        const answered = yield* Effect.promise(
          () => toolset.callToolNow("echo", { message: "now" }) ?? Promise.reject()
        )
        assert.isTrue(Exit.isSuccess(answered))
        if (Exit.isSuccess(answered)) assert.include(textOf(answered.value), "now")
        // A stopped server keeps its connections open: the SDK never fails the request; the probe
        // ends the session, and a call that is not safe to send twice ends with it.
        process.kill(server.pid, "SIGSTOP")
        const started = Date.now()
        const ended = yield* Effect.promise(
          () => toolset.callToolNow("toggle-simulated-logging", {}) ?? Promise.reject()
        )
        const error = Exit.isFailure(ended) ? Cause.findErrorOption(ended.cause) : undefined
        assert.strictEqual(error?._tag === "Some" ? error.value._tag : undefined, "ServerCrashed")
        assert.isBelow(Date.now() - started, 15_000, "ended with the session, long before the 60 s deadline")
        yield* close
        yield* server.stop
      })
  )

  it.live("HTTP 401 with invalid_token is AuthRequired, permanent: no retry storm", () =>
    Effect.gen(function* () {
      const server = yield* unauthorized
      const { toolset, close } = yield* open({
        name: "auth",
        spec: McpSpec.Http.make({ url: `http://127.0.0.1:${server.port}/mcp` }),
        policy: fastPolicy()
      })
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "AuthRequired")
      const restarted = yield* Effect.flip(toolset.restart)
      assert.strictEqual(restarted._tag, "AuthRequired")
      // Nothing signals a retry that never comes, so this waits on the wall clock: longer than
      // fastPolicy's longest backoff, by which a retry would have reached the server.
      yield* Effect.sleep(noRetryWindow)
      assert.isAtMost(server.requests(), 4)
      yield* close
    })
  )

  it.live("header values never appear in errors or status", () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const { toolset, close } = yield* open({
        name: "secret",
        spec: McpSpec.Http.make({
          url: `http://127.0.0.1:${port}/mcp`,
          headers: { Authorization: "Bearer s3cr3t-token-value", "X-Api-Key": "k3y-value" }
        }),
        policy: fastPolicy()
      })
      const error = yield* Effect.flip(toolset.start)
      assert.strictEqual(error._tag, "ServerUnavailable")
      const status = yield* toolset.state
      for (const text of [error.message, JSON.stringify(status)]) {
        assert.notInclude(text, "s3cr3t-token-value")
        assert.notInclude(text, "k3y-value")
      }
      yield* close
    })
  )

  it("remote URLs are validated when a spec is decoded", () => {
    const decode = Schema.decodeUnknownExit(McpSpec.McpSpec)
    for (const url of ["ftp://example.com/mcp", "not a url", "/relative/mcp"]) {
      const exit = decode({ _tag: "http", url })
      assert.isTrue(Exit.isFailure(exit), url)
    }
    assert.isTrue(Exit.isSuccess(decode({ _tag: "sse", url: "https://example.com/sse" })))
  })

  it("remote sessions reconnect on a clean close and get a health probe unless the user chose otherwise", () => {
    const http = McpSpec.Http.make({ url: "http://127.0.0.1:1/mcp" })
    const resilient = McpToolset.effectivePolicy(http, fastPolicy())
    assert.strictEqual(resilient.restart, "always")
    assert.isDefined(resilient.health)
    assert.strictEqual(McpToolset.effectivePolicy(http, fastPolicy({ restart: "never" })).restart, "never")
    const stdio = McpSpec.Stdio.make({ command: "x", args: [] })
    assert.strictEqual(McpToolset.effectivePolicy(stdio, fastPolicy()).restart, "on_failure")
  })
})
