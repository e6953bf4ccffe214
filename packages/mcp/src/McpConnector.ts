/**
 * Opens an MCP session for the Supervisor: spawns the server through `ServerProcess` (stdio, with
 * its `envFile` read now) or reaches it over streamable HTTP or SSE (with its `headersHelper` run
 * now), runs the `initialize` handshake and the first tool
 * listing, and reports when the session ends. Each session has its own tool and prompt caches,
 * so a reconnect never serves the old server's list; `list_changed` notifications invalidate
 * them, and a burst of notifications is coalesced into one refetch.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  type ClientCapabilities,
  ErrorCode,
  type JSONRPCMessage,
  type LoggingLevel,
  LoggingMessageNotificationSchema,
  McpError,
  PaginatedResultSchema,
  type ProgressNotification,
  ProgressNotificationSchema,
  type Prompt,
  PromptListChangedNotificationSchema,
  type Resource,
  ResourceListChangedNotificationSchema,
  type ResourceTemplate,
  ResourceUpdatedNotificationSchema,
  type ServerCapabilities,
  type Tool,
  ToolListChangedNotificationSchema,
  ToolSchema
} from "@modelcontextprotocol/sdk/types.js"
import { LifecycleError, Redaction, ServerProcess, type Session, type Toolset } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as EnvFile from "./internal/envFile.ts"
import * as HeadersHelper from "./internal/headersHelper.ts"
import * as OAuthProvider from "./internal/oauthProvider.ts"
import { PipeTransport } from "./internal/pipeTransport.ts"
import * as RemoteFetch from "./internal/remoteFetch.ts"
import * as SchemaError from "./internal/schemaError.ts"
import * as SendGuard from "./internal/sendGuard.ts"
import * as TokenStore from "./internal/tokenStore.ts"
import * as ToolCache from "./internal/toolCache.ts"
import type * as McpSpec from "./McpSpec.ts"

type Cache<A> = ToolCache.ToolCache<ReadonlyArray<A>, LifecycleError.LifecycleError>

/** What requests run on: the SDK client and the session's caches. */
export interface McpSession {
  readonly client: Client
  readonly tools: Cache<Toolset.Tool>
  readonly prompts: Cache<Prompt>
  readonly resources: Cache<Resource>
  readonly resourceTemplates: Cache<ResourceTemplate>
  readonly capabilities: ServerCapabilities
  /** Routes the server's `notifications/progress` for a token to its listener, until `untrack`. */
  readonly progress: Progress
}

/** Routes the server's progress notifications to the call that asked for them, by progress token. */
export interface Progress {
  readonly track: (token: string, listener: (params: ProgressNotification["params"]) => void) => () => void
}

/** The listings besides tools, which a toolset keeps across restarts (its last-known ones). */
export interface Listings {
  readonly prompts: ReadonlyArray<Prompt>
  readonly resources: ReadonlyArray<Resource>
  readonly resourceTemplates: ReadonlyArray<ResourceTemplate>
}

/**
 * What the toolset above hears from each of its sessions, and gives each one: hooks called from
 * the SDK's callbacks, so they must not block. They outlive sessions, which is how listings,
 * subscriptions and log levels survive a restart.
 */
export interface Hooks {
  /** A `notifications/message` from the server. */
  readonly log?: (message: LogMessage) => void
  /** A subscribed resource may have changed: the server said so, or the session was replaced. */
  readonly resourceUpdated?: (uri: string, reason: "updated" | "reconnected") => void
  /** A fresh listing, read at connect time or after a `list_changed`. */
  readonly listed?: { readonly [K in keyof Listings]: (items: Listings[K]) => void }
  /**
   * The server said a listing changed (`list_changed`): called as the notification is handled,
   * before the fresh listing is read, so what was built from the old one can be dropped at once.
   */
  readonly listChanged?: (kind: keyof Listings) => void
  /** The resources to subscribe to on every new session. */
  readonly subscriptions?: () => Iterable<string>
  /** The level asked of the server with `logging/setLevel` on every new session. */
  readonly logLevel?: LoggingLevel
  /** Capabilities we declare and the handlers of the requests they let the server send us. */
  readonly provides?: (client: Client) => ClientCapabilities
}

/** One log message of the server, as its `notifications/message` said it. */
export interface LogMessage {
  readonly level: LoggingLevel
  readonly logger?: string | undefined
  readonly data: unknown
}

