/**
 * The event store of one streamable HTTP session (the SDK's `EventStore`): what the gateway sent
 * on the session's SSE streams, kept so a client whose stream broke can come back with
 * `Last-Event-ID` and get what it missed — the progress of a long call, its answer, the
 * notifications of its standalone stream. A client is hostile until shown otherwise, so a store
 * is bounded three ways: events, bytes and age. The oldest go first; an event bigger than the
 * whole budget is not kept at all (a client that misses it reconnects without it: its id is then
 * unknown, which the gateway answers 400, and the client starts a new stream). The store belongs to
 * its session and goes with it: a session's events replay to that session only.
 *
 * A POST's stream ends with its answer; one resumed after it was answered would be held open by
 * the SDK for events that never come (its request is over), so a client that lost the stream
 * just after its answer — or after a cancellation, which the gateway answers — hung, and kept its
 * session from going idle. `finishedAfter` gives such a stream's missed events, for the gateway
 * to send and end the stream itself.
 */
import type { EventStore } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"

export interface Limits {
  readonly events: number
  /** Bytes of serialized messages. */
  readonly bytes: number
  readonly ageMillis: number
}

/** Per session: with `--max-sessions` at 1,000, at most 1 GiB in the worst case, and nothing while no one resumes for 5 minutes. */
export const defaults: Limits = { events: 512, bytes: 1024 * 1024, ageMillis: 5 * 60_000 }

interface Stored {
  readonly stream: string
  /** Undefined for a priming event (the SDK's empty event that hands the client its first id): never replayed. */
  readonly message: JSONRPCMessage | undefined
  /** An answer: on a POST's stream, its last event. */
  readonly answer: boolean
  readonly bytes: number
  readonly at: number
}

/** One event to send again: its id and message. */
export interface Missed {
  readonly id: string
  readonly message: JSONRPCMessage
}

export interface Store extends EventStore {
  /**
   * The events after `lastEventId` on its stream when that stream is over (its answer is
   * stored); undefined when it is not, or the store does not know the id.
   */
  readonly finishedAfter: (lastEventId: string) => ReadonlyArray<Missed> | undefined
  /** Whether the store holds the event: one it never had, or no longer has, resumes nothing. */
  readonly has: (eventId: string) => boolean
}

/** A bounded store; `now` is the clock its ages are read from. */
export const make = (limits: Limits = defaults, now: () => number = Date.now): Store => {
  const events = new Map<string, Stored>()
  let bytes = 0
  let next = 0

  const dropOldest = () => {
    const first = events.entries().next()
    if (first.done === true) return
    events.delete(first.value[0])
    bytes -= first.value[1].bytes
  }

  const prune = () => {
    const oldest = now() - limits.ageMillis
    for (const stored of events.values()) {
      if (stored.at >= oldest) break
      dropOldest()
    }
  }

  return {
    storeEvent: async (stream, message) => {
      const id = String(++next)
      const replayable = "jsonrpc" in message
      const size = replayable ? Buffer.byteLength(JSON.stringify(message)) : 0
      prune()
      if (size > limits.bytes) return id
      while (events.size > 0 && (events.size >= limits.events || bytes + size > limits.bytes)) dropOldest()
      const answer = replayable && "id" in message && ("result" in message || "error" in message)
      events.set(id, { stream, message: replayable ? message : undefined, answer, bytes: size, at: now() })
      bytes += size
      return id
    },
    getStreamIdForEventId: async (id) => {
      prune()
      return events.get(id)?.stream
    },
    replayEventsAfter: async (lastEventId, { send }) => {
      const last = events.get(lastEventId)
      if (last === undefined) throw new Error(`no event ${lastEventId.slice(0, 40)} in this session's store`)
      let after = false
      // A copy: sending awaits, and new events may be stored meanwhile (they go to the live stream).
      for (const [id, stored] of Array.from(events)) {
        if (id === lastEventId) after = true
        else if (after && stored.stream === last.stream && stored.message !== undefined) await send(id, stored.message)
      }
      return last.stream
    },
    has: (eventId) => {
      prune()
      return events.has(eventId)
    },
    finishedAfter: (lastEventId) => {
      prune()
      const last = events.get(lastEventId)
      if (last === undefined) return undefined
      const missed: Array<Missed> = []
      let after = false
      let finished = last.answer
      for (const [id, stored] of events) {
        if (id === lastEventId) after = true
        else if (after && stored.stream === last.stream) {
          if (stored.message !== undefined) missed.push({ id, message: stored.message })
          finished ||= stored.answer
        }
      }
      return finished ? missed : undefined
    }
  }
}
