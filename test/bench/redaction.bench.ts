/**
 * Redaction benchmark (issue 23): what masking a tool result costs each call on the gateway's hot
 * path. `Secrets.result` (what a guarded toolset applies to every result) is timed over results of
 * 20 B, 10 KB and 1 MB of text, for a toolset with no secrets and with 5, 20 and 100 of them, as
 * the median over rounds of the mean time per call. A result that quotes a secret is timed too
 * (the copy it costs), and `Secrets.guard`'s `callToolNow` against the bare toolset's, both over
 * an already-answered call, for the wrapper's own cost per call.
 *
 * Run: npm run bench:redaction
 */
import { Redaction, type Toolset } from "@toolvisor/core"
import { Secrets } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import { formatter, median, renderTable } from "./stats.ts"

const ROUNDS = 7
const fmt = formatter(0)

const secrets = (count: number) => Array.from({ length: count }, (_, i) => `sk-bench-${i}-Zq8vLmN3xT${i * 7919}`)

const resultOf = (text: string): Toolset.ToolResult => ({ content: [{ type: "text", text }] })

/** Prose without any secret in it, `size` characters long. */
const prose = (size: number) =>
  "the quick brown fox jumps over the lazy dog 0123456789 ".repeat(size / 55 + 1).slice(0, size)

/** Nanoseconds per call of `f`, the median over rounds of `calls` calls each (after one warm-up round). */
const timePerCall = (calls: number, f: () => unknown): number => {
  const rounds: Array<number> = []
  for (let round = 0; round <= ROUNDS; round++) {
    const started = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) f()
    const elapsed = Number(process.hrtime.bigint() - started) / calls
    if (round > 0) rounds.push(elapsed)
  }
  return median(rounds)
}

const sizes = [
  { label: "20 B", text: "Echo: hello, world!!", calls: 200_000 },
  { label: "10 KB", text: prose(10_000), calls: 5_000 },
  { label: "1 MB", text: prose(1_000_000), calls: 30 }
]

const counts = [0, 5, 20, 100]

const rows = sizes.map(({ label, text, calls }) => [
  label,
  ...counts.map((count) => {
    const redactor = Redaction.make(secrets(count))
    const result = resultOf(text)
    return fmt(timePerCall(calls, () => Secrets.result(result, redactor)))
  })
])

const quoted = (() => {
  const redactor = Redaction.make(secrets(20))
  const result = resultOf(`token ${secrets(20)[7]} in ${prose(10_000)}`)
  return fmt(timePerCall(5_000, () => Secrets.result(result, redactor)))
})()

/** An already-answered call: what is left to time is the wrapper itself. */
const answered: Toolset.Toolset = {
  name: "bench",
  kind: "bench",
  start: Effect.void,
  stop: Effect.void,
  restart: Effect.void,
  state: Effect.die("unused"),
  changes: Stream.empty,
  events: Stream.empty,
  tools: Effect.die("unused"),
  callTool: () => Effect.die("unused"),
  callToolNow: () => Promise.resolve(Exit.succeed(resultOf("Echo: hello, world!!")))
}

const awaitCalls = async (toolset: Toolset.Toolset, calls: number): Promise<number> => {
  const rounds: Array<number> = []
  for (let round = 0; round <= ROUNDS; round++) {
    const started = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) await toolset.callToolNow?.("echo", {})
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - started) / calls)
  }
  return median(rounds)
}

const bare = await awaitCalls(answered, 100_000)
const guardedEmpty = await awaitCalls(Secrets.guard(answered, Redaction.make()), 100_000)
const guardedSecrets = await awaitCalls(Secrets.guard(answered, Redaction.make(secrets(20))), 100_000)

console.log(`Secrets.result, ns per call (median of ${ROUNDS} rounds), by the toolset's number of secrets:`)
console.log(renderTable(["result text", ...counts.map((c) => `${c} secrets`)], rows))
console.log(`\nA 10 KB result that quotes one of 20 secrets (masked copy): ${quoted} ns per call`)
console.log("\ncallToolNow of an already-answered call, ns per call (await included):")
console.log(
  renderTable(
    ["toolset", "ns/call"],
    [
      ["bare", fmt(bare)],
      ["guarded, no secrets", fmt(guardedEmpty)],
      ["guarded, 20 secrets", fmt(guardedSecrets)]
    ]
  )
)
