/**
 * The gateway over real fixture servers: an SDK client on one side, a registry (`ToolsetRegistry.make`) of real MCP
 * processes on the other, over streamable HTTP and over an in-memory pair standing in for stdio.
 */
import * as NodeHttp from "node:http"
import * as NodeNet from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, type McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import type { AgentConfig } from "@toolvisor/config"
import { ServerProcess } from "@toolvisor/core"
import { ToolsetRegistry } from "@toolvisor/runtime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Scope from "effect/Scope"
import { config, fixtureEntry } from "../../../test/support/Registry.ts"
import * as Gateway from "../src/Gateway.ts"

const sessions = { idle: Duration.minutes(10), max: 100 }
const localhost = { port: 0, host: "127.0.0.1", sessions }

/** A started registry in its own scope, so a test can close it and check what is left. */
const openRegistry = (entries: ReadonlyArray<AgentConfig.ToolsetConfig>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const registry = yield* ToolsetRegistry.make(config(entries)).pipe(Scope.provide(scope))
    yield* registry.start
    return { registry, close: Scope.close(scope, Exit.void) }
  })

/** An SDK client connected over `transport`, closed with the test's scope. */
const connectClient = (transport: Transport) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "gateway-test", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const httpClient = (url: string) => connectClient(new StreamableHTTPClientTransport(new URL(url)))

/**
 * An SDK client over streamable HTTP whose standalone SSE stream (the GET that carries server
 * notifications) is open: the server registers that stream before it answers the GET, so its 200
 * is the signal that a notification sent from now on reaches the client.
 */
const listeningClient = (url: string) =>
  Effect.gen(function* () {
    const listening = yield* Deferred.make<void>()
    const watched: FetchLike = async (input, init) => {
      const response = await fetch(input, init)
      if (init?.method === "GET" && response.ok) Deferred.doneUnsafe(listening, Effect.void)
      return response
    }
    const client = yield* connectClient(new StreamableHTTPClientTransport(new URL(url), { fetch: watched }))
    yield* Deferred.await(listening).pipe(Effect.timeout("10 seconds"))
    return client
  })

/** The text of a tool result's first content item. */
const textOf = (result: unknown): string => {
  const content = Predicate.hasProperty(result, "content") && Array.isArray(result.content) ? result.content : []
  const first: unknown = content[0]
  return Predicate.hasProperty(first, "text") && Predicate.isString(first.text) ? first.text : ""
}

const toolNames = (client: Client) =>
  Effect.promise(() => client.listTools()).pipe(Effect.map((r) => r.tools.map((t) => t.name)))

/** Whether something accepts TCP connections on the port. */
const accepts = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const socket = NodeNet.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
  })

/** The status of a raw POST, for what an SDK client would never send. */
const rawPost = (port: number, path: string, headers: Readonly<Record<string, string>>) =>
  Effect.callback<number | undefined>((resume) => {
    const request = NodeHttp.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }
      },
      (response) => {
        response.resume()
        resume(Effect.succeed(response.statusCode))
      }
    )
    request.once("error", () => resume(Effect.succeed(undefined)))
    request.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }))
  })

const twoToolsets = [fixtureEntry("one", { prefix: "one" }), fixtureEntry("two", { prefix: "two" })]

