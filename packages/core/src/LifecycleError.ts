/**
 * The closed set of failures a supervised toolset can meet. Every error names its toolset, says
 * what happened in a sentence a user can act on, and keeps the foreign error that caused it.
 * The classes are Schema errors, so they encode for RPC and status streams.
 */
import * as Schema from "effect/Schema"

const fields = {
  toolset: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}

/** A connection was lost or never established; reconnecting usually helps. */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  ...fields,
  /** True when `classify` found no better class: the cause is kept for the reader. */
  unclassified: Schema.optionalKey(Schema.Boolean)
}) {}

/** The server cannot be reached or run: binary missing, connection refused, exited at once. */
export class ServerUnavailable extends Schema.TaggedError<ServerUnavailable>()("ServerUnavailable", {
  ...fields,
  exitCode: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  signal: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** The last lines the process wrote to stderr, which usually say why it would not run. */
  stderr: Schema.optionalKey(Schema.Array(Schema.String))
}) {}

/** The session died after it was established (process exit, stream closed). */
export class ServerCrashed extends Schema.TaggedError<ServerCrashed>()("ServerCrashed", {
  ...fields,
  exitCode: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  signal: Schema.optionalKey(Schema.NullOr(Schema.String)),
  stderr: Schema.optionalKey(Schema.Array(Schema.String))
}) {}

/** The connect/handshake did not finish within `startup_timeout`. */
export class InitTimeout extends Schema.TaggedError<InitTimeout>()("InitTimeout", {
  ...fields,
  afterMillis: Schema.Number
}) {}

/** The server accepted `initialize` but the client could not send `initialized`. */
export class InitNotification extends Schema.TaggedError<InitNotification>()("InitNotification", fields) {}

/** The server lacks a capability the toolset needs: restarting will not help. */
export class CapabilityMissing extends Schema.TaggedError<CapabilityMissing>()("CapabilityMissing", {
  ...fields,
  capability: Schema.optionalKey(Schema.String)
}) {}

/** The server wants credentials we do not have: park the toolset, do not loop. */
export class AuthRequired extends Schema.TaggedError<AuthRequired>()("AuthRequired", {
  ...fields,
  /** The `WWW-Authenticate` challenge, when the server sent one. */
  challenge: Schema.optionalKey(Schema.String)
}) {}

/** The server no longer knows our session (it restarted): reconnect. */
export class SessionMissing extends Schema.TaggedError<SessionMissing>()("SessionMissing", fields) {}

/** An operation on a toolset that is not running; `cause` holds the error that stopped it, if any. */
export class NotStarted extends Schema.TaggedError<NotStarted>()("NotStarted", fields) {}

/** A request ran past its deadline (`call_timeout`); the session itself stays up. */
export class CallTimeout extends Schema.TaggedError<CallTimeout>()("CallTimeout", {
  ...fields,
  afterMillis: Schema.Number
}) {}

/** Every lifecycle failure, as a Schema: decode and encode the whole union. */
export const LifecycleError = Schema.Union([
  TransportError,
  ServerUnavailable,
  ServerCrashed,
  InitTimeout,
  InitNotification,
  CapabilityMissing,
  AuthRequired,
  SessionMissing,
  NotStarted,
  CallTimeout
])

export type LifecycleError = typeof LifecycleError.Type

export type Tag = LifecycleError["_tag"]

/** Tells a lifecycle error from any other value. */
export const isLifecycleError: (u: unknown) => u is LifecycleError = Schema.is(LifecycleError)

const permanent: { readonly [K in Tag]: boolean } = {
  TransportError: false,
  ServerUnavailable: false,
  ServerCrashed: false,
  InitTimeout: false,
  InitNotification: false,
  CapabilityMissing: true,
  AuthRequired: true,
  SessionMissing: false,
  NotStarted: false,
  CallTimeout: false
}

/** Restarting cannot fix a permanent error: the supervisor parks the toolset as Failed. */
export const isPermanent = (error: LifecycleError): boolean => permanent[error._tag]

const permanentTags: ReadonlySet<string> = new Set(
  Object.entries(permanent).flatMap(([tag, isPermanent]) => (isPermanent ? [tag] : []))
)

/** `isPermanent` for an error known only by its tag, as a status snapshot carries it. */
export const isPermanentTag = (tag: string): boolean => permanentTags.has(tag)

/** The complement of `isPermanent`: a reconnect may help. */
export const isTransient = (error: LifecycleError): boolean => !permanent[error._tag]

/** `NotStarted`, its message led by the toolset's name as every error's is. */
export const notStarted = (toolset: string, message: string, cause?: LifecycleError): NotStarted =>
  new NotStarted({ toolset, message: `${toolset}: ${message}`, cause })

/**
 * What a request in flight on a session that ended gets: a crash, caused by how the session
 * ended, with the server's exit code, signal and stderr when it crashed.
 */
export const crashedInFlight = (toolset: string, ended: LifecycleError | undefined): ServerCrashed =>
  new ServerCrashed({
    toolset,
    message: `${toolset}: session ended while the request was in flight${ended ? `: ${ended.message}` : ""}`,
    cause: ended,
    ...(ended?._tag === "ServerCrashed"
      ? {
          ...(ended.exitCode === undefined ? {} : { exitCode: ended.exitCode }),
          ...(ended.signal === undefined ? {} : { signal: ended.signal }),
          ...(ended.stderr === undefined ? {} : { stderr: ended.stderr })
        }
      : {})
  })
