/**
 * The MCP surfaces besides tools, on a supervised session: prompts, resources and their
 * templates, completions, resource subscriptions and the server's log messages. Supervision is
 * what they add to the SDK's client: listings outlive a restart (incomplete, with the items last
 * seen), a request made while the server restarts waits for Ready within `call_timeout` like a
 * tool call, subscriptions are made again on every new session, and log messages of every
 * session arrive on one stream.
 */
import type {
  CompleteRequest,
  CompleteResult,
  GetPromptResult,
  LoggingLevel,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate
} from "@modelcontextprotocol/sdk/types.js"
import { Deadline, LifecycleError, State, type Supervisor, type Toolset } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as PubSub from "effect/PubSub"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SendNow from "./internal/sendNow.ts"
import type * as McpConnector from "./McpConnector.ts"

/** The server answered a request (a prompt, a resource, a completion) with an error; the session is fine. */
export class RequestFailed extends Schema.TaggedError<RequestFailed>()("McpRequestFailed", {
  toolset: Schema.String,
  /** The MCP method, e.g. `resources/read`. */
  method: Schema.String,
  /** What it asked for: a prompt's name, a resource's URI. */
  subject: Schema.String,
  message: Schema.String,
  code: Schema.optionalKey(Schema.Number),
  cause: Schema.optional(Schema.Defect())
}) {}

/** A log message of the server (`notifications/message`), tagged with its toolset. */
export interface LogEvent extends McpConnector.LogMessage {
  readonly toolset: string
}

/**
 * A subscribed resource may have changed: the server said so (`updated`), or the session was
 * replaced after a restart and the resource was subscribed to again (`reconnected`): it may have
 * changed while no one listened.
 */
export interface ResourceUpdate {
  readonly toolset: string
  readonly uri: string
  readonly reason: "updated" | "reconnected"
}

/**
 * A listing of the toolset may have changed: the server said so (`list_changed`), or a fresh one
 * was read (after a `list_changed`, or on a new session). Resources and their templates change together.
 */
export interface ListingChange {
  readonly toolset: string
  readonly kind: "prompts" | "resources"
}

/** What a completion request names: a prompt's or a resource template's argument, and its value so far. */
export type CompleteParams = CompleteRequest["params"]

/** The values a server offers to complete an argument. */
export type Completion = CompleteResult["completion"]

/** How a request for a prompt, a resource or a completion can fail. */
export type SurfaceError = RequestFailed | LifecycleError.LifecycleError

/** Options of a request: `_meta` is passed to the server as is. */
export interface RequestOptions {
  readonly _meta?: { readonly [key: string]: unknown }
}

/** An MCP toolset's prompts, resources, subscriptions, completions and server logs. */
export interface Surfaces {
  /** The prompts; while the toolset restarts, the last-known ones, marked incomplete. */
  readonly prompts: Effect.Effect<Toolset.Listing<Prompt>, LifecycleError.LifecycleError>
  readonly getPrompt: (
    name: string,
    args?: { readonly [key: string]: string },
    options?: RequestOptions
  ) => Effect.Effect<GetPromptResult, SurfaceError>
  readonly resources: Effect.Effect<Toolset.Listing<Resource>, LifecycleError.LifecycleError>
  readonly resourceTemplates: Effect.Effect<Toolset.Listing<ResourceTemplate>, LifecycleError.LifecycleError>
  readonly readResource: (uri: string, options?: RequestOptions) => Effect.Effect<ReadResourceResult, SurfaceError>
  /**
   * `getPrompt` for hosts that live in Promises, when the toolset is live: sent at once, the
   * runtime entered only if it fails (recovered as `getPrompt` recovers). `undefined` means it is
   * not live now: `getPrompt` waits for it. `signal` cancels it.
   */
  readonly getPromptNow: (
    name: string,
    args?: { readonly [key: string]: string },
    options?: RequestOptions,
    signal?: AbortSignal
  ) => Promise<Exit.Exit<GetPromptResult, SurfaceError>> | undefined
  /** `readResource` sent at once, as `getPromptNow`. */
  readonly readResourceNow: (
    uri: string,
    options?: RequestOptions,
    signal?: AbortSignal
  ) => Promise<Exit.Exit<ReadResourceResult, SurfaceError>> | undefined
  /**
   * Subscribes to a resource for as long as the stream runs, on this session and every later
   * one; the subscription ends (and the server is told) when the last subscriber of the URI stops.
   */
  readonly subscribe: (uri: string) => Stream.Stream<ResourceUpdate, SurfaceError>
  readonly complete: (params: CompleteParams) => Effect.Effect<Completion, SurfaceError>
  /** The server's log messages from now on, of every session. */
  readonly logs: Stream.Stream<LogEvent>
  /**
   * Moves each time a listing may have changed, as `listingChanges` says it: whatever was built
   * from the listings (catalogs, routes) holds while it stays. Read synchronously, on every request.
   */
  readonly listingsVersion: () => number
  /** Each listing that may have changed, from now on, of every session. */
  readonly listingChanges: Stream.Stream<ListingChange>
}