describe("Gateway", () => {
  it.live("over HTTP, lists the catalog's prefixed tools and routes a call, passing the result through", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry(twoToolsets)
      yield* Effect.addFinalizer(() => close)
      const { url, port } = yield* Gateway.listen(registry, { http: localhost })
      assert.isAbove(port, 0)
      assert.strictEqual(url, `http://127.0.0.1:${port}/mcp`)
      const client = yield* httpClient(url)

      const listed = yield* Effect.promise(() => client.listTools())
      const names = listed.tools.map((t) => t.name)
      assert.includeMembers(names, ["one_echo", "two_echo", "one_structured"])
      const echo = listed.tools.find((t) => t.name === "one_echo")
      assert.strictEqual(echo?.description, "Echoes its message")
      assert.deepStrictEqual(echo?.inputSchema.required, ["message"])
      assert.strictEqual(echo?.annotations?.readOnlyHint, true)
      assert.isDefined(listed.tools.find((t) => t.name === "one_structured")?.outputSchema)

      const echoed = yield* Effect.promise(() =>
        client.callTool({ name: "two_echo", arguments: { message: "routed" } })
      )
      assert.strictEqual(textOf(echoed), "routed")
      assert.notStrictEqual(echoed.isError, true)

      const structured = yield* Effect.promise(() => client.callTool({ name: "one_structured", arguments: {} }))
      assert.deepStrictEqual(structured.structuredContent, { sum: 3 })
      assert.deepStrictEqual(structured._meta, { trace: "abc" })

      const failed = yield* Effect.promise(() => client.callTool({ name: "one_fail", arguments: {} }))
      assert.strictEqual(failed.isError, true)
      assert.strictEqual(textOf(failed), "it went wrong")
    })
  )

  it.live("a call to a stopped toolset answers isError with the tag, promptly; an unknown tool is invalid params", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry(twoToolsets)
      yield* Effect.addFinalizer(() => close)
      const { url } = yield* Gateway.listen(registry, { http: localhost })
      const client = yield* httpClient(url)
      yield* registry.stopToolset("two")

      const started = Date.now()
      const stopped = yield* Effect.promise(() => client.callTool({ name: "two_echo", arguments: { message: "x" } }))
      assert.isBelow(Date.now() - started, 5_000)
      assert.strictEqual(stopped.isError, true)
      assert.match(textOf(stopped), /^(NotStarted|UnknownTool): \S/)

      const unknown = yield* Effect.promise(() =>
        client.callTool({ name: "no_such_tool", arguments: {} }).then(String, (error: McpError) => error.code)
      )
      assert.strictEqual(unknown, ErrorCode.InvalidParams)

      // The session survives typed failures: the other toolset still answers.
      const echoed = yield* Effect.promise(() => client.callTool({ name: "one_echo", arguments: { message: "still" } }))
      assert.strictEqual(textOf(echoed), "still")
    })
  )

  it.live("a catalog change reaches the client as tools/list_changed, and tools/list then has the new tool", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry(twoToolsets)
      yield* Effect.addFinalizer(() => close)
      const { url } = yield* Gateway.listen(registry, { http: localhost })
      const client = yield* listeningClient(url)
      const changed = yield* Deferred.make<void>()
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        Deferred.doneUnsafe(changed, Effect.void)
      })
      assert.notInclude(yield* toolNames(client), "one_dynamic_1")

      const added = yield* Effect.promise(() => client.callTool({ name: "one_add_tool", arguments: {} }))
      assert.strictEqual(textOf(added), "dynamic_1")
      yield* Deferred.await(changed).pipe(Effect.timeout("10 seconds"))
      assert.include(yield* toolNames(client), "one_dynamic_1")

      const dynamic = yield* Effect.promise(() => client.callTool({ name: "one_dynamic_1", arguments: {} }))
      assert.strictEqual(textOf(dynamic), "dynamic_1")
    })
  )

  it.live("stopping a toolset removes its tools and announces it; starting it again brings them back", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry(twoToolsets)
      yield* Effect.addFinalizer(() => close)
      const { url } = yield* Gateway.listen(registry, { http: localhost })
      const client = yield* listeningClient(url)
      let notices = 0
      const first = yield* Deferred.make<void>()
      const second = yield* Deferred.make<void>()
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        notices += 1
        Deferred.doneUnsafe(notices === 1 ? first : second, Effect.void)
      })

      yield* registry.stopToolset("two")
      yield* Deferred.await(first).pipe(Effect.timeout("10 seconds"))
      assert.notInclude(yield* toolNames(client), "two_echo")

      yield* registry.startToolset("two")
      yield* Deferred.await(second).pipe(Effect.timeout("10 seconds"))
      assert.include(yield* toolNames(client), "two_echo")
    })
  )

  it.live("over a stdio-like in-memory transport, lists and calls", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry([fixtureEntry("fx", { prefix: "fx" })])
      yield* Effect.addFinalizer(() => close)
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      yield* Gateway.connect(registry, serverSide)
      const client = yield* connectClient(clientSide)

      assert.includeMembers(yield* toolNames(client), ["fx_echo", "fx_pid", "fx_add_tool"])
      const echoed = yield* Effect.promise(() => client.callTool({ name: "fx_echo", arguments: { message: "piped" } }))
      assert.strictEqual(textOf(echoed), "piped")
      const unknown = yield* Effect.promise(() =>
        client.callTool({ name: "echo", arguments: { message: "x" } }).then(String, (error: McpError) => error.code)
      )
      assert.strictEqual(unknown, ErrorCode.InvalidParams)
    })
  )

  it.live("an unknown agent fails with a GatewayError before serving", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry([fixtureEntry("fx")])
      yield* Effect.addFinalizer(() => close)
      const error = yield* Effect.flip(Gateway.listen(registry, { agent: "nobody", http: localhost }))
      assert.strictEqual(error._tag, "GatewayError")
      assert.include(error.message, "nobody")
    })
  )

  it.live("a port in use is a GatewayError naming host:port", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry([fixtureEntry("fx")])
      yield* Effect.addFinalizer(() => close)
      const { port } = yield* Gateway.listen(registry, { http: localhost })
      const error = yield* Effect.flip(Gateway.listen(registry, { http: { ...localhost, port } }))
      assert.strictEqual(error._tag, "GatewayError")
      assert.include(error.message, `127.0.0.1:${port}`)
      assert.include(error.message, "already in use")
    })
  )

  it.live("HTTP requests outside the protocol are refused: foreign Host or Origin, other paths, unknown sessions", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry([fixtureEntry("fx")])
      yield* Effect.addFinalizer(() => close)
      const { port } = yield* Gateway.listen(registry, { http: localhost })
      assert.strictEqual(yield* rawPost(port, "/mcp", { host: "evil.example" }), 403)
      assert.strictEqual(yield* rawPost(port, "/mcp", { origin: "http://evil.example" }), 403)
      assert.strictEqual(yield* rawPost(port, "/other", {}), 404)
      assert.strictEqual(yield* rawPost(port, "/mcp", { "mcp-session-id": "no-such-session" }), 404)
      assert.strictEqual(yield* rawPost(port, "/mcp", {}), 400)
    })
  )

  it.live("closing the scope closes the listener, even with a client connected, and leaves no server alive", () =>
    Effect.gen(function* () {
      const { registry, close } = yield* openRegistry(twoToolsets)
      const gatewayScope = yield* Scope.make()
      const { url, port } = yield* Gateway.listen(registry, { http: localhost }).pipe(Scope.provide(gatewayScope))
      const client = new Client({ name: "gateway-test", version: "1.0.0" })
      yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
      assert.include(yield* toolNames(client), "one_echo")
      const pids = (yield* registry.snapshot).flatMap((s) => (s.pid === undefined ? [] : [s.pid]))
      assert.lengthOf(pids, 2)

      yield* Scope.close(gatewayScope, Exit.void).pipe(Effect.timeout("5 seconds"))
      assert.isFalse(yield* accepts(port))
      yield* close
      for (const pid of pids) assert.isFalse(ServerProcess.isAlive(pid), `pid ${pid} is still alive`)
      yield* Effect.promise(() => client.close())
    })
  )
})
