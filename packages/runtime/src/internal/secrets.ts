/**
 * A toolset whose every output goes through its `Redactor`: status snapshots (the last error,
 * the server's instructions), its server's stderr, listings (descriptions a server may fill with its config), call
 * results (a server echoing its environment) and errors (an SDK quoting the URL it called). The
 * registry, the gateway, the status routes and the cluster see only the masked toolset, so no
 * output path can forget to mask; what it logs is masked on its way to every logger. Results cost nothing while no secret is known.
 */
import { type CallOrigin, Redaction, type State, type Toolset } from "@toolvisor/core"
import type { McpSurfaces } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"

/**
 * Each of `loggers`, its message masked first: a toolset's log lines quote its servers (a line on
 * stdout that is not JSON-RPC, an error they answered), and the producers only know the credential
 * shapes, not the values the redactor holds.
 */
export const logging = (
  loggers: ReadonlySet<Logger.Logger<unknown, unknown>>,
  redactor: Redaction.Redactor
): ReadonlySet<Logger.Logger<unknown, unknown>> =>
  new Set(
    Array.from(loggers, (logger) =>
      Logger.make((options) => logger.log({ ...options, message: logMessage(options.message, redactor) }))
    )
  )

const logMessage = (message: unknown, redactor: Redaction.Redactor): unknown =>
  typeof message === "string"
    ? redactor.text(message)
    : Array.isArray(message)
      ? message.map((part) => (typeof part === "string" ? redactor.text(part) : part))
      : message

/** A snapshot whose error message and server instructions are masked. */
export const snapshot = (s: State.StatusSnapshot, redactor: Redaction.Redactor): State.StatusSnapshot => {
  const lastError = s.lastError === undefined ? undefined : redactor.text(s.lastError.message)
  const instructions = s.instructions === undefined ? undefined : redactor.values(s.instructions)
  if (lastError === s.lastError?.message && instructions === s.instructions) return s
  return {
    ...s,
    ...(s.lastError === undefined || lastError === undefined
      ? {}
      : { lastError: { ...s.lastError, message: lastError } }),
    ...(instructions === undefined ? {} : { instructions })
  }
}

/** A tool result with every known secret masked: one pass per text, none while there are no secrets. */
export const result = (r: Toolset.ToolResult, redactor: Redaction.Redactor): Toolset.ToolResult =>
  redactor.isEmpty() ? r : Redaction.record(r, redactor.values)

/** A tool as listed, its name kept (it routes calls), the rest (description, schema texts) masked. */
const tool = (t: Toolset.Tool, redactor: Redaction.Redactor): Toolset.Tool => {
  const masked = Redaction.record(t, redactor.values)
  return masked === t ? t : { ...masked, name: t.name }
}

const listing = (l: Toolset.Listing<Toolset.Tool>, redactor: Redaction.Redactor): Toolset.Listing<Toolset.Tool> => {
  if (!l.complete) return { ...l, items: l.items.map((t) => tool(t, redactor)), reason: error(l.reason, redactor) }
  return redactor.isEmpty() ? l : { complete: true, items: l.items.map((t) => tool(t, redactor)) }
}

/** An error whose message, stderr and causes are masked (credential shapes too). */
export const error = <E extends object>(e: E, redactor: Redaction.Redactor): E => Redaction.error(e, redactor.text)

/** An exit of a request sent outside the runtime, masked as its Effect would be: the value as data, the error as a message. */
const exit = <A extends object, E extends object>(
  e: Exit.Exit<A, E>,
  redactor: Redaction.Redactor
): Exit.Exit<A, E> => {
  if (Exit.isFailure(e)) return Exit.mapError(e, (failure) => error(failure, redactor))
  const value = Redaction.record(e.value, redactor.values)
  return value === e.value ? e : Exit.succeed(value)
}

/** A request sent outside the runtime (`undefined`: not sent), whose exit is masked; nothing added while no secret is known. */
const maskedNow = <A extends object, E extends object>(
  sent: Promise<Exit.Exit<A, E>> | undefined,
  redactor: Redaction.Redactor
): Promise<Exit.Exit<A, E>> | undefined =>
  sent === undefined || redactor.isEmpty() ? sent : sent.then((e) => exit(e, redactor))

/** A call's options whose progress messages reach the listener masked. */
const callOptions = (
  options: Toolset.CallOptions | undefined,
  redactor: Redaction.Redactor
): Toolset.CallOptions | undefined => {
  const listener = options?.onProgress
  return listener === undefined || redactor.isEmpty()
    ? options
    : {
        ...options,
        onProgress: (p) => listener(p.message === undefined ? p : { ...p, message: redactor.text(p.message) })
      }
}

