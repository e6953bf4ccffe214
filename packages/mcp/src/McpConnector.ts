/**
 * Opens an MCP session for the Supervisor: spawns the server through `ServerProcess` (stdio) or
 * reaches it over streamable HTTP or SSE, runs the `initialize` handshake and the first tool
 * listing, and reports when the session ends. Each session has its own tool and prompt caches,
 * so a reconnect never serves the old server's list; `list_changed` notifications invalidate
 * them, and a burst of notifications is coalesced into one refetch.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type Prompt,
  PromptListChangedNotificationSchema,
  type ServerCapabilities,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { LifecycleError, ServerProcess, type Session, type Toolset } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { PipeTransport } from "./internal/pipeTransport.ts"
import type * as McpSpec from "./McpSpec.ts"
import * as OAuthProvider from "./OAuthProvider.ts"
import * as TokenStore from "./TokenStore.ts"
import * as ToolCache from "./ToolCache.ts"

/** What requests run on: the SDK client and the session's caches. */
export interface McpSession {
  readonly client: Client
  readonly tools: ToolCache.ToolCache<ReadonlyArray<Toolset.Tool>, LifecycleError.LifecycleError>
  readonly prompts: ToolCache.ToolCache<ReadonlyArray<Prompt>, LifecycleError.LifecycleError>
  readonly capabilities: ServerCapabilities
}

export interface Options {
  readonly name: string
  readonly spec: McpSpec.McpSpec
  /** How we introduce ourselves in `initialize`. */
  readonly clientInfo?: { readonly name: string; readonly version: string }
  /** How long to wait for more `list_changed` notifications before refetching (default 20 ms). */
  readonly listChangedDebounce?: Duration.Input
}

/** Our own deadlines (startup_timeout, call_timeout) govern; the SDK's 60 s default must not fire first. */
export const noSdkTimeout = 2_147_483_647

const pageLimit = 1_000

/** A request to the server as an Effect: interruption aborts it, failures are classified. */
export const request = <A>(name: string, send: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({ try: send, catch: (cause) => OAuthProvider.classify(name, cause) })

interface Link {
  readonly transport: Transport
  /** Fails the handshake at once if the server goes away (a stdio process that exits). */
  readonly guard: <A, E, R>(
    effect: Effect.Effect<A, E | LifecycleError.LifecycleError, R>
  ) => Effect.Effect<A, E | LifecycleError.LifecycleError, R>
  readonly established: Effect.Effect<void>
  readonly ended: Effect.Effect<void, LifecycleError.LifecycleError>
  readonly pid?: number
}

export const make = (options: Options): Session.Connector<McpSession> => ({
  connect: Effect.gen(function* () {
    const { name, spec } = options
    const client = new Client(options.clientInfo ?? { name: "toolvisor", version: "0.1.0" }, { capabilities: {} })
    const closed = yield* Deferred.make<void, LifecycleError.LifecycleError>()
    client.onclose = () => Deferred.doneUnsafe(closed, Effect.void)
    const link = spec._tag === "stdio" ? yield* stdio(name, spec) : yield* remote(name, spec, client, closed)

    yield* Effect.addFinalizer(() => Effect.promise(() => client.close().catch(() => undefined)))
    yield* link.guard(request(name, (signal) => client.connect(link.transport, { signal, timeout: noSdkTimeout })))
    const capabilities = client.getServerCapabilities() ?? {}
    const tools = yield* ToolCache.make(
      capabilities.tools === undefined
        ? Effect.succeed([])
        : listAll(name, (cursor, signal) =>
            client
              .listTools(cursor === undefined ? undefined : { cursor }, { signal, timeout: noSdkTimeout })
              .then((page) => ({ items: page.tools, nextCursor: page.nextCursor }))
          )
    )
    const prompts = yield* ToolCache.make(
      capabilities.prompts === undefined
        ? Effect.succeed([])
        : listAll(name, (cursor, signal) =>
            client
              .listPrompts(cursor === undefined ? undefined : { cursor }, { signal, timeout: noSdkTimeout })
              .then((page) => ({ items: page.prompts, nextCursor: page.nextCursor }))
          )
    )
    yield* watchListChanges(client, tools, prompts, options.listChangedDebounce ?? "20 millis")
    const initialTools = yield* link.guard(tools.get)
    yield* link.established

    const server = client.getServerVersion()
    const instructions = client.getInstructions()
    return {
      handle: { client, tools, prompts, capabilities },
      // Over stdio the SDK rejects pending requests when the pipe closes; over HTTP it may not.
      selfBounded: spec._tag === "stdio",
      ended: link.ended,
      probe: request(name, (signal) => client.ping({ signal, timeout: noSdkTimeout })).pipe(Effect.asVoid),
      toolCount: initialTools.length,
      toolCountChanges: Stream.map(tools.stored, (list) => list.length),
      ...(link.pid === undefined ? {} : { pid: link.pid }),
      ...(server === undefined ? {} : { server: { name: server.name, version: server.version } }),
      ...(instructions === undefined ? {} : { instructions })
    } satisfies Session.Session<McpSession>
  })
})

const stdio = (name: string, spec: McpSpec.Stdio): Effect.Effect<Link, LifecycleError.ServerUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const proc = yield* ServerProcess.spawn(name, {
      command: spec.command,
      args: spec.args,
      ...(spec.env === undefined ? {} : { env: spec.env }),
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd })
    })
    const context = yield* Effect.context<never>()
    const transport = new PipeTransport(proc.stdout, proc.stdin, (line) =>
      Effect.runForkWith(context)(
        Effect.logWarning(
          `${name}: ignored a line on stdout that is not JSON-RPC: ${LifecycleError.redact(line.slice(0, 200))}`
        )
      )
    )
    return {
      transport,
      guard: proc.whileRunning,
      established: proc.established,
      ended: proc.exited,
      pid: proc.pid
    }
  })

