/**
 * What the cluster soak holds its run to, and the summary it prints. Every check is a sentence
 * with its bound and what was measured, so a failure says what went wrong without the logs.
 */
import * as NodeFs from "node:fs"
import { median } from "../../bench/stats.ts"
import type { Outcome } from "./client.ts"
import type { Files } from "./setup.ts"

export interface Fault {
  readonly kind: string
  readonly target: string
  at: number
  /** Until the cluster served what the fault hit again (failover, restart), when measured. */
  recoveredMs?: number | undefined
  /** The fault's window: calls in it are attributed to it. */
  endedAt: number
  /** For a SIGTERM: how long the runner took to exit. */
  exitMs?: number
  note?: string
}

export interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

export const readOutcomes = (f: Files): ReadonlyArray<Outcome> =>
  NodeFs.existsSync(f.outcomes)
    ? NodeFs.readFileSync(f.outcomes, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Outcome]
          } catch {
            return [] // the last line of a SIGKILLed client can be cut short
          }
        })
    : []

/** How many times each journal line ran, across every toolset's journal. */
export const runs = (f: Files, toolsets: ReadonlyArray<string>): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>()
  for (const t of toolsets) {
    const path = f.journal(t)
    if (!NodeFs.existsSync(path)) continue
    for (const line of NodeFs.readFileSync(path, "utf8").split("\n")) {
      if (line !== "") counts.set(line, (counts.get(line) ?? 0) + 1)
    }
  }
  return counts
}

/** Every answer against the journals: none ran twice, and each answer matches what ran. */
export const truth = (outcomes: ReadonlyArray<Outcome>, ran: ReadonlyMap<string, number>): ReadonlyArray<Check> => {
  const twice = [...ran].filter(([, n]) => n > 1)
  const journaling = outcomes.filter((o) => o.via !== "effect-read")
  const lies = journaling.filter((o) => {
    const n = ran.get(o.line) ?? 0
    return o.outcome === "NotRun" ? n !== 0 : o.outcome === "ok" ? n !== 1 : n > 1
  })
  const notRun = journaling.filter((o) => o.outcome === "NotRun").length
  return [
    {
      name: "no call ran twice",
      ok: twice.length === 0,
      detail:
        twice.length === 0
          ? `${ran.size} journal lines, each once`
          : `ran twice: ${twice
              .slice(0, 5)
              .map(([l]) => l)
              .join(", ")}`
    },
    {
      name: 'every "did not run" answer is true, and every success ran once',
      ok: lies.length === 0,
      detail:
        lies.length === 0
          ? `${notRun} answered "did not run", none in a journal`
          : lies
              .slice(0, 5)
              .map((o) => `${o.line} ${o.outcome} ${o.tag ?? ""} ran ${ran.get(o.line) ?? 0}× (${o.message ?? ""})`)
              .join("; ")
    }
  ]
}

export const hangs = (outcomes: ReadonlyArray<Outcome>, hangMs: number): Check => {
  const slow = outcomes.filter((o) => o.ms > hangMs)
  const slowest = Math.max(0, ...outcomes.map((o) => o.ms))
  return {
    name: `no call hung past its deadline (${hangMs / 1000} s)`,
    ok: slow.length === 0,
    detail:
      slow.length === 0 ? `slowest ${(slowest / 1000).toFixed(1)} s` : `${slow.length} past it, e.g. ${slow[0]?.line}`
  }
}

/** Outcomes per class, per way in. */
export const byClass = (outcomes: ReadonlyArray<Outcome>) => {
  const table = new Map<string, Map<string, number>>()
  for (const o of outcomes) {
    const row = table.get(o.via) ?? new Map<string, number>()
    row.set(o.outcome, (row.get(o.outcome) ?? 0) + 1)
    table.set(o.via, row)
  }
  return table
}

/** Failover (or recovery) medians and maxima per fault kind, in seconds. */
export const recoveries = (faults: ReadonlyArray<Fault>) => {
  const kinds = new Map<string, Array<number>>()
  for (const f of faults) {
    if (f.recoveredMs === undefined) continue
    kinds.set(f.kind, [...(kinds.get(f.kind) ?? []), f.recoveredMs / 1000])
  }
  return [...kinds].map(([kind, values]) => ({
    kind,
    count: values.length,
    median: median([...values].sort((a, b) => a - b)),
    max: Math.max(...values)
  }))
}

export const print = (title: string, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? []
  console.log(`\n${title}`)
  for (const row of rows) console.log(`  ${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ")}`)
}
