/**
 * The two-part contract between the Supervisor and a transport: a `Connector` opens a `Session`
 * inside a `Scope`, and the session reports when it ends. The core knows nothing else about MCP
 * or LSP; each transport adapter implements this next to its transport.
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as LifecycleError from "./LifecycleError.ts"

/** A live connection to a server. `handle` is what requests run on (an MCP client, an LSP connection). */
export interface Session<A> {
  readonly handle: A
  /**
   * Completes when the session ends: success for a clean close, a classified error for a crash.
   * The Supervisor watches it; it must not complete while the session is healthy.
   */
  readonly ended: Effect.Effect<void, LifecycleError.LifecycleError>
  /**
   * True when requests on `handle` fail as soon as the session closes and honour their deadline
   * themselves (the one `use` gives them, or `Deadline.Current`): `Supervisor.use` then runs them
   * directly, with no race against the session's end and no timer of its own.
   */
  readonly selfBounded?: boolean
  /** A cheap request that proves the server still answers, for health checks. */
  readonly probe?: Effect.Effect<void, LifecycleError.LifecycleError>
  /** The local process behind the session, if there is one. */
  readonly pid?: number
  /** The server's name and version, as its handshake reported them. */
  readonly server?: { readonly name: string; readonly version: string }
  /** Usage instructions the server gave at handshake. */
  readonly instructions?: string
  readonly toolCount?: number
  /**
   * The tool count each time the session's tool list is fetched anew during the session; every
   * emission bumps the snapshot's `toolsVersion`, even when the count is unchanged.
   */
  readonly toolCountChanges?: Stream.Stream<number>
}

/**
 * Opens a session. Everything it acquires belongs to the provided `Scope`: closing the scope
 * closes the session and ends any process it started.
 */
export interface Connector<A> {
  readonly connect: Effect.Effect<Session<A>, LifecycleError.LifecycleError, Scope.Scope>
}
