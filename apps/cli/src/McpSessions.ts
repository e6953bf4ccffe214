/**
 * The gateway's MCP sessions over HTTP, bounded in number and in time: at most `max` are open at
 * once (an initialize past that is refused, not queued), and one that no client has used for
 * `idle` is closed, so a client that went away without DELETE leaves nothing behind for long. A
 * session is in use while a request or stream of its is open — a GET stream waiting for
 * notifications included — so only abandoned sessions expire. The table knows nothing of tools:
 * a session is anything that can be closed.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Reclaim from "./Reclaim.ts"

export interface Options {
  /** How long a session may go unused before it is closed; it is closed within 1.5 times that. */
  readonly idle: Duration.Duration
  /** The most sessions open (or being opened) at once. */
  readonly max: number
}

/** What the table needs of a session: a way to close it (which must also `remove` it). */
export interface Session {
  readonly close: Effect.Effect<void>
}

/** A place held for a session whose initialize is under way. */
export interface Opening<S extends Session> {
  /** The initialize succeeded: the session takes the place under its id. */
  readonly add: (id: string, session: S) => void
  /** The initialize is over; frees the place if no session took it. */
  readonly done: () => void
}

export interface Table<S extends Session> {
  /** Holds a place for a new session; undefined when `max` are open or opening. */
  readonly open: () => Opening<S> | undefined
  /**
   * The session, marked in use until `leave`; undefined when there is no such session (or no
   * more), or when `admits` says it is not the caller's.
   */
  readonly enter: (id: string, admits?: (session: S) => boolean) => S | undefined
  /** One request or stream of the session ended; its idle time starts when the last one has. */
  readonly leave: (id: string) => void
  /** Forgets a closed session. */
  readonly remove: (id: string) => void
  /** Sessions open now. */
  readonly size: () => number
  readonly sessions: () => ReadonlyArray<S>
}

/** Sessions open now, on `/metrics`: how near the cap the gateway runs, and that idle ones go. */
export const gauge = Metric.gauge("toolvisor_mcp_sessions", { description: "MCP sessions open over HTTP" })

interface Entry<S> {
  readonly session: S
  /** Requests and streams open now. */
  active: number
  /** When the last of them ended (or the session opened). */
  lastUsed: number
}

/**
 * A table that closes idle sessions until the scope closes, then closes every session left.
 * Idle sessions are swept every `idle / 2` on Effect's clock, so tests move time with TestClock.
 */
export const make = <S extends Session>(options: Options): Effect.Effect<Table<S>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const clock = yield* Clock.Clock
    const context = yield* Effect.context<never>()
    const idleMillis = Duration.toMillis(options.idle)
    const entries = new Map<string, Entry<S>>()
    let opening = 0
    const counted = () => gauge.updateUnsafe(entries.size, context)
    const forget = (id: string) => {
      entries.delete(id)
      counted()
    }

    const reserve = (): Opening<S> | undefined => {
      if (entries.size + opening >= options.max) return undefined
      opening += 1
      let held = true
      const release = () => {
        if (held) opening -= 1
        held = false
      }
      return {
        add: (id, session) => {
          release()
          entries.set(id, { session, active: 0, lastUsed: clock.currentTimeMillisUnsafe() })
          counted()
        },
        done: release
      }
    }

    const enter = (id: string, admits: (session: S) => boolean = () => true): S | undefined => {
      const entry = entries.get(id)
      if (entry === undefined || !admits(entry.session)) return undefined
      entry.active += 1
      return entry.session
    }

    const leave = (id: string) => {
      const entry = entries.get(id)
      if (entry === undefined) return
      entry.active -= 1
      entry.lastUsed = clock.currentTimeMillisUnsafe()
    }

    const close = (id: string, entry: Entry<S>) =>
      Effect.andThen(
        Effect.sync(() => forget(id)),
        entry.session.close
      )

    const reclaim = Reclaim.make()
    const sweep = Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      const idle = Array.from(entries).filter(([, e]) => e.active === 0 && now - e.lastUsed >= idleMillis)
      return Effect.forEach(idle, ([id, entry]) => close(id, entry), { discard: true }).pipe(
        Effect.andThen(reclaim(idle.length))
      )
    })

    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(Duration.millis(Math.max(1, idleMillis / 2)))))
    yield* Effect.addFinalizer(() =>
      Effect.forEach(Array.from(entries), ([id, entry]) => close(id, entry), { discard: true })
    )

    return {
      open: reserve,
      enter,
      leave,
      remove: forget,
      size: () => entries.size,
      sessions: () => Array.from(entries.values(), (e) => e.session)
    }
  })