/**
 * The toolset seen through `redactor`. Every other field (an MCP toolset's prompts, an LSP
 * backend's spec) is kept, so the masked toolset stands in for the original everywhere.
 */
export const guard = <T extends Toolset.Toolset>(toolset: T, redactor: Redaction.Redactor): T => {
  const now = toolset.callToolNow
  return {
    ...toolset,
    start: Effect.mapError(toolset.start, (e) => error(e, redactor)),
    restart: Effect.mapError(toolset.restart, (e) => error(e, redactor)),
    state: Effect.map(toolset.state, (s) => snapshot(s, redactor)),
    changes: Stream.map(toolset.changes, (s) => snapshot(s, redactor)),
    events: Stream.map(toolset.events, (t) => ({ ...t, snapshot: snapshot(t.snapshot, redactor) })),
    tools: Effect.mapBoth(toolset.tools, {
      onFailure: (e) => error(e, redactor),
      onSuccess: (l) => listing(l, redactor)
    }),
    callTool: (name, args, options) =>
      Effect.mapBoth(toolset.callTool(name, args, callOptions(options, redactor)), {
        onFailure: (e) => error(e, redactor),
        onSuccess: (r) => result(r, redactor)
      }),
    ...(toolset.stderr === undefined
      ? {}
      : { stderr: Effect.map(toolset.stderr, (lines) => lines.map((line) => redactor.text(line))) }),
    ...(now === undefined
      ? {}
      : {
          callToolNow: (
            name: string,
            args: { readonly [key: string]: unknown },
            signal?: AbortSignal,
            origin?: CallOrigin.CallOrigin
          ) => maskedNow(now(name, args, signal, origin), redactor)
        })
  }
}

/** A listing whose items (and, while incomplete, its reason) are masked. */
const items = <A extends object>(l: Toolset.Listing<A>, redactor: Redaction.Redactor): Toolset.Listing<A> => {
  if (!l.complete) {
    return { ...l, items: l.items.map((i) => Redaction.record(i, redactor.values)), reason: error(l.reason, redactor) }
  }
  return redactor.isEmpty() ? l : { complete: true, items: l.items.map((i) => Redaction.record(i, redactor.values)) }
}

/** `Effect.mapBoth` with this module's masks: the value as data, the error as a message. */
const masked = <A extends object, E extends object, R>(
  effect: Effect.Effect<A, E, R>,
  redactor: Redaction.Redactor
): Effect.Effect<A, E, R> =>
  Effect.mapBoth(effect, {
    onFailure: (e) => error(e, redactor),
    onSuccess: (a) => (redactor.isEmpty() ? a : Redaction.record(a, redactor.values))
  })

/**
 * An MCP toolset's other surfaces seen through `redactor`, as `guard` sees its tools: prompts and
 * resources a server fills with what it read, completions, and its log messages.
 */
export const surfaces = (s: McpSurfaces.Surfaces, redactor: Redaction.Redactor): McpSurfaces.Surfaces => ({
  prompts: Effect.mapBoth(s.prompts, { onFailure: (e) => error(e, redactor), onSuccess: (l) => items(l, redactor) }),
  resources: Effect.mapBoth(s.resources, {
    onFailure: (e) => error(e, redactor),
    onSuccess: (l) => items(l, redactor)
  }),
  resourceTemplates: Effect.mapBoth(s.resourceTemplates, {
    onFailure: (e) => error(e, redactor),
    onSuccess: (l) => items(l, redactor)
  }),
  getPrompt: (name, args, options) => masked(s.getPrompt(name, args, options), redactor),
  getPromptNow: (name, args, options, signal) => maskedNow(s.getPromptNow(name, args, options, signal), redactor),
  readResource: (uri, options) => masked(s.readResource(uri, options), redactor),
  readResourceNow: (uri, options, signal) => maskedNow(s.readResourceNow(uri, options, signal), redactor),
  complete: (params) => masked(s.complete(params), redactor),
  subscribe: (uri) => Stream.mapError(s.subscribe(uri), (e) => error(e, redactor)),
  logs: Stream.map(s.logs, (event) => Redaction.record(event, redactor.text)),
  // Names of a toolset and a kind, nothing a server said.
  listingsVersion: s.listingsVersion,
  listingChanges: s.listingChanges
})
