/**
 * What a soak run measured, turned into checks and tables. Pure functions of the run's record:
 * the call outcomes, the faults, the resource samples, the execution ledger and the phases'
 * figures gathered by soak.ts.
 */
import { ascending, formatter, percentile, renderTable } from "../bench/stats.ts"
import { callTimeoutMs, loopMaxRestarts } from "./config.ts"
import * as Faults from "./faults.ts"
import type { Outcome } from "./traffic.ts"

export interface Sample {
  readonly t: number
  readonly rssMiB: number
  readonly fds: number
  /** Processes carrying the run's tag (the servers and their children). */
  readonly servers: number
}

export interface Orphan {
  readonly pid: number
  readonly tag: string
  readonly state: string
  readonly command: string
}

export interface Record {
  readonly seed: number
  readonly durationS: number
  readonly outcomes: ReadonlyArray<Outcome>
  readonly faults: ReadonlyArray<Faults.Fault>
  readonly samples: ReadonlyArray<Sample>
  /** Call ids and how many times `fx_increment` executed each, from the fixture's ledger. */
  readonly executions: ReadonlyMap<string, number>
  readonly budget: { readonly loop: Budget; readonly loopq: Budget }
  /** Each soaked toolset answered a call after the faults stopped. */
  readonly finalCalls: ReadonlyArray<{ readonly toolset: string; readonly ok: boolean; readonly detail: string }>
  readonly sigterm: { readonly shutdownMs: number; readonly orphans: ReadonlyArray<Orphan> }
  readonly sigkill: { readonly orphans: ReadonlyArray<Orphan>; readonly checked: number }
  readonly listChanged: number
}

/** How a crash-looping fixture ended. */
export interface Budget {
  readonly starts: number
  /** The gateway logged that the toolset failed. */
  readonly failedLogged: boolean
  /** Seconds since its last start when the calls stopped: a toolset that stopped restarting is quiet. */
  readonly quietS: number
}

/** A toolset counts as given up when it logged Failed, or has not started again for this long. */
export const quietEnoughS = 15

const gaveUp = (b: Budget) => b.failedLogged || b.quietS >= quietEnoughS

const budgetText = (b: Budget) =>
  `${b.starts} starts, ${b.failedLogged ? "Failed" : gaveUp(b) ? `quiet ${Math.round(b.quietS)} s` : `restarting (last start ${Math.round(b.quietS)} s before the end)`}`

export interface Check {
  /** A stable key, for a test that asserts one check. */
  readonly id: string
  readonly name: string
  readonly measured: string
  readonly expected: string
  readonly pass: boolean
}

const ms = formatter(0)
const mib = formatter(1)

/** Calls slower than this are hangs: the gateway's deadline plus slack for a loaded machine. */
export const hangAfterMs = callTimeoutMs + 3_000

const isSuccess = (o: Outcome) => o.verdict === "ok" || o.verdict === "empty"

/** Recovery of each fault: the first success of a call to its toolset started once it healed. */
export const recoveries = (record: Record) =>
  record.faults.map((fault) => {
    let first: number | undefined
    for (const o of record.outcomes) {
      if (o.toolset === fault.toolset && o.start >= fault.healedAt && isSuccess(o)) {
        if (first === undefined || o.end < first) first = o.end
      }
    }
    return { fault, ms: first === undefined ? undefined : first - fault.healedAt }
  })

const median = (sorted: ReadonlyArray<number>) => percentile(sorted, 0.5)

/** Median of the first and of the last quartile of the samples taken after the warm-up. */
const quartiles = (samples: ReadonlyArray<Sample>, pick: (s: Sample) => number) => {
  const settled = samples.slice(Math.floor(samples.length / 10))
  const quarter = Math.max(1, Math.floor(settled.length / 4))
  return {
    first: median(ascending(settled.slice(0, quarter).map(pick))),
    last: median(ascending(settled.slice(-quarter).map(pick)))
  }
}

const orphanText = (orphans: ReadonlyArray<Orphan>) =>
  orphans.length === 0
    ? "0"
    : `${orphans.length}: ${orphans.map((o) => `${o.tag.split(":")[1]} pid ${o.pid} (${o.state})`).join(", ")}`