/** What the surfaces share with the toolset: the hooks its connector gives every session. */
export interface Made {
  readonly surfaces: Surfaces
  readonly hooks: McpConnector.Hooks
}

/** What the surfaces of one toolset are built from. */
export interface Options {
  readonly name: string
  readonly logLevel?: LoggingLevel | undefined
  /** How a failed request is classified; the toolset's own rules (see `McpToolset`). */
  readonly failure: (
    subject: string,
    cause: unknown,
    deadline: Deadline.Deadline | undefined,
    session: McpConnector.McpSession
  ) => Toolset.ToolCallFailed | LifecycleError.LifecycleError
  readonly remote: boolean
  readonly provides?: McpConnector.Hooks["provides"]
}

/** Builds the surfaces before the Supervisor, so their hooks can be given to its connector. */
export const make = (options: Options): Effect.Effect<Made & Bind, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { name } = options
    const logs = yield* PubSub.sliding<LogEvent>(1_024)
    const updates = yield* PubSub.unbounded<ResourceUpdate>()
    const changes = yield* PubSub.sliding<ListingChange>(1_024)
    let listingsVersion = 0
    /** Called from the SDK's callbacks: moves the version before anything else can read a listing. */
    const changed = (kind: ListingChange["kind"]) => {
      listingsVersion += 1
      PubSub.publishUnsafe(changes, { toolset: name, kind })
    }
    /** Subscribers per URI: the server is subscribed while there is one. */
    const subscribers = new Map<string, number>()
    const kept = {
      prompts: keeper<Prompt>(),
      resources: keeper<Resource>(),
      resourceTemplates: keeper<ResourceTemplate>()
    }
    let supervisor: Supervisor.Supervisor<McpConnector.McpSession> | undefined

    const hooks: McpConnector.Hooks = {
      log: (message) => PubSub.publishUnsafe(logs, { toolset: name, ...message }),
      resourceUpdated: (uri, reason) => {
        if (subscribers.has(uri)) PubSub.publishUnsafe(updates, { toolset: name, uri, reason })
      },
      listed: {
        prompts: (items) => {
          kept.prompts.set(items)
          changed("prompts")
        },
        resources: (items) => {
          kept.resources.set(items)
          changed("resources")
        },
        resourceTemplates: (items) => {
          kept.resourceTemplates.set(items)
          changed("resources")
        }
      },
      listChanged: (kind) => changed(kind === "prompts" ? "prompts" : "resources"),
      subscriptions: () => subscribers.keys(),
      ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
      ...(options.provides === undefined ? {} : { provides: options.provides })
    }

    const bound = Effect.suspend(() =>
      supervisor === undefined
        ? Effect.fail(LifecycleError.notStarted(name, "not bound to a supervisor"))
        : Effect.succeed(supervisor)
    )

    /** Runs a failed fast request's recovery: in the context the surfaces were made in. */
    const runExit = Effect.runPromiseExitWith(yield* Effect.context<never>())

    /**
     * A read-only request on the live session (waiting for Ready within the deadline). It is safe
     * to send twice, so one that met a lost session is sent once more on the next session.
     */
    const request = <A>(ask: Ask<A>): Effect.Effect<A, SurfaceError> =>
      Effect.flatMap(bound, (supervisor) => attempt(supervisor, ask, true))

    const attempt = <A>(
      supervisor: Supervisor.Supervisor<McpConnector.McpSession>,
      ask: Ask<A>,
      retry: boolean
    ): Effect.Effect<A, SurfaceError | Supervisor.UseError> =>
      supervisor.use((session) =>
        Effect.withFiber((fiber) => {
          const deadline = fiber.getRef(Deadline.Current)
          return Effect.tryPromise({
            try: (signal) => ask.send(session, SendNow.sdkOptions(deadline, signal)),
            catch: (cause) => failed(ask, cause, deadline, session)
          }).pipe(Effect.catch((error) => (retry ? again(supervisor, ask, session, error) : Effect.fail(error))))
        })
      )

    /** After a failed first attempt: a lost session is told to the Supervisor and the request sent on the next one. */
    const again = <A>(
      supervisor: Supervisor.Supervisor<McpConnector.McpSession>,
      ask: Ask<A>,
      session: McpConnector.McpSession,
      error: SurfaceError
    ): Effect.Effect<A, SurfaceError | Supervisor.UseError> =>
      isLoss(error, options.remote)
        ? Effect.andThen(
            // Under the request's deadline, as a tool call's recovery is: one budget for the whole request.
            Deadline.bound(name)(
              supervisor.lost(session, options.remote && error._tag !== "McpRequestFailed" ? error : undefined)
            ),
            attempt(supervisor, ask, false)
          )
        : Effect.fail(error)

    /** The server's answer is the caller's business (`RequestFailed`); anything else is a lifecycle failure. */
    const failed = <A>(
      ask: Ask<A>,
      cause: unknown,
      deadline: Deadline.Deadline | undefined,
      session: McpConnector.McpSession
    ): SurfaceError => {
      const error = options.failure(ask.subject, cause, deadline, session)
      return error._tag === "ToolCallFailed"
        ? new RequestFailed({
            toolset: name,
            method: ask.method,
            subject: ask.subject,
            message: error.message,
            ...(error.code === undefined ? {} : { code: error.code }),
            cause: error.cause
          })
        : error
    }

    /**
     * `request` outside the runtime, as a tool call is (`McpToolset.callToolNow`): sent at once on
     * the live session under `call_timeout`, the runtime entered only to recover from a failure
     * (the same resend on the next session); `undefined` while the toolset is not live.
     */
    const requestNow = <A>(ask: Ask<A>, signal: AbortSignal | undefined) => {
      const now = supervisor?.liveNow()
      if (supervisor === undefined || now === undefined) return undefined
      const { callTimeout } = supervisor.policy
      const deadline = callTimeout === undefined ? undefined : Deadline.after(Duration.toMillis(callTimeout))
      const live = supervisor
      return SendNow.settle(now, ask.send(now.handle, SendNow.sdkOptions(deadline, signal)), {
        signal,
        succeeded: (answer: A) => answer,
        failure: (cause) => failed(ask, cause, deadline, now.handle),
        recover: (error) => {
          const recovered = again(live, ask, now.handle, error)
          return runExit(
            deadline === undefined ? recovered : Effect.provideService(recovered, Deadline.Current, deadline)
          )
        }
      })
    }

    /** Listings of the live session, or the last-known ones (incomplete) while it comes back. */
    const listing = <A>(
      last: Keeper<A>,
      read: (session: McpConnector.McpSession) => Effect.Effect<ReadonlyArray<A>, LifecycleError.LifecycleError>
    ): Effect.Effect<Toolset.Listing<A>, LifecycleError.LifecycleError> =>
      Effect.flatMap(bound, (supervisor) =>
        Effect.gen(function* () {
          const status = yield* supervisor.state
          if (!State.isUsable(status.state)) {
            const reason = LifecycleError.notStarted(name, `not ready (${status.state})`)
            return { complete: false as const, items: State.isTerminal(status.state) ? [] : last.get(), reason }
          }
          const items = yield* supervisor.use(read)
          last.set(items)
          return { complete: true as const, items }
        })
      ).pipe(
        Effect.catchTag("NotStarted", (reason) =>
          Effect.succeed({ complete: false as const, items: last.get(), reason })
        )
      )

    const meta = (options: RequestOptions | undefined) =>
      options?._meta === undefined ? {} : { _meta: { ...options._meta } }

    const subscribeNow = (uri: string, method: "subscribe" | "unsubscribe") =>
      request({
        method: `resources/${method}`,
        subject: uri,
        send: (session, sdk) =>
          session.capabilities.resources?.subscribe === true
            ? method === "subscribe"
              ? session.client.subscribeResource({ uri }, sdk)
              : session.client.unsubscribeResource({ uri }, sdk)
            : Promise.resolve({})
      })

    const promptAsk = (prompt: string, args: { readonly [key: string]: string } = {}, options?: RequestOptions) => ({
      method: "prompts/get",
      subject: prompt,
      send: (session: McpConnector.McpSession, sdk: SendNow.SdkOptions) =>
        session.client.getPrompt({ name: prompt, arguments: { ...args }, ...meta(options) }, sdk)
    })

    const resourceAsk = (uri: string, options?: RequestOptions) => ({
      method: "resources/read",
      subject: uri,
      send: (session: McpConnector.McpSession, sdk: SendNow.SdkOptions) =>
        session.client.readResource({ uri, ...meta(options) }, sdk)
    })

    const subscribe = (uri: string): Stream.Stream<ResourceUpdate, SurfaceError> =>
      Stream.unwrap(
        Effect.gen(function* () {
          const updatesOf = yield* PubSub.subscribe(updates)
          const count = subscribers.get(uri) ?? 0
          subscribers.set(uri, count + 1)
          yield* Effect.addFinalizer(() =>
            Effect.suspend(() => {
              const left = (subscribers.get(uri) ?? 1) - 1
              if (left > 0) {
                subscribers.set(uri, left)
                return Effect.void
              }
              subscribers.delete(uri)
              return Effect.ignore(subscribeNow(uri, "unsubscribe"))
            })
          )
          if (count === 0) {
            yield* Effect.onError(subscribeNow(uri, "subscribe"), () => Effect.sync(() => subscribers.delete(uri)))
          }
          return Stream.fromSubscription(updatesOf).pipe(Stream.filter((update) => update.uri === uri))
        })
      )

    const surfaces: Surfaces = {
      prompts: listing(kept.prompts, (session) => session.prompts.get),
      getPrompt: (prompt, args, options) => request(promptAsk(prompt, args, options)),
      getPromptNow: (prompt, args, options, signal) => requestNow(promptAsk(prompt, args, options), signal),
      resources: listing(kept.resources, (session) => session.resources.get),
      resourceTemplates: listing(kept.resourceTemplates, (session) => session.resourceTemplates.get),
      readResource: (uri, options) => request(resourceAsk(uri, options)),
      readResourceNow: (uri, options, signal) => requestNow(resourceAsk(uri, options), signal),
      subscribe,
      complete: (params) =>
        request({
          method: "completion/complete",
          subject: params.ref.type === "ref/prompt" ? params.ref.name : params.ref.uri,
          send: (s, sdk) => s.client.complete(params, sdk).then((result) => result.completion)
        }),
      logs: Stream.fromPubSub(logs),
      listingsVersion: () => listingsVersion,
      listingChanges: Stream.fromPubSub(changes)
    }
    return {
      surfaces,
      hooks,
      bind: (bound) => {
        supervisor = bound
      }
    }
  })

