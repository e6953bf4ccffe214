/**
 * The registry's transitions and catalog changes as numbered events, fanned out to any number of
 * subscribers (the SSE clients of `GET /events`). One fiber reads the registry; each subscriber
 * has its own bounded queue, so a subscriber that stops reading is cut off (and resyncs when it
 * reconnects) instead of holding back the others or the supervisors, and its memory is bounded.
 */
import type { State } from "@toolvisor/core"
import * as Arr from "effect/Array"
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Inspection from "../Inspection.ts"
import * as StatusJson from "../StatusJson.ts"
import type * as ToolsetRegistry from "../ToolsetRegistry.ts"

/**
 * One event as a client receives it: `id` grows by one per event, so a gap is visible. A feed's
 * ids start at its start time in milliseconds times `idsPerMillisecond`, so an id from an
 * earlier process (the client saw the feed before a restart) is below every id of this one and
 * resumes nothing: the client gets a snapshot, not this process's events as if they followed its.
 */
export interface Event {
  readonly id: number
  readonly event: "snapshot" | "transition" | "catalog" | "heartbeat"
  /** The JSON text of the event's data. */
  readonly data: string
  /** The event as an SSE frame, encoded once for every subscriber. */
  readonly frame: Uint8Array
}

const encoder = new TextEncoder()

/**
 * A comment frame, not an event (its id is 0 and clients ignore it): it keeps proxies from closing
 * an idle stream and lets a client notice a dead one.
 */
export const heartbeat: Event = { id: 0, event: "heartbeat", data: "", frame: encoder.encode(": heartbeat\n\n") }

/** An event with its SSE frame. */
export const event = (id: number, kind: Event["event"], data: unknown): Event => {
  const json = JSON.stringify(data)
  return { id, event: kind, data: json, frame: encoder.encode(`id: ${id}\nevent: ${kind}\ndata: ${json}\n\n`) }
}

export interface Options {
  /** The agent whose catalog changes are announced; the registry's default when omitted. */
  readonly agent?: string
  /** The config's name (its file's, for the CLI), which a snapshot names for the dashboard's header. */
  readonly config?: string
  /** Events kept for clients that reconnect with `Last-Event-ID`. */
  readonly history?: number
  /** Events a subscriber may have unread before it is cut off. */
  readonly subscriberBuffer?: number
  /** How often every subscriber gets a `heartbeat`; 15 seconds by default. */
  readonly heartbeat?: Duration.Input
}

export interface Feed {
  /**
   * The events after `lastEventId` while the history still holds them, else a `snapshot` event
   * of every toolset first; then every new event. Ends when the subscriber falls behind by more
   * than its buffer: a client reconnects with the last id it saw.
   */
  readonly subscribe: (lastEventId?: number) => Stream.Stream<Event>
  /** Subscribers attached now. */
  readonly subscribers: Effect.Effect<number>
}

/** Far more events than a feed numbers in a millisecond of its life, so ids of two processes never meet. */
const idsPerMillisecond = 1_000

const hour = 3_600_000

/** A flapping server changes state often: its last hour is kept to this many changes. */
const timelineLimit = 500

/** An error kept in a timeline is cut to this length: a crash message quotes a server's stderr. */
const errorLimit = 1_000

/** One state a toolset entered, with the error it entered it with. */
interface TimelineEntry {
  readonly state: State.State
  readonly at: number
  readonly error: State.StatusSnapshot["lastError"]
  /** The state it left, when a transition said so (a missed one would make the previous entry lie). */
  readonly from: State.State | undefined
}

const bounded = (error: TimelineEntry["error"]) =>
  error === undefined || error.message.length <= errorLimit
    ? error
    : { ...error, message: `${error.message.slice(0, errorLimit)}…` }

/** The data of a `snapshot` event: the same DTO as `GET /status` (the feed adds the timelines). */
export const snapshotData = (registry: ToolsetRegistry.Registry) =>
  Effect.map(registry.snapshot, (board) => ({ toolsets: board.map((s) => StatusJson.make(s)) }))

