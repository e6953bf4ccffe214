/**
 * How far apart two names are, in single-character edits: what "did you mean" suggestions rank
 * by, for config keys and for tool names alike. The names may be anyone's (a client's tool name, a
 * server's listing), so a caller that only wants near ones says how near (`max`), and each row is
 * computed only within that distance of the diagonal instead of across the whole other name.
 */

/**
 * The Levenshtein distance between `a` and `b` (insertions, deletions and substitutions), or any
 * number above `max` once it is known to exceed it.
 */
export const distance = (a: string, b: string, max = Number.POSITIVE_INFINITY): number => {
  if (Math.abs(a.length - b.length) > max) return max + 1
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  let current = new Array<number>(b.length + 1).fill(Number.POSITIVE_INFINITY)
  for (let i = 1; i <= a.length; i++) {
    // Only cells within `max` of the diagonal can lead to a distance of `max` or less; the cells
    // just outside the band are infinite, so the next row never reads a stale one.
    const from = Math.max(1, i - max)
    const to = Math.min(b.length, i + max)
    current[from - 1] = from === 1 ? i : Number.POSITIVE_INFINITY
    if (to < b.length) current[to + 1] = Number.POSITIVE_INFINITY
    let best = current[from - 1] ?? Number.POSITIVE_INFINITY
    for (let j = from; j <= to; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      const cell = Math.min(
        (previous[j] ?? Number.POSITIVE_INFINITY) + 1,
        (current[j - 1] ?? Number.POSITIVE_INFINITY) + 1,
        (previous[j - 1] ?? Number.POSITIVE_INFINITY) + cost
      )
      current[j] = cell
      if (cell < best) best = cell
    }
    if (best > max) return max + 1
    ;[previous, current] = [current, previous]
  }
  return previous[b.length] ?? 0
}
