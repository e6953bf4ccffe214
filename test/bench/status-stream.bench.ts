/**
 * Status stream benchmark (issue 18), in one process over real HTTP on loopback:
 *   1. fan-out: 1,000 transitions/s for 5 s published into the `GET /events` feed (a registry whose
 *      `events` the bench drives), read by 100 SSE subscribers (raw `node:http` clients in this
 *      process): delivery latency p50/p99/max from publish to a subscriber parsing the frame, events
 *      lost, and the CPU of this process per subscriber — (CPU with 100 subscribers − CPU with 0) /
 *      100, an upper bound since the clients' parsing runs here too;
 *   2. calls: `echo` on a real MCP fixture server through `registry.callTool`, p50 of 300
 *      sequential calls with no status server, then with the status routes and 100 subscribers
 *      attached, alternated in blocks; the target is a ratio ≤ 1.05.
 *
 * Run: cd /work/main && npm run bench:status
 */
import * as NodeHttp from "node:http"
import { HttpGate, ToolsetRegistry } from "@toolvisor/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import * as StatusServer from "../../apps/cli/src/StatusServer.ts"
import { config, fixtureEntry } from "../support/Registry.ts"
import { ascending, formatter, median, percentile, renderTable } from "./stats.ts"

const RATE = 1_000
const SECONDS = 5
const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 100)
const CALLS = 300
const BLOCK = 50
const fmt = formatter(2)
const host = "127.0.0.1"

const now = () => performance.timeOrigin + performance.now()

/** A registry whose transitions the bench publishes; snapshots and control are trivial. */
const drivenRegistry = (events: PubSub.PubSub<ToolsetRegistry.ToolsetEvent>): ToolsetRegistry.Registry => ({
  agent: "root",
  agents: Effect.succeed(["root"]),
  start: Effect.void,
  snapshot: Effect.succeed([]),
  status: Stream.empty,
  events: Stream.fromPubSub(events),
  catalog: (agent) =>
    Effect.fail(new ToolsetRegistry.UnknownAgent({ agent: agent ?? "root", message: "none", known: [] })),
  catalogChanges: () => Stream.empty,
  callTool: () => Effect.die("unused"),
  callToolNow: () => undefined,
  searchTools: () => Effect.die("unused"),
  startToolset: () => Effect.void,
  stopToolset: () => Effect.void,
  restartToolset: () => Effect.void,
  inspect: () => Effect.die("unused"),
  reprobe: Effect.die("unused"),
  reload: () => Effect.die("unused"),
  prompts: () => Effect.die("unused"),
  getPrompt: () => Effect.die("unused"),
  resources: () => Effect.die("unused"),
  readResource: () => Effect.die("unused"),
  getPromptNow: () => undefined,
  readResourceNow: () => undefined,
  subscribe: () => Stream.empty,
  complete: () => Effect.die("unused"),
  logs: Stream.empty,
  listingChanges: Stream.empty
})

interface Subscriber {
  readonly received: Map<number, number>
  readonly close: () => void
}

/** One SSE client: the receive time of every event id it parses. */
const subscribe = (port: number): Promise<Subscriber> =>
  new Promise((resolve, reject) => {
    const received = new Map<number, number>()
    const request = NodeHttp.get({ host, port, path: "/events", headers: { host: `${host}:${port}` } }, (response) => {
      let buffer = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => {
        buffer += chunk
        let end = buffer.indexOf("\n\n")
        while (end >= 0) {
          const match = /^id: (\d+)$/m.exec(buffer.slice(0, end))
          if (match?.[1] !== undefined) received.set(Number(match[1]), now())
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf("\n\n")
        }
      })
      response.on("error", () => undefined)
      resolve({ received, close: () => request.destroy() })
    })
    request.once("error", reject)
  })

const transition = (i: number): ToolsetRegistry.ToolsetEvent => ({
  toolset: `t${i % 10}`,
  from: i % 2 === 0 ? "Ready" : "Restarting",
  snapshot: {
    name: `t${i % 10}`,
    kind: "mcp-stdio",
    state: i % 2 === 0 ? "Restarting" : "Ready",
    since: Date.now(),
    restarts: i,
    attempt: 0,
    toolsVersion: i,
    pid: 1000 + i
  }
})

