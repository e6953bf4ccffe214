/**
 * Which process a server belongs to, so that no server outlives it. A Toolvisor that is SIGKILLed
 * runs no finalizer, and a server that ignores stdin EOF (or is stopped) keeps running in its own
 * process group. So every server carries its owner's mark in its environment, which its children
 * inherit — the owner's pid and start time, because pids are reused and a new process with the
 * owner's pid is not the owner — and a sweep kills the groups of marked processes whose owner is
 * gone. Linux only (it reads /proc): elsewhere servers go unmarked and a sweep logs that it cannot
 * look.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as ProcessGroup from "./internal/processGroup.ts"
import * as Procfs from "./Procfs.ts"

/** The environment variable that holds the mark: `<owner pid>/<owner start time>`. */
export const envKey = "TOOLVISOR_OWNER"

/** One process for good: its pid and when it started (clock ticks since boot, from /proc). */
export interface Owner {
  readonly pid: number
  readonly startTime: number
}

export const encode = (owner: Owner): string => `${owner.pid}/${owner.startTime}`

/** The owner a mark names; `undefined` for a value that is not a mark. */
export const decode = (value: string): Owner | undefined => {
  const match = /^(\d+)\/(\d+)$/.exec(value)
  return match === null ? undefined : { pid: Number(match[1]), startTime: Number(match[2]) }
}

const selfStat = Procfs.stat(process.pid)

/** This process as an owner; `undefined` without /proc. */
export const self: Owner | undefined =
  selfStat === undefined ? undefined : { pid: process.pid, startTime: selfStat.startTime }

/** The environment entry that marks a server as this process's (none without /proc). */
export const mark: Readonly<Record<string, string>> = self === undefined ? {} : { [envKey]: encode(self) }

/** True while the owner runs: its pid is alive and still names the process that started then. */
export const isAlive = (owner: Owner): boolean => {
  const stat = Procfs.stat(owner.pid)
  return stat !== undefined && stat.state !== "Z" && stat.startTime === owner.startTime
}

/** A live process that carries a mark. */
export interface Marked {
  readonly pid: number
  readonly pgid: number
  readonly owner: Owner
  /** Its environment, for what a caller marks on top (a cluster runner's id). */
  readonly env: ReadonlyMap<string, string>
}

/**
 * Every live marked process in this process's pid namespace (a container's marks name its own
 * pids), except those in this process's own group.
 */
export const scan = (): ReadonlyArray<Marked> => {
  const ownGroup = Procfs.stat(process.pid)?.pgrp
  const namespace = Procfs.pidNamespace(process.pid)
  return Procfs.pids().flatMap((pid): ReadonlyArray<Marked> => {
    const env = Procfs.environ(pid)
    const value = env?.get(envKey)
    const owner = value === undefined ? undefined : decode(value)
    const stat = owner === undefined ? undefined : Procfs.stat(pid)
    if (env === undefined || owner === undefined || stat === undefined) return []
    if (stat.state === "Z" || stat.pgrp <= 1 || stat.pgrp === ownGroup) return []
    if (Procfs.pidNamespace(pid) !== namespace) return []
    return [{ pid, pgid: stat.pgrp, owner, env }]
  })
}

/**
 * The groups to kill: those whose every marked member `select` picks, and whose leader is one of
 * them or gone — a marked process inside a group some other program leads is not ours to end.
 */
const groupsOf = (marked: ReadonlyArray<Marked>, select: (marked: Marked) => boolean): ReadonlyArray<number> => {
  const members = new Map<number, Array<Marked>>()
  for (const m of marked) members.set(m.pgid, [...(members.get(m.pgid) ?? []), m])
  return [...members].flatMap(([pgid, group]) => {
    const leader = Procfs.stat(pgid)
    const foreignLeader = leader !== undefined && leader.pgrp === pgid && !group.some((m) => m.pid === pgid)
    return group.every(select) && !foreignLeader ? [pgid] : []
  })
}

/** How long a sweep waits for the groups it killed to be gone before it reports them and returns. */
const killWait = Duration.seconds(5)

/**
 * Kills the marked groups `select` picks with SIGKILL (their owner is not there to close them
 * politely, and a stopped process dies of it too) and returns them once they are gone. It waits on
 * the groups' members, not on marks: a process being torn down has lost its environment already.
 */
export const sweep = (why: string, select: (marked: Marked) => boolean): Effect.Effect<ReadonlyArray<number>> =>
  Effect.gen(function* () {
    if (!Procfs.available) {
      yield* Effect.logWarning("no /proc on this system: left-over server processes cannot be found")
      return []
    }
    const groups = groupsOf(scan(), select)
    if (groups.length === 0) return groups
    yield* Effect.logWarning(`killing ${groups.length} process group(s) ${why}: ${groups.join(", ")}`)
    for (const pgid of groups) ProcessGroup.signal(pgid, "SIGKILL")
    const gone = yield* Effect.forEach(groups, (pgid) => ProcessGroup.awaitGone(pgid, killWait), {
      concurrency: "unbounded"
    })
    const left = groups.filter((_, i) => !gone[i])
    if (left.length > 0) yield* Effect.logWarning(`process group(s) still there after SIGKILL: ${left.join(", ")}`)
    return groups
  })

/** Kills what owners that are gone left behind. */
export const sweepOrphans: Effect.Effect<ReadonlyArray<number>> = sweep(
  "left by a Toolvisor that is gone",
  (m) => !isAlive(m.owner)
)

/**
 * Sweeps now, returning once the orphans are gone, then every `interval` while the scope is open:
 * another Toolvisor on this host can be killed while this one runs.
 */
export const guard = (interval: Duration.Input): Effect.Effect<void, never, Scope.Scope> =>
  Procfs.available
    ? sweepOrphans.pipe(
        Effect.andThen(
          Effect.sleep(interval).pipe(
            Effect.andThen(sweepOrphans),
            Effect.forever,
            Effect.forkScoped({ startImmediately: true })
          )
        ),
        Effect.asVoid
      )
    : Effect.logWarning("no /proc on this system: servers left by a killed Toolvisor cannot be found")