export const checks = (record: Record): ReadonlyArray<Check> => {
  const { outcomes } = record
  const wrong = outcomes.filter((o) => o.verdict === "wrong").length
  const answeredBy = new Map<string, number>()
  for (const o of outcomes) {
    if (o.execution !== undefined) answeredBy.set(o.execution, (answeredBy.get(o.execution) ?? 0) + 1)
  }
  const duplicated = Array.from(answeredBy.values()).filter((n) => n > 1).length
  const ranTwiceLedger = Array.from(record.executions.values()).filter((n) => n > 1).length
  const ranTwiceMemory = outcomes.filter((o) => o.verdict === "twice").length
  const unknown = outcomes.filter((o) => o.verdict === "error" && o.tag === "UnknownTool")
  const unknownBy = countBy(unknown, (o) => o.toolset)
  const hangs = outcomes.filter((o) => o.verdict === "hang" || o.end - o.start > hangAfterMs)
  const slowest = Math.max(0, ...outcomes.map((o) => o.end - o.start))
  const untyped = outcomes.filter(
    (o) => o.verdict === "protocol" || (o.verdict === "error" && (o.tag === "Untagged" || o.tag === "Defect"))
  ).length
  const recovered = recoveries(record)
  const unrecovered = recovered.filter((r) => r.ms === undefined)
  const rss = quartiles(record.samples, (s) => s.rssMiB)
  const fds = quartiles(record.samples, (s) => s.fds)
  const rssFlat = rss.last <= rss.first * 1.25 + 10
  const fdsFlat = fds.last <= fds.first + 10
  const { loop, loopq } = record.budget
  const expectedStarts = loopMaxRestarts + 1
  const finalDown = record.finalCalls.filter((c) => !c.ok)
  return [
    {
      id: "results",
      name: "wrong or duplicated results",
      measured: `${wrong} wrong, ${duplicated} duplicated`,
      expected: "0",
      pass: wrong === 0 && duplicated === 0
    },
    {
      id: "ranTwice",
      name: "non-idempotent calls that ran twice",
      measured: `${ranTwiceLedger} (fx ledger), ${ranTwiceMemory} (mem)`,
      expected: "0",
      pass: ranTwiceLedger === 0 && ranTwiceMemory === 0
    },
    {
      id: "unknownTool",
      name: "UnknownTool for an offered tool",
      measured: `${unknown.length}${unknown.length === 0 ? "" : ` (${entriesText(unknownBy)})`}`,
      expected: "0",
      pass: unknown.length === 0
    },
    {
      id: "hangs",
      name: `hangs past call_timeout (${ms(callTimeoutMs)} ms + 3 s)`,
      measured: `${hangs.length} (slowest call ${ms(slowest)} ms)`,
      expected: "0",
      pass: hangs.length === 0
    },
    {
      id: "untyped",
      name: "untyped errors (protocol exceptions, Defect)",
      measured: String(untyped),
      expected: "0",
      pass: untyped === 0
    },
    {
      id: "recovered",
      name: "faults recovered (a call succeeds again)",
      measured: `${recovered.length - unrecovered.length}/${recovered.length}`,
      expected: `all, within ${Faults.recoveryCapMs / 1000} s`,
      pass: unrecovered.length === 0 && recovered.length > 0
    },
    {
      id: "rss",
      name: "gateway RSS flat (median, first vs last quartile)",
      measured: `${mib(rss.first)} → ${mib(rss.last)} MiB`,
      expected: "≤ ×1.25 + 10 MiB",
      pass: rssFlat
    },
    {
      id: "fds",
      name: "gateway fds flat (median, first vs last quartile)",
      measured: `${ms(fds.first)} → ${ms(fds.last)}`,
      expected: "≤ +10",
      pass: fdsFlat
    },
    {
      id: "budgetWithCalls",
      name: `restart budget with calls (loop, max_restarts ${loopMaxRestarts})`,
      measured: budgetText(loop),
      expected: `${expectedStarts} starts, Failed`,
      pass: loop.starts === expectedStarts && gaveUp(loop)
    },
    {
      id: "budgetWithoutCalls",
      name: `restart budget without calls (loopq)`,
      measured: budgetText(loopq),
      expected: `${expectedStarts} starts, Failed`,
      pass: loopq.starts === expectedStarts && gaveUp(loopq)
    },
    {
      id: "finalCalls",
      name: "every toolset answers after the faults",
      measured: finalDown.length === 0 ? "all" : `down: ${finalDown.map((c) => c.toolset).join(", ")}`,
      expected: "all",
      pass: finalDown.length === 0
    },
    {
      id: "orphansAfterSigterm",
      name: "orphans after SIGTERM of the gateway",
      measured: orphanText(record.sigterm.orphans),
      expected: "0",
      pass: record.sigterm.orphans.length === 0
    },
    {
      id: "shutdown",
      name: "SIGTERM shutdown time (one server SIGSTOPped)",
      measured: `${ms(record.sigterm.shutdownMs)} ms`,
      expected: "≤ 10,000 ms",
      pass: record.sigterm.shutdownMs <= 10_000
    },
    {
      id: "orphansAfterSigkill",
      name: "orphans after SIGKILL + restart of the gateway",
      measured: `${orphanText(record.sigkill.orphans)} of ${record.sigkill.checked}`,
      expected: "0",
      pass: record.sigkill.orphans.length === 0 && record.sigkill.checked > 0
    }
  ]
}

const countBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1)
  return counts
}

const entriesText = (counts: ReadonlyMap<string, number>) =>
  Array.from(counts.entries())
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ")

/** The per-toolset traffic table. */
export const trafficTable = (record: Record): string => {
  const by = new Map<string, Array<Outcome>>()
  for (const o of record.outcomes) by.set(o.toolset, [...(by.get(o.toolset) ?? []), o])
  const rows = Array.from(by.entries()).map(([toolset, list]) => {
    const oks = ascending(list.filter(isSuccess).map((o) => o.end - o.start))
    const errors = countBy(
      list.filter((o) => o.verdict === "error"),
      (o) => o.tag ?? "?"
    )
    return [
      toolset,
      String(list.length),
      String(oks.length),
      String(list.filter((o) => o.verdict === "error").length),
      String(list.filter((o) => o.verdict === "wrong" || o.verdict === "twice").length),
      String(list.filter((o) => o.verdict === "protocol" || o.verdict === "hang").length),
      oks.length === 0 ? "-" : ms(percentile(oks, 0.5)),
      oks.length === 0 ? "-" : ms(percentile(oks, 0.99)),
      entriesText(errors) || "-"
    ]
  })
  return renderTable(
    ["toolset", "calls", "ok", "errors", "wrong", "protocol/hang", "ok p50 ms", "ok p99 ms", "errors by tag"],
    rows
  )
}

/** Recovery per fault kind: from the fault (or its end, for a stop or a downed HTTP server) to the first success. */
export const recoveryTable = (record: Record): string => {
  const all = recoveries(record)
  const row = (label: string, of: ReadonlyArray<(typeof all)[number]>) => {
    const times = ascending(of.flatMap((r) => (r.ms === undefined ? [] : [r.ms])))
    return [
      label,
      String(of.length),
      String(of.length - times.length),
      times.length === 0 ? "-" : ms(percentile(times, 0.5)),
      times.length === 0 ? "-" : ms(percentile(times, 0.95)),
      times.length === 0 ? "-" : ms(times.at(-1) ?? 0)
    ]
  }
  // Each kind, then the toolsets it hit when it hit more than one.
  const rows = Faults.kinds.flatMap((kind) => {
    const of = all.filter((r) => r.fault.kind === kind)
    const toolsets = Array.from(new Set(of.map((r) => r.fault.toolset))).sort()
    const detail =
      toolsets.length > 1
        ? toolsets.map((t) =>
            row(
              `  ${kind} ${t}`,
              of.filter((r) => r.fault.toolset === t)
            )
          )
        : []
    return [row(toolsets.length === 1 ? `${kind} ${toolsets[0]}` : kind, of), ...detail]
  })
  return renderTable(["fault", "count", "unrecovered", "median ms", "p95 ms", "max ms"], rows)
}

/** Gateway resources over the run, in tenths. */
export const resourceTable = (record: Record): string => {
  const { samples } = record
  if (samples.length === 0) return "  (no samples)"
  const t0 = samples[0]?.t ?? 0
  const rows: Array<Array<string>> = []
  for (let i = 0; i < 10; i++) {
    const s = samples[Math.min(samples.length - 1, Math.floor((i * samples.length) / 10))]
    if (s !== undefined) rows.push([`${ms((s.t - t0) / 1000)} s`, mib(s.rssMiB), String(s.fds), String(s.servers)])
  }
  const last = samples.at(-1)
  if (last !== undefined)
    rows.push([`${ms((last.t - t0) / 1000)} s`, mib(last.rssMiB), String(last.fds), String(last.servers)])
  return renderTable(["elapsed", "RSS MiB", "fds", "server procs"], rows)
}

/** One line per error tag with its first message, for whoever reads the run. */
export const errorSamples = (record: Record): string => {
  const first = new Map<string, Outcome>()
  for (const o of record.outcomes) {
    if (o.verdict === "ok" || o.verdict === "empty") continue
    const key = `${o.verdict}${o.tag === undefined ? "" : `/${o.tag}`}`
    if (!first.has(key)) first.set(key, o)
  }
  return Array.from(first.entries())
    .map(([key, o]) => `  ${key} (${o.tool}): ${(o.detail ?? "").replace(/\s+/g, " ").slice(0, 200)}`)
    .join("\n")
}

export const summaryTable = (list: ReadonlyArray<Check>): string =>
  renderTable(
    ["check", "measured", "expected", "result"],
    list.map((c) => [c.name, c.measured, c.expected, c.pass ? "PASS" : "FAIL"])
  )