/** What the connector needs to open a session: the toolset's name, the server's spec, and optional client info, debounce and hooks. */
export interface Options {
  readonly name: string
  readonly spec: McpSpec.McpSpec
  /** How we introduce ourselves in `initialize`. */
  readonly clientInfo?: { readonly name: string; readonly version: string }
  /** How long to wait for more `list_changed` notifications before refetching (default 20 ms). */
  readonly listChangedDebounce?: Duration.Input
  readonly hooks?: Hooks
}

/** Our own deadlines (startup_timeout, call_timeout) govern; the SDK's 60 s default must not fire first. */
export const noSdkTimeout = 2_147_483_647

const pageLimit = 1_000

/**
 * Whether `cause` is the SDK's rejection of a request because its session closed. The server may
 * answer with the same code (-32000, JSON-RPC's generic "server error"); the SDK's own comes only
 * once the client has let go of its transport.
 */
export const closedUnder = (cause: unknown, client: Client): boolean =>
  cause instanceof McpError && cause.code === ErrorCode.ConnectionClosed && client.transport === undefined

/**
 * A health probe: `ping`, which any answer passes, an error too. A server that does not implement
 * `ping` answers "method not found" at once, alive, and was restarted every few probes for it.
 */
const ping = (client: Client, signal: AbortSignal): Promise<void> =>
  client.ping({ signal, timeout: noSdkTimeout }).then(
    () => undefined,
    (cause: unknown) => (cause instanceof McpError && !closedUnder(cause, client) ? undefined : Promise.reject(cause))
  )

