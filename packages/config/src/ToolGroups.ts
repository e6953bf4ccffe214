/**
 * Tool groups (`groups:` in an agent config): named subsets of an agent's tools, each a list of
 * exposed tool names where `*` matches any run of characters (`git_*`, `*_search`). A gateway
 * client asks for one (`/mcp/<group>`, `serve --group`) and is offered, and may call, only its
 * tools: a small context for a host that needs a few of hundreds. A pattern that matches no tool
 * is usually a typo or a renamed toolset, and the group then silently lacks those tools;
 * `validate --check` reports it with the name it probably meant.
 */
import type * as AgentConfig from "./AgentConfig.ts"
import * as ConfigError from "./ConfigError.ts"

/**
 * Whether `name` matches `pattern`, `*` standing for any run of characters (none included). The
 * classic two-pointer match, which backtracks only to the last `*`: at most |pattern|·|name|
 * steps however many stars, where a regular expression built from the pattern can take
 * exponential time on a hostile server's long tool name.
 */
export const matches = (pattern: string, name: string): boolean => {
  let p = 0
  let n = 0
  let star = -1
  let resume = 0
  while (n < name.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === name[n]) {
      p++
      n++
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++
      resume = n
    } else if (star >= 0) {
      p = star + 1
      n = ++resume
    } else {
      return false
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++
  return p === pattern.length
}

/** Whether a tool belongs to the group made of these patterns. */
export const member =
  (patterns: ReadonlyArray<string>) =>
  (name: string): boolean =>
    patterns.some((pattern) => matches(pattern, name))

/** The groups' names, sorted: what an error about an unknown group lists. */
export const names = (config: Pick<AgentConfig.Config, "groups">): ReadonlyArray<string> =>
  Object.keys(config.groups ?? {}).sort()

/** The patterns of the named group; undefined when the config has no such group. */
export const find = (config: Pick<AgentConfig.Config, "groups">, group: string): ReadonlyArray<string> | undefined =>
  config.groups !== undefined && Object.hasOwn(config.groups, group) ? config.groups[group] : undefined

/** "no tool group "x"; the config names a, b" — for a flag, a URL path, or a message on stderr. */
export const unknownMessage = (config: Pick<AgentConfig.Config, "groups">, group: string): string => {
  const known = names(config)
  const near = ConfigError.didYouMean(group, known)
  return `no tool group "${group}"${near === undefined ? "" : ` (did you mean "${near}"?)`}; ${
    known.length === 0
      ? "the config names no groups (groups: at its top level)"
      : `the config names ${known.join(", ")}`
  }`
}

/** A group's pattern that matches no tool, so the group silently lacks what it meant to hold. */
export interface Unmatched {
  readonly group: string
  readonly pattern: string
  /** The tool name the pattern probably meant. */
  readonly near: string | undefined
}

/**
 * What a pattern that matches nothing probably meant: a tool name, or for `head*…` a tool name's
 * head of about that length with the rest of the pattern (`gti_*` → `git_*`).
 */
const nearPattern = (pattern: string, tools: ReadonlyArray<string>): string | undefined => {
  const star = pattern.indexOf("*")
  if (star < 0) return ConfigError.didYouMean(pattern, tools)
  const head = pattern.slice(0, star)
  // Heads a letter or two longer or shorter too: a missing or extra letter moves the star.
  const lengths = [0, 1, -1, 2, -2].map((delta) => head.length + delta).filter((length) => length > 0)
  const heads = [...new Set(tools.flatMap((tool) => lengths.map((length) => tool.slice(0, length))))]
  const near = ConfigError.didYouMean(head, heads)
  return near === undefined ? undefined : `${near}${pattern.slice(star)}`
}

/** Every pattern of every group that matches none of `tools` (exposed names, every agent's). */
export const check = (
  config: Pick<AgentConfig.Config, "groups">,
  tools: ReadonlyArray<string>
): ReadonlyArray<Unmatched> =>
  Object.entries(config.groups ?? {}).flatMap(([group, patterns]) =>
    patterns
      .filter((pattern) => !tools.some((tool) => matches(pattern, tool)))
      .map((pattern) => ({ group, pattern, near: nearPattern(pattern, tools) }))
  )

/** One line a user can act on. */
export const message = (found: Unmatched): string =>
  `group ${found.group}: "${found.pattern}" matches no tool${found.near === undefined ? "" : ` (did you mean "${found.near}"?)`}`