/** Starts reading the registry in the current scope; closing it ends every subscriber. */
export const make = (
  registry: ToolsetRegistry.Registry,
  options: Options = {}
): Effect.Effect<Feed, never, Scope.Scope> =>
  Effect.gen(function* () {
    const historySize = options.history ?? 1024
    const bufferSize = options.subscriberBuffer ?? 256
    // A burst goes out in slices of half a buffer: a reader that keeps up always has room for one.
    const slice = Math.max(1, Math.floor(bufferSize / 2))
    const history: Array<Event> = []
    const subscribers = new Set<Queue.Queue<Event, Cause.Done>>()
    const started = yield* Clock.currentTimeMillis
    let lastId = started * idsPerMillisecond
    const startedAt = new Date(started).toISOString()
    /**
     * Each toolset's states over the last hour, oldest first, with the errors that caused them: a
     * page opened now draws the whole hour and lists its recent history.
     */
    const timelines = new Map<string, Array<TimelineEntry>>()
    const remember = (toolset: string, { state, since: at, lastError }: State.StatusSnapshot, from?: State.State) => {
      const timeline = timelines.get(toolset) ?? []
      if (timeline.at(-1)?.state !== state) timeline.push({ state, at, error: bounded(lastError), from })
      // The entry in force an hour ago stays: it says how the hour began.
      while (timeline.length > 1 && (timeline[1]?.at ?? at) < at - hour) timeline.shift()
      if (timeline.length > timelineLimit) timeline.splice(0, timeline.length - timelineLimit)
      timelines.set(toolset, timeline)
    }
    for (const s of yield* registry.snapshot) remember(s.name, s)
    const timelinesNow = () =>
      Object.fromEntries(
        Array.from(timelines, ([toolset, timeline]) => [
          toolset,
          timeline.map((entry) => ({
            state: entry.state,
            at: new Date(entry.at).toISOString(),
            ...(entry.from === undefined ? {} : { from: entry.from }),
            ...(entry.error === undefined ? {} : { error: entry.error })
          }))
        ])
      )
    /** Each toolset's policy, for the restart budget a dashboard shows beside its state. */
    const policiesOf = (toolsets: ReadonlyArray<{ readonly toolset: string }>) =>
      Effect.map(
        Effect.forEach(toolsets, ({ toolset }) =>
          Effect.option(Effect.map(registry.inspect(toolset), (i) => [toolset, Inspection.json(i).policy] as const))
        ),
        (found) => Object.fromEntries(found.flatMap((o) => (o._tag === "Some" ? [o.value] : [])))
      )
    /** What a subscriber that cannot resume starts from: every toolset now, and the last hour of each. */
    const snapshotEvent = (at: number) =>
      Effect.gen(function* () {
        const data = yield* snapshotData(registry)
        return event(at, "snapshot", {
          ...data,
          agent: options.agent ?? registry.agent,
          config: options.config ?? null,
          startedAt,
          policies: yield* policiesOf(data.toolsets),
          timelines: timelinesNow()
        })
      })

    const cutOff = (queue: Queue.Queue<Event, Cause.Done>) => {
      subscribers.delete(queue)
      Queue.endUnsafe(queue)
    }

    /**
     * Offers a batch of events to every subscriber without waiting: a batch, so a burst costs a
     * subscriber one wake-up and one socket write. A full queue gets one more chance after a yield
     * (its reader may simply not have run during the burst); still full, its reader has stopped
     * and is cut off. One fiber publishes, so every subscriber sees the same order.
     */
    const publishSlice = (batch: ReadonlyArray<{ readonly event: Event["event"]; readonly data: unknown }>) =>
      Effect.suspend(() => {
        const entries = batch.map((e) => event(++lastId, e.event, e.data))
        history.push(...entries)
        if (history.length > historySize) history.splice(0, history.length - historySize)
        const behind: Array<[Queue.Queue<Event, Cause.Done>, Array<Event>]> = []
        for (const queue of subscribers) {
          const rest = Queue.offerAllUnsafe(queue, entries)
          if (rest.length > 0) behind.push([queue, rest])
        }
        if (behind.length === 0) return Effect.void
        return Effect.andThen(
          Effect.yieldNow,
          Effect.sync(() => {
            for (const [queue, rest] of behind) {
              if (subscribers.has(queue) && Queue.offerAllUnsafe(queue, rest).length > 0) cutOff(queue)
            }
          })
        )
      })

    const transitions = registry.events.pipe(
      Stream.mapArray((events) =>
        Arr.map(events, (e) => {
          remember(e.toolset, e.snapshot, e.from)
          return { event: "transition" as const, data: { ...StatusJson.make(e.snapshot), from: e.from } }
        })
      )
    )
    const catalogs = registry.catalogChanges(options.agent).pipe(
      Stream.map((catalog) => ({
        event: "catalog" as const,
        data: {
          version: catalog.version,
          complete: catalog.complete,
          tools: catalog.tools.length,
          missing: catalog.missing
        }
      })),
      Stream.catchTag("UnknownAgent", (error) =>
        Stream.fromEffectDrain(Effect.logWarning(`no catalog events: ${error.message}`))
      )
    )
    yield* Stream.merge(transitions, catalogs).pipe(
      Stream.runForEachArray((batch) => Effect.forEach(Arr.chunksOf(batch, slice), publishSlice, { discard: true })),
      Effect.forkScoped({ startImmediately: true })
    )
    // One timer for every subscriber: a heartbeat costs a frame per subscriber, not a fiber.
    yield* Effect.sleep(options.heartbeat ?? Duration.seconds(15)).pipe(
      Effect.andThen(
        Effect.sync(() => {
          for (const queue of subscribers) Queue.offerUnsafe(queue, heartbeat)
        })
      ),
      Effect.forever,
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const queue of subscribers) cutOff(queue)
      })
    )

    const attach = (lastEventId: number | undefined) =>
      Effect.acquireRelease(
        Effect.gen(function* () {
          const queue = yield* Queue.bounded<Event, Cause.Done>(bufferSize)
          const oldest = history[0]?.id ?? lastId + 1
          const resumes = lastEventId !== undefined && lastEventId <= lastId && lastEventId >= oldest - 1
          const missed = resumes ? history.filter((e) => e.id > lastEventId) : []
          const at = lastId
          subscribers.add(queue)
          return { queue, missed, at, resumes }
        }),
        ({ queue }) => Effect.sync(() => cutOff(queue))
      )

    const subscribe = (lastEventId?: number): Stream.Stream<Event> =>
      Stream.unwrap(
        Effect.map(attach(lastEventId), ({ queue, missed, at, resumes }) => {
          // A snapshot is numbered as the last event it already includes, so resuming from it is exact.
          const head = resumes ? Stream.fromIterable(missed) : Stream.fromEffect(snapshotEvent(at))
          return Stream.concat(head, Stream.fromQueue(queue))
        })
      )

    return { subscribe, subscribers: Effect.sync(() => subscribers.size) }
  })