/** A request to the server as an Effect: interruption aborts it, failures are classified. */
export const request = <A>(name: string, send: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({ try: send, catch: (cause) => classify(name, cause) })

/** A refused token store is a login to redo; anything else as the OAuth provider classifies it. */
const classify = (name: string, cause: unknown): LifecycleError.LifecycleError =>
  TokenStore.authRequired(name, cause) ?? OAuthProvider.classify(name, cause)

interface Link {
  readonly transport: Transport
  /** Fails the handshake at once if the server goes away (a stdio process that exits). */
  readonly guard: <A, E, R>(
    effect: Effect.Effect<A, E | LifecycleError.LifecycleError, R>
  ) => Effect.Effect<A, E | LifecycleError.LifecycleError, R>
  readonly established: Effect.Effect<void>
  readonly ended: Effect.Effect<void, LifecycleError.LifecycleError>
  readonly pid?: number
  /** What connecting read that the config did not hold (env file values, helper headers): secrets. */
  readonly secrets: ReadonlyArray<string>
}

/** A connector for a Supervisor: each connect spawns or dials the server and completes the MCP handshake. */
export const make = (options: Options): Session.Connector<McpSession> => ({
  connect: Effect.gen(function* () {
    const { name, spec } = options
    const hooks = options.hooks ?? {}
    const client = new Client(options.clientInfo ?? { name: "toolvisor", version: "0.1.0" }, { capabilities: {} })
    // Declared only for what the app provides, so a server never offers what we cannot answer.
    if (hooks.provides !== undefined) client.registerCapabilities(hooks.provides(client))
    const closed = yield* Deferred.make<void, LifecycleError.LifecycleError>()
    client.onclose = () => Deferred.doneUnsafe(closed, Effect.void)
    const link = spec._tag === "stdio" ? yield* stdio(name, spec) : yield* remote(name, spec, client, closed)
    // What connecting read (env file values, helper headers) joins the registry's secrets, so it is
    // masked wherever this toolset's output goes, and in this connection's own errors at once.
    // (A toolset built outside a registry has no shared redactor: its own errors are masked anyway.)
    const redactor = yield* Redaction.Current
    redactor.add(link.secrets)
    const own = Redaction.make(link.secrets)
    const masked = <A, R>(effect: Effect.Effect<A, LifecycleError.LifecycleError, R>) =>
      Effect.mapError(effect, (error) => Redaction.error(error, (text) => redactor.text(own.values(text))))

    yield* Effect.addFinalizer(() => Effect.promise(() => client.close().catch(() => undefined)))
    SendGuard.install(link.transport)
    yield* masked(
      link.guard(request(name, (signal) => client.connect(link.transport, { signal, timeout: noSdkTimeout })))
    )
    const capabilities = client.getServerCapabilities() ?? {}
    const cache = <A>(offered: unknown, page: Page<A>, key: (item: A) => string) =>
      ToolCache.make(offered === undefined ? Effect.succeed<ReadonlyArray<A>>([]) : listAll(name, page, key))
    const named = <A extends { readonly name: string }>(item: A) => item.name
    const at = (cursor: string | undefined) => (cursor === undefined ? undefined : { cursor })
    const opts = (signal: AbortSignal) => ({ signal, timeout: noSdkTimeout })
    const tools = yield* cache<Tool>(
      capabilities.tools,
      (cursor, signal) =>
        client.listTools(at(cursor), opts(signal)).then(
          (page) => ({ items: page.tools, nextCursor: page.nextCursor }),
          (cause: unknown) =>
            SchemaError.firstIssue(cause) === undefined
              ? Promise.reject(cause)
              : toolsOneByOne(client, at(cursor), opts(signal))
        ),
      named
    )
    const prompts = yield* cache(
      capabilities.prompts,
      (cursor, signal) =>
        client
          .listPrompts(at(cursor), opts(signal))
          .then((page) => ({ items: page.prompts, nextCursor: page.nextCursor })),
      named
    )
    const resources = yield* cache(
      capabilities.resources,
      (cursor, signal) =>
        client
          .listResources(at(cursor), opts(signal))
          .then((page) => ({ items: page.resources, nextCursor: page.nextCursor })),
      (resource) => resource.uri
    )
    const resourceTemplates = yield* cache(
      capabilities.resources,
      (cursor, signal) =>
        client
          .listResourceTemplates(at(cursor), opts(signal))
          .then(
            (page) => ({ items: page.resourceTemplates, nextCursor: page.nextCursor }),
            cursor === undefined ? noTemplates : undefined
          ),
      (template) => template.uriTemplate
    )
    const progress = routeProgress(link.transport)
    const session: McpSession = { client, tools, prompts, resources, resourceTemplates, capabilities, progress }
    yield* watchListChanges(session, options.listChangedDebounce ?? "20 millis", hooks.listChanged)
    yield* watchServer(name, session, hooks)
    const initialTools = yield* masked(link.guard(tools.get))
    yield* link.established

    const server = client.getServerVersion()
    const instructions = client.getInstructions()
    return {
      handle: session,
      // Over stdio the SDK rejects pending requests when the pipe closes; over HTTP it may not.
      selfBounded: spec._tag === "stdio",
      ended: masked(link.ended),
      probe: masked(request(name, (signal) => ping(client, signal))),
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
    // The `envFile`, read now (at each start), under the server's own `env`.
    const fromFile = spec.envFile === undefined ? {} : yield* EnvFile.read(name, spec.envFile)
    const env = spec.envFile === undefined ? spec.env : { ...fromFile, ...spec.env }
    const proc = yield* ServerProcess.spawn(name, {
      command: spec.command,
      args: spec.args,
      ...(env === undefined ? {} : { env }),
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd })
    })
    const context = yield* Effect.context<never>()
    const warn = (message: string) => Effect.runForkWith(context)(Effect.logWarning(message))
    const transport = new PipeTransport(
      proc.stdout,
      proc.stdin,
      PipeTransport.warnings((message) => warn(`${name}: ${message}`), { stream: "stdout", from: "the server" })
    )
    return {
      transport,
      guard: proc.whileRunning,
      established: proc.established,
      // An exit with our requests unanswered is no clean end, whatever its code: the server left a
      // caller waiting (the SDK's servers exit 0 when a line past their read limit closes them).
      ended: Effect.andThen(
        proc.ended,
        Effect.suspend(() =>
          transport.unanswered === 0
            ? Effect.void
            : Effect.fail(
                new LifecycleError.ServerCrashed({
                  toolset: name,
                  message: `${name}: the server exited with ${transport.unanswered} ${transport.unanswered === 1 ? "request" : "requests"} unanswered`,
                  exitCode: 0,
                  signal: null,
                  stderr: proc.stderrTail()
                })
              )
        )
      ),
      pid: proc.pid,
      secrets: Object.values(fromFile)
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
): Effect.Effect<Link, LifecycleError.ServerUnavailable, Scope.Scope> =>
  Effect.gen(function* () {
    const url = new URL(spec.url)
    const helped = spec.headersHelper === undefined ? {} : yield* helperHeaders(name, spec.headersHelper)
    const headers =
      spec.headers === undefined && spec.headersHelper === undefined ? undefined : { ...spec.headers, ...helped }
    const options = {
      ...(headers === undefined ? {} : { requestInit: { headers } }),
      ...(yield* oauthOptions(name, spec, headers))
    }
    const transport =
      spec._tag === "http" ? new StreamableHTTPClientTransport(url, options) : new SSEClientTransport(url, options)
    client.onerror = (cause) => {
      const error = classify(name, cause)
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
      ended: Deferred.await(closed),
      // Taken apart as a configured credential header is: a server may quote the bare token.
      secrets: HeadersHelper.secretsOf(helped)
    }
  })

/**
 * What the `headersHelper` prints, run now (at each connect); it wins over the configured headers.
 * Its values live only in this connection's request headers, and are masked in its errors.
 */
const helperHeaders = (name: string, helper: HeadersHelper.Spec) =>
  Effect.mapError(HeadersHelper.run(name, helper), HeadersHelper.unavailable)

/**
 * Every remote server without a configured `Authorization` header gets an OAuth provider: a server
 * that answers 401 is then reached with the stored login, and one without a login fails with
 * AuthRequired at once. Never interactive: only `OAuth.login` opens a browser.
 */
const oauthOptions = (
  name: string,
  spec: McpSpec.Http | McpSpec.Sse,
  headers: Readonly<Record<string, string>> | undefined
) =>
  Effect.gen(function* () {
    const configured = Object.keys(headers ?? {}).some((header) => header.toLowerCase() === "authorization")
    if (configured) return { fetch: RemoteFetch.make() }
    const provider = OAuthProvider.make({
      name,
      serverUrl: spec.url,
      oauth: spec.oauth,
      store: yield* TokenStore.Current,
      redactor: yield* Redaction.Current,
      fetch: RemoteFetch.forAuth()
    })
    return { authProvider: provider, fetch: provider.fetch }
  })

/** One page of a listing, from a cursor; `invalid`: the names of items MCP's schema rejects, left out. */
type Page<A> = (
  cursor: string | undefined,
  signal: AbortSignal
) => Promise<{
  readonly items: ReadonlyArray<A>
  readonly nextCursor?: string | undefined
  readonly invalid?: ReadonlyArray<string>
}>

/**
 * A page of tools the SDK refused whole because one tool in it is malformed (a `null` input
 * schema, `required: "a"`), read again item by item: the valid tools are kept and the others left
 * out by name. Refused whole, one bad tool took every tool of its server with it, restart after
 * restart. (The SDK learns nothing of this page's tools, so it does not check their structured
 * output; the gateway and the adapters pass it on as the server gave it.)
 */
const toolsOneByOne = async (
  client: Client,
  params: { readonly cursor: string } | undefined,
  options: { readonly signal: AbortSignal; readonly timeout: number }
) => {
  const page = await client.request({ method: "tools/list", params }, PaginatedResultSchema, options)
  const listed: unknown = "tools" in page ? page.tools : undefined
  const items: Array<Tool> = []
  const invalid: Array<string> = []
  for (const item of Array.isArray(listed) ? listed : []) {
    const tool = ToolSchema.safeParse(item)
    if (tool.success) items.push(tool.data)
    else invalid.push(typeof item === "object" && item !== null && "name" in item ? String(item.name) : "")
  }
  return { items, nextCursor: page.nextCursor, invalid }
}

/**
 * Many servers declare resources but no templates, and answer `resources/templates/list` with
 * "method not found": that is an empty listing, cached like any other, not a failure to ask
 * again about on every read.
 */
const noTemplates = (cause: unknown): Promise<{ readonly items: ReadonlyArray<ResourceTemplate> }> =>
  cause instanceof McpError && cause.code === ErrorCode.MethodNotFound
    ? Promise.resolve({ items: [] })
    : Promise.reject(cause)

/** The most items a listing keeps: far more than any agent can use, far less than what strains this process. */
export const maxListing = 10_000

/**
 * The most a listing keeps, in characters of JSON. A real tool's definition is a few KB; a hostile
 * server's 4 MB descriptions, page after page, grew this process past its heap and killed it, and
 * every other toolset with it.
 */
export const maxListingChars = 32 * 1024 * 1024

/** The most one listed item (a tool, a prompt, a resource) may weigh, in characters of JSON: heavier ones are left out. */
export const maxItemChars = 1024 * 1024

/**
 * Reads every page; a server whose cursors never end is cut off rather than followed forever.
 * Each name (or URI) is kept once, the first listed, and none empty: a server that lists a tool
 * twice offered two tools to count and one to call. Past `maxListing` items or `maxListingChars`
 * the rest is left out, and so is an item heavier than `maxItemChars`. What was left out is
 * logged with the listing, once per read.
 */
const listAll = <A>(name: string, page: Page<A>, key: (item: A) => string) =>
  Effect.gen(function* () {
    const items: Array<A> = []
    const seen = new Set<string>()
    const dropped = {
      twice: new Set<string>(),
      unnamed: 0,
      past: 0,
      heavy: new Set<string>(),
      invalid: new Set<string>()
    }
    let chars = 0
    const keep = (item: A) => {
      const k = key(item)
      if (k === "") dropped.unnamed += 1
      else if (seen.has(k)) dropped.twice.add(k)
      else if (items.length >= maxListing) dropped.past += 1
      else {
        const weight = JSON.stringify(item).length
        if (weight > maxItemChars) dropped.heavy.add(k)
        else if (chars + weight > maxListingChars) dropped.past += 1
        else {
          chars += weight
          seen.add(k)
          items.push(item)
        }
      }
    }
    let cursor: string | undefined
    for (let pages = 0; pages < pageLimit; pages++) {
      const next = yield* request(name, (signal) => page(cursor, signal))
      for (const item of next.items) keep(item)
      for (const invalid of next.invalid ?? []) dropped.invalid.add(invalid)
      cursor = next.nextCursor
      if (cursor === undefined) {
        yield* leftOut(name, dropped)
        return items
      }
    }
    return yield* new LifecycleError.TransportError({
      toolset: name,
      message: `${name}: the server's listing did not end after ${pageLimit} pages`
    })
  })

/** A few names, quoted as JSON (a server's names may hold anything). */
const quoted = (names: ReadonlyArray<string>) =>
  `${names
    .slice(0, 10)
    .map((n) => JSON.stringify(n.length > 100 ? `${n.slice(0, 100)}…` : n))
    .join(", ")}${names.length > 10 ? ", …" : ""}`

/** Says what a listing left out, if anything. */
const leftOut = (
  name: string,
  dropped: {
    readonly twice: ReadonlySet<string>
    readonly unnamed: number
    readonly past: number
    readonly heavy: ReadonlySet<string>
    readonly invalid: ReadonlySet<string>
  }
) => {
  const twice = [...dropped.twice]
  const heavy = [...dropped.heavy]
  const invalid = [...dropped.invalid]
  const parts = [
    twice.length === 0 ? "" : `listed ${twice.length} name(s) more than once, the first of each kept: ${quoted(twice)}`,
    dropped.unnamed === 0 ? "" : `listed ${dropped.unnamed} item(s) without a name, left out`,
    invalid.length === 0
      ? ""
      : `listed ${invalid.length} tool(s) whose definition MCP's schema rejects, left out: ${quoted(invalid)}`,
    heavy.length === 0
      ? ""
      : `listed ${heavy.length} item(s) of more than ${maxItemChars / 1024 / 1024} MiB each, left out: ${quoted(heavy)}`,
    dropped.past === 0
      ? ""
      : `listed ${dropped.past} item(s) past what a listing keeps (${maxListing} items, ${maxListingChars / 1024 / 1024} MiB), left out`
  ].filter((part) => part !== "")
  return parts.length === 0 ? Effect.void : Effect.logWarning(`${name}: the server ${parts.join("; ")}`)
}

/**
 * Progress of our calls, routed as each message arrives. The SDK hands notifications to their
 * handlers a microtask later but settles a response at once, so the last progress notification
 * of a call, sent just before its answer, would be dropped; here it reaches its listener first.
 */
const routeProgress = (transport: Transport): Progress => {
  const listeners = new Map<string, (params: ProgressNotification["params"]) => void>()
  const inner = transport.onmessage
  transport.onmessage = (message: JSONRPCMessage, extra) => {
    if ("method" in message && message.method === "notifications/progress" && listeners.size > 0) {
      const parsed = ProgressNotificationSchema.safeParse(message)
      const listener = parsed.success ? listeners.get(String(parsed.data.params.progressToken)) : undefined
      if (parsed.success && listener !== undefined) return listener(parsed.data.params)
    }
    inner?.(message, extra)
  }
  return {
    track: (token, listener) => {
      listeners.set(token, listener)
      return () => listeners.delete(token)
    }
  }
}

/** The listings a `list_changed` notification invalidates; resources and templates change together. */
const listChanges = [
  [ToolListChangedNotificationSchema, ["tools"]],
  [PromptListChangedNotificationSchema, ["prompts"]],
  [ResourceListChangedNotificationSchema, ["resources", "resourceTemplates"]]
] as const

type Kind = "tools" | keyof Listings

/** Invalidates on `list_changed` and refetches once per burst, in the session's scope. */
const watchListChanges = (
  session: McpSession,
  debounce: Duration.Input,
  heard: ((kind: keyof Listings) => void) | undefined
) =>
  Effect.gen(function* () {
    const changed = yield* Queue.unbounded<Kind>()
    // Invalidate inside the callback, before the next message on the wire is handled; refetch
    // later, once per burst.
    for (const [schema, kinds] of listChanges) {
      session.client.setNotificationHandler(schema, () => {
        for (const kind of kinds) {
          session[kind].invalidateUnsafe()
          Queue.offerUnsafe(changed, kind)
        }
        if (kinds[0] !== "tools") heard?.(kinds[0])
      })
    }
    const refresh = Effect.gen(function* () {
      const first = yield* Queue.take(changed)
      yield* Effect.sleep(debounce)
      const kinds = new Set([first, ...(yield* Queue.clear(changed))])
      yield* Effect.forEach(kinds, (kind) => Effect.ignore(session[kind].get), { discard: true })
    })
    yield* Effect.forkScoped(Effect.forever(refresh))
  })

/**
 * What the session tells the toolset and what the toolset asks of each new session: log
 * messages, resource updates, fresh listings (read at once, in the background, so a restart has
 * something to keep), the log level, and the subscriptions of the sessions before it.
 */
const watchServer = (name: string, session: McpSession, hooks: Hooks) =>
  Effect.gen(function* () {
    const { client, capabilities } = session
    const { log, resourceUpdated, listed } = hooks
    if (log !== undefined) {
      client.setNotificationHandler(LoggingMessageNotificationSchema, (message) =>
        log({ level: message.params.level, logger: message.params.logger, data: message.params.data })
      )
    }
    if (resourceUpdated !== undefined) {
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (message) =>
        resourceUpdated(message.params.uri, "updated")
      )
    }
    if (listed !== undefined) {
      /** Tells the toolset of every listing stored, and reads the first one now, in the background. */
      const follow = <A>(cache: Cache<A>, offered: unknown, tell: (items: ReadonlyArray<A>) => void) =>
        offered === undefined
          ? Effect.void
          : Effect.andThen(
              Effect.forkScoped(Stream.runForEach(cache.stored, (items) => Effect.sync(() => tell(items)))),
              Effect.forkScoped(Effect.ignore(cache.get))
            )
      yield* follow(session.prompts, capabilities.prompts, listed.prompts)
      yield* follow(session.resources, capabilities.resources, listed.resources)
      yield* follow(session.resourceTemplates, capabilities.resources, listed.resourceTemplates)
    }
    if (hooks.logLevel !== undefined && capabilities.logging !== undefined) {
      const level = hooks.logLevel
      yield* request(name, (signal) => client.setLoggingLevel(level, { signal, timeout: noSdkTimeout })).pipe(
        Effect.catch((error) => Effect.logWarning(`${name}: the server refused log level ${level}: ${error.message}`))
      )
    }
    const subscribed = capabilities.resources?.subscribe === true ? [...(hooks.subscriptions?.() ?? [])] : []
    yield* Effect.forEach(
      subscribed,
      (uri) =>
        request(name, (signal) => client.subscribeResource({ uri }, { signal, timeout: noSdkTimeout })).pipe(
          // The resource may have changed while no session listened; a URI the new server refuses is logged.
          Effect.tap(() => Effect.sync(() => resourceUpdated?.(uri, "reconnected"))),
          Effect.catch((error) => Effect.logWarning(`${name}: could not subscribe again to ${uri}: ${error.message}`))
        ),
      { discard: true }
    )
  })