/**
 * A remote link. The SDK's HTTP transports may report a dead server only as an error on their
 * event stream (or not at all), so a lost stream or a refused token ends the session here, and
 * the Supervisor's health probe covers the rest.
 */
const remote = (
  name: string,
  spec: McpSpec.Http | McpSpec.Sse,
  client: Client,
  closed: Deferred.Deferred<void, LifecycleError.LifecycleError>
): Effect.Effect<Link, never, Scope.Scope> =>
  Effect.gen(function* () {
    const url = new URL(spec.url)
    const options = {
      ...(spec.headers === undefined ? {} : { requestInit: { headers: { ...spec.headers } } }),
      ...(yield* oauthOptions(name, spec))
    }
    const transport =
      spec._tag === "http" ? new StreamableHTTPClientTransport(url, options) : new SSEClientTransport(url, options)
    client.onerror = (cause) => {
      const error = OAuthProvider.classify(name, cause)
      const fatal =
        LifecycleError.isPermanent(error) ||
        error._tag === "SessionMissing" ||
        /maximum reconnection attempts/i.test(error.message)
      if (fatal) Deferred.doneUnsafe(closed, Effect.fail(error))
    }
    if (transport instanceof StreamableHTTPClientTransport) {
      // Tell the server we are leaving, so it can free the session; best effort, briefly.
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => transport.terminateSession().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
      )
    }
    return {
      transport,
      // The SDK closes the client when a request fails; give the handshake's own error (refused,
      // 401, …) a moment to arrive before reporting the bare close.
      guard: (effect) =>
        Effect.raceFirst(
          effect,
          Deferred.await(closed).pipe(
            Effect.andThen(Effect.sleep("500 millis")),
            Effect.andThen(
              Effect.fail(
                new LifecycleError.TransportError({
                  toolset: name,
                  message: `${name}: the server closed the session during the handshake`
                })
              )
            )
          )
        ),
      established: Effect.void,
      ended: Deferred.await(closed)
    }
  })

/** OAuth discovery and token requests carry no deadline of their own in the SDK; docker-agent allows 5 s. */
const authRequestTimeout = 5_000

/**
 * `fetch` for a remote session's requests. The SDK's transports give every request the same
 * long-lived signal, and `fetch` keeps an abort listener on a request's signal until the request
 * is collected: a busy session piled up thousands on that one signal (and Node warned of a leak).
 * Each request gets a signal of its own that follows it (`AbortSignal.any`), which takes the
 * listener and goes with the request. A request without a signal gets `orElse`, if any.
 */
const requestFetch =
  (orElse?: () => AbortSignal): FetchLike =>
  (input, init) => {
    const signal = init?.signal ? AbortSignal.any([init.signal]) : orElse?.()
    return fetch(input, signal === undefined ? init : { ...init, signal })
  }

/**
 * Every remote server without a configured `Authorization` header gets an OAuth provider: a server
 * that answers 401 is then reached with the stored login, and one without a login fails with
 * AuthRequired at once. Never interactive: only `OAuth.login` opens a browser.
 */
const oauthOptions = (name: string, spec: McpSpec.Http | McpSpec.Sse) =>
  Effect.gen(function* () {
    const configured = Object.keys(spec.headers ?? {}).some((header) => header.toLowerCase() === "authorization")
    if (configured) return { fetch: requestFetch() }
    const provider = OAuthProvider.make({
      name,
      serverUrl: spec.url,
      oauth: spec.oauth,
      store: yield* TokenStore.Current,
      fetch: requestFetch(() => AbortSignal.timeout(authRequestTimeout))
    })
    return { authProvider: provider, fetch: provider.fetch }
  })

/** Reads every page; a server whose cursors never end is cut off rather than followed forever. */
const listAll = <A>(
  name: string,
  page: (
    cursor: string | undefined,
    signal: AbortSignal
  ) => Promise<{ readonly items: ReadonlyArray<A>; readonly nextCursor?: string | undefined }>
) =>
  Effect.gen(function* () {
    const items: Array<A> = []
    let cursor: string | undefined
    for (let pages = 0; pages < pageLimit; pages++) {
      const next = yield* request(name, (signal) => page(cursor, signal))
      items.push(...next.items)
      cursor = next.nextCursor
      if (cursor === undefined) return items
    }
    return yield* new LifecycleError.TransportError({
      toolset: name,
      message: `${name}: the server's listing did not end after ${pageLimit} pages`
    })
  })

/** Invalidates on `list_changed` and refetches once per burst, in the session's scope. */
const watchListChanges = (
  client: Client,
  tools: ToolCache.ToolCache<ReadonlyArray<Toolset.Tool>, LifecycleError.LifecycleError>,
  prompts: ToolCache.ToolCache<ReadonlyArray<Prompt>, LifecycleError.LifecycleError>,
  debounce: Duration.Input
) =>
  Effect.gen(function* () {
    const changed = yield* Queue.unbounded<"tools" | "prompts">()
    // Invalidate inside the callback, before the next message on the wire is handled; refetch
    // later, once per burst.
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      tools.invalidateUnsafe()
      Queue.offerUnsafe(changed, "tools")
    })
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
      prompts.invalidateUnsafe()
      Queue.offerUnsafe(changed, "prompts")
    })
    const refresh = Effect.gen(function* () {
      const first = yield* Queue.take(changed)
      yield* Effect.sleep(debounce)
      const more = yield* Queue.clear(changed)
      if (first === "tools" || more.includes("tools")) yield* Effect.ignore(tools.get)
    })
    yield* Effect.forkScoped(Effect.forever(refresh))
  })
