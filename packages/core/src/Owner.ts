/**
 * Which process a server belongs to, so that no server outlives it. A Toolvisor that is SIGKILLed
 * runs no finalizer, and a server that ignores stdin EOF (or is stopped) keeps running in its own
 * process group. So every server carries its owner's mark in its environment, which its children
 * inherit — the owner's pid and start time, because pids are reused and a new process with the
 * owner's pid is not the owner — and a sweep kills the groups of marked processes whose owner is
 * gone. Three things read the marks: this process's watchdog, which ends them once this process is
 * gone however it died; the end of a server, which ends what escaped its process group; and a
 * sweep at start (and every few seconds), for what a Toolvisor whose watchdog died with it left.
 * Linux only (it reads /proc): elsewhere servers go unmarked and a sweep logs that it cannot look.
 */
import type * as NodeChildProcess from "node:child_process"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as ProcessGroup from "./internal/processGroup.ts"
import * as Procfs from "./internal/procfs.ts"
import * as Watchdog from "./internal/watchdog.ts"

/** The environment variable that holds the mark: `<owner pid>/<owner start time>`. */
export const envKey = "TOOLVISOR_OWNER"

/** One process for good: its pid and when it started (clock ticks since boot, from /proc). */
export interface Owner {
  readonly pid: number
  readonly startTime: number
}

/** The mark as a server's environment carries it (`envKey`): `<pid>/<start time>`. */
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

/**
 * The environment variable that tells a server from its owner's other servers: a number, unique
 * for the owner's life, which whatever the server starts inherits with the owner's mark.
 */
export const serverKey = "TOOLVISOR_SERVER"

/** One server's marks. */
export interface Claim {
  /** The server's number among this process's servers. */
  readonly server: string
  /** What to add to the server's environment, last, so that no spec overrides it (none without /proc). */
  readonly env: Readonly<Record<string, string>>
}

let claimed = 0

/**
 * Marks a new server as this process's. The first claim (and the first after the watchdog died)
 * starts this process's watchdog, which ends every marked process once this process is gone.
 */
export const claim: Effect.Effect<Claim> = Effect.suspend(() => {
  claimed += 1
  const server = String(claimed)
  if (self === undefined) return Effect.succeed({ server, env: {} })
  const env = { [envKey]: encode(self), [serverKey]: server }
  return Effect.as(watch(self), { server, env })
})

/**
 * How long the watchdog gives the servers of a gone owner between SIGTERM and SIGKILL. Finding
 * them first takes a scan of /proc in a shell, which a loaded machine slows: with 1 s, a server
 * that ignores SIGTERM outlived its owner by more than 3 s in 2 runs of 40.
 */
const watchdogGrace = 500

let watchdog: NodeChildProcess.ChildProcess | undefined

/** Starts this process's watchdog unless it runs; waits until it has started, or says why it could not. */
const watch = (owner: Owner): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (watchdog !== undefined) return Effect.void
    // Not a server: a mark this process inherited would let its own owner's sweeps take the watchdog for one.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== envKey && key !== serverKey))
    const child = Watchdog.start({ key: envKey, owner: encode(owner), graceMillis: watchdogGrace, env })
    watchdog = child
    const forget = () => {
      if (watchdog === child) watchdog = undefined
    }
    child.once("exit", forget)
    return Effect.callback<void>((resume) => {
      child.once("spawn", () => resume(Effect.void))
      child.on("error", (cause) => {
        forget()
        resume(Effect.logWarning(`no watchdog: servers outlive a SIGKILL of this process: ${cause.message}`))
      })
    })
  })

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
 * Ends the marked groups `select` picks and returns them once they are gone. With `term`, they get
 * SIGCONT and SIGTERM and that long to exit first; then SIGKILL, which a stopped process dies of
 * too, goes to the groups still marked (one that emptied may have passed its number on). It waits
 * on the groups' members, not on marks: a process being torn down has lost its environment already.
 */
export const sweep = (
  why: string,
  select: (marked: Marked) => boolean,
  term?: Duration.Duration
): Effect.Effect<ReadonlyArray<number>> =>
  Effect.gen(function* () {
    if (!Procfs.available) {
      yield* Effect.logWarning("no /proc on this system: left-over server processes cannot be found")
      return []
    }
    const groups = groupsOf(scan(), select)
    if (groups.length === 0) return groups
    yield* Effect.logWarning(`ending ${groups.length} process group(s) ${why}: ${groups.join(", ")}`)
    if (term !== undefined) {
      for (const pgid of groups) {
        ProcessGroup.signal(pgid, "SIGCONT")
        ProcessGroup.signal(pgid, "SIGTERM")
      }
      yield* Effect.forEach(groups, (pgid) => ProcessGroup.awaitGone(pgid, term), { concurrency: "unbounded" })
    }
    for (const pgid of term === undefined ? groups : groupsOf(scan(), select)) ProcessGroup.signal(pgid, "SIGKILL")
    const gone = yield* Effect.forEach(groups, (pgid) => ProcessGroup.awaitGone(pgid, killWait), {
      concurrency: "unbounded"
    })
    const left = groups.filter((_, i) => !gone[i])
    if (left.length > 0) yield* Effect.logWarning(`process group(s) still there after SIGKILL: ${left.join(", ")}`)
    return groups
  })

/**
 * Ends what one of this process's servers left outside its process group, once that group is
 * gone: a descendant that called `setsid` leads a group of its own but carries the server's marks.
 * Only that server's: this process's other servers have other numbers.
 */
export const endEscaped = (toolset: string, claim: Claim, term: Duration.Duration): Effect.Effect<void> =>
  claim.env[serverKey] === undefined
    ? Effect.void
    : Effect.asVoid(
        sweep(
          `that escaped the process group of ${toolset}'s server`,
          (m) => m.env.get(envKey) === claim.env[envKey] && m.env.get(serverKey) === claim.server,
          term
        )
      )

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
