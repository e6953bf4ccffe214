/**
 * Helpers shared by the benchmarks in this folder: forced GC, order statistics, number formatting,
 * a plain-text table and series that take turns call by call.
 */
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Effect from "effect/Effect"

/** Forces a full GC; `script` is the npm script that runs the benchmark with --expose-gc. */
export const gc = (script: string): void => {
  if (globalThis.gc === undefined) throw new Error(`run node with --expose-gc (npm run ${script} does)`)
  globalThis.gc()
}

/** Nearest-rank percentile of an ascending array. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN

/** A sorted copy, smallest first. */
export const ascending = (values: ReadonlyArray<number>): Array<number> => [...values].sort((a, b) => a - b)

export const median = (values: ReadonlyArray<number>): number => percentile(ascending(values), 0.5)
export const sum = (values: ReadonlyArray<number>): number => values.reduce((a, b) => a + b, 0)
export const max = (values: ReadonlyArray<number>): number => ascending(values).at(-1) ?? Number.NaN
export const min = (values: ReadonlyArray<number>): number => ascending(values)[0] ?? Number.NaN

/** A number formatter with `en-US` grouping and a fixed number of decimals (`digits` by default). */
export const formatter =
  (digits: number) =>
  (n: number, fractionDigits = digits): string =>
    n.toLocaleString("en-US", { maximumFractionDigits: fractionDigits, minimumFractionDigits: fractionDigits })

const line = (cells: ReadonlyArray<string>, widths: ReadonlyArray<number>) =>
  cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ")

/** A text table, indented by two spaces: first column left-aligned, the others right-aligned. */
export const renderTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const out = [line(header, widths), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map((r) => line(r, widths))]
  return out.map((l) => `  ${l}`).join("\n")
}

/** The kernel's clock tick on Linux: /proc CPU times are counted in these. */
export const TICK_MS = 10

/** CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat; NaN if unreadable. */
export const processCpuMs = (pid: number): number => {
  const stat = Procfs.stat(pid)
  return stat === undefined ? Number.NaN : (stat.utime + stat.stime) * TICK_MS
}

/** A seeded pseudo-random source in [0, 1) (mulberry32): runs of a benchmark draw the same orders. */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A shuffled copy (Fisher–Yates) drawn from `random`. */
export const shuffled = <A>(items: ReadonlyArray<A>, random: () => number): Array<A> => {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const item = copy[i] as A
    copy[i] = copy[j] as A
    copy[j] = item
  }
  return copy
}

/**
 * `turns` turns of `run` over every item, one call each, the order rotated at each turn: whatever
 * the machine does meanwhile falls on every series alike, where blocks of calls per series let it
 * fall on one.
 */
export const takeTurns = <A, E>(items: ReadonlyArray<A>, turns: number, run: (item: A) => Effect.Effect<void, E>) =>
  Effect.gen(function* () {
    for (let i = 0; i < turns; i++) {
      for (let k = 0; k < items.length; k++) {
        const item = items[(i + k) % items.length]
        if (item !== undefined) yield* run(item)
      }
    }
  })
