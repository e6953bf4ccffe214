/**
 * Bounds on JSON that crosses a trust boundary: tool arguments and results, JSON-lines commands,
 * config files. A value nested deeper than a JavaScript stack can walk overflows every recursive
 * consumer (the SDK's validators, `JSON.stringify`, Schema decoding) with a `RangeError` that is
 * easy to swallow; checking depth first, without recursion, turns it into a clear error at once.
 */

/** The nesting any real tool argument, result or config stays far below. */
export const maxDepth = 64

/**
 * The nesting depth of a parsed JSON value (a scalar is 0, `[]` and `{}` are 1), counted without
 * recursion and stopping as soon as `limit` is passed, so a hostile value costs at most its size.
 */
export const depth = (value: unknown, limit = Number.POSITIVE_INFINITY): number => {
  let deepest = 0
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [node, level] = stack.pop()!
    if (node === null || typeof node !== "object") continue
    const here = level + 1
    if (here > deepest) deepest = here
    if (deepest > limit) return deepest
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push([child, here])
    }
  }
  return deepest
}

/** True when `value` nests deeper than `limit` (default `maxDepth`). */
export const isTooDeep = (value: unknown, limit = maxDepth): boolean => depth(value, limit) > limit

/**
 * The nesting depth of JSON text, scanned without parsing (strings and escapes skipped), so text
 * too deep to parse safely is refused before `JSON.parse` or a YAML parser builds it.
 */
export const textDepth = (text: string, limit = Number.POSITIVE_INFINITY): number => {
  let level = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      level++
      if (level > deepest) {
        deepest = level
        if (deepest > limit) return deepest
      }
    } else if (c === 125 /* } */ || c === 93 /* ] */) level--
  }
  return deepest
}