/** The last listing seen of one kind, kept across sessions. */
interface Keeper<A> {
  readonly get: () => ReadonlyArray<A>
  readonly set: (items: ReadonlyArray<A>) => void
}

const keeper = <A>(): Keeper<A> => {
  let items: ReadonlyArray<A> = []
  return {
    get: () => items,
    set: (next) => {
      items = next
    }
  }
}

/** One read-only request: its MCP method, what it names, and how it is sent on a session. */
interface Ask<A> {
  readonly method: string
  readonly subject: string
  readonly send: (session: McpConnector.McpSession, options: SendNow.SdkOptions) => Promise<A>
}

/** Attaches the surfaces to the toolset's Supervisor once it exists. */
export interface Bind {
  readonly bind: (supervisor: Supervisor.Supervisor<McpConnector.McpSession>) => void
}

/**
 * A failure that says the session is gone, so a read-only request may be sent on the next one:
 * as `McpToolset` recovers a call that is safe to resend (a stdio session that closed under a
 * request fails it with a transport error before the Supervisor has seen the crash).
 */
const isLoss = (error: SurfaceError, remote: boolean): boolean =>
  error._tag === "SessionMissing" ||
  error._tag === "ServerCrashed" ||
  error._tag === "TransportError" ||
  (remote && error._tag === "ServerUnavailable")