/** Publishes RATE events/s for SECONDS in 10 ms batches; returns each event's publish time by id. */
const drive = (events: PubSub.PubSub<ToolsetRegistry.ToolsetEvent>, firstId: number) =>
  Effect.gen(function* () {
    const published = new Map<number, number>()
    const perBatch = RATE / 100
    const start = now()
    let sent = 0
    while (sent < RATE * SECONDS) {
      const due = start + (sent / RATE) * 1000
      const wait = due - now()
      if (wait > 0) yield* Effect.sleep(`${Math.ceil(wait)} millis`)
      const at = now()
      for (let i = 0; i < perBatch; i++) {
        published.set(firstId + sent, at)
        yield* PubSub.publish(events, transition(sent))
        sent++
      }
    }
    // Let the last frames arrive.
    yield* Effect.sleep("500 millis")
    return published
  })

const fanOut = (subscribers: number) =>
  Effect.gen(function* () {
    const events = yield* PubSub.unbounded<ToolsetRegistry.ToolsetEvent>()
    const { port } = yield* StatusServer.listen(
      drivenRegistry(events),
      { port: 0, host },
      yield* HttpGate.make({ host }),
      {}
    )
    const clients = yield* Effect.promise(() => Promise.all(Array.from({ length: subscribers }, () => subscribe(port))))
    yield* Effect.sleep("200 millis")
    const cpu = process.cpuUsage()
    const published = yield* drive(events, 1)
    const used = process.cpuUsage(cpu)
    for (const client of clients) client.close()
    const latencies: Array<number> = []
    let lost = 0
    for (const client of clients) {
      for (const [id, at] of published) {
        const got = client.received.get(id)
        if (got === undefined) lost++
        else latencies.push(got - at)
      }
    }
    return { cpuMs: (used.user + used.system) / 1000, latencies: ascending(latencies), lost }
  }).pipe(Effect.scoped)

const callP50s = Effect.gen(function* () {
  const registry = yield* ToolsetRegistry.make(config([fixtureEntry("fx")]))
  yield* registry.start
  const call = Effect.gen(function* () {
    const started = now()
    yield* registry.callTool("echo", { message: "bench" })
    return now() - started
  })
  const block = (n: number) => Effect.forEach(Array.from({ length: n }), () => call)
  yield* block(50)
  const without: Array<number> = []
  const withSubscribers: Array<number> = []
  for (let done = 0; done < CALLS; done += BLOCK) {
    without.push(...(yield* block(BLOCK)))
    yield* Effect.scoped(
      Effect.gen(function* () {
        const { port } = yield* StatusServer.listen(registry, { port: 0, host }, yield* HttpGate.make({ host }), {})
        const clients = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: SUBSCRIBERS }, () => subscribe(port)))
        )
        withSubscribers.push(...(yield* block(BLOCK)))
        for (const client of clients) client.close()
      })
    )
  }
  return { without: median(without), with: median(withSubscribers) }
}).pipe(Effect.scoped)

const main = Effect.gen(function* () {
  const idle = yield* fanOut(0)
  const loaded = yield* fanOut(SUBSCRIBERS)
  const { latencies } = loaded
  yield* Console.log(`\nfan-out: ${RATE} transitions/s for ${SECONDS} s to ${SUBSCRIBERS} SSE subscribers (loopback)`)
  yield* Console.log(
    renderTable(
      ["measure", "value"],
      [
        ["deliveries", String(latencies.length)],
        ["lost", String(loaded.lost)],
        ["latency p50 (ms)", fmt(percentile(latencies, 0.5))],
        ["latency p99 (ms)", fmt(percentile(latencies, 0.99))],
        ["latency max (ms)", fmt(latencies.at(-1) ?? Number.NaN)],
        ["CPU, 0 subscribers (ms)", fmt(idle.cpuMs, 0)],
        [`CPU, ${SUBSCRIBERS} subscribers (ms)`, fmt(loaded.cpuMs, 0)],
        [
          "CPU per subscriber (% of a core)",
          fmt(((loaded.cpuMs - idle.cpuMs) / SUBSCRIBERS / (SECONDS * 1000)) * 100, 3)
        ]
      ]
    )
  )
  const calls = yield* callP50s
  yield* Console.log(`\ncalls: echo p50 over ${CALLS} calls each, alternated in blocks of ${BLOCK}`)
  yield* Console.log(
    renderTable(
      ["setup", "p50 (ms)"],
      [
        ["no status server", fmt(calls.without, 3)],
        [`status routes + ${SUBSCRIBERS} subscribers`, fmt(calls.with, 3)],
        ["ratio (target ≤ 1.05)", fmt(calls.with / calls.without, 3)]
      ]
    )
  )
})

Effect.runPromise(main).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
