/**
 * No server outlives its runner. Every process a runner starts carries a mark in its environment
 * — the runner's id and pid — which children and grandchildren inherit. Servers that ignore both
 * stdin EOF and the LSP `processId` keep running when their runner is SIGKILLed, while the
 * cluster starts a second copy elsewhere; marks let them be found and their groups killed:
 * - a runner starting up kills what earlier lives at its address left;
 * - every runner, every few seconds, kills what a dead runner on the same host left;
 * - a runner shutting down kills what its own toolsets left, after they were closed.
 * Linux only (it reads /proc); elsewhere the sweeps log that they cannot look and do nothing.
 */
import * as NodeFs from "node:fs"
import { ServerProcess } from "@toolvisor/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"

/** The environment variable that marks a process as started by a runner: `<runner id>/<runner pid>`. */
export const envKey = "TOOLVISOR_RUNNER"

/** The runner id of a runner address: unique on a host, since two runners cannot share a port. */
export const runnerId = (address: { readonly host: string; readonly port: number }): string =>
  `${address.host}:${address.port}`

/** The mark this process gives the servers it starts. */
export const mark = (id: string): string => `${id}/${process.pid}`

interface Marked {
  readonly pgid: number
  readonly runner: string
  readonly runnerPid: number
}

const readProc = (path: string): string | undefined => {
  try {
    return NodeFs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** Fields of /proc/<pid>/stat after the command: state, ppid, pgrp, … */
const statFields = (pid: number): ReadonlyArray<string> | undefined => {
  const stat = readProc(`/proc/${pid}/stat`)
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** The runner that started a live process, from the mark in its environment. */
export const markOf = (pid: number): { readonly runner: string; readonly runnerPid: number } | undefined => {
  const value = readProc(`/proc/${pid}/environ`)
    ?.split("\0")
    .find((e) => e.startsWith(`${envKey}=`))
    ?.slice(envKey.length + 1)
  const slash = value?.lastIndexOf("/") ?? -1
  if (value === undefined || slash < 0) return undefined
  return { runner: value.slice(0, slash), runnerPid: Number(value.slice(slash + 1)) }
}

/** Every live marked process group on this host, except this process's own. */
export const scan = (): ReadonlyArray<Marked> => {
  const found = new Map<number, Marked>()
  for (const entry of NodeFs.readdirSync("/proc")) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    const mark = markOf(pid)
    if (mark === undefined) continue
    const fields = statFields(pid)
    if (fields === undefined || fields[0] === "Z") continue
    const pgid = Number(fields[2])
    if (!Number.isInteger(pgid) || pgid <= 1 || pgid === process.pid) continue
    found.set(pgid, { pgid, ...mark })
  }
  return [...found.values()]
}

/** Kills the marked groups `select` picks, waits until they are gone, and returns them. */
const sweep = (why: string, select: (m: Marked) => boolean): Effect.Effect<ReadonlyArray<number>> =>
  Effect.gen(function* () {
    if (!NodeFs.existsSync("/proc/self/stat")) {
      yield* Effect.logWarning("no /proc on this system: left-over server processes cannot be found")
      return []
    }
    const groups = scan()
      .filter(select)
      .map((m) => m.pgid)
    if (groups.length === 0) return groups
    yield* Effect.logWarning(`killing ${groups.length} process group(s) ${why}: ${groups.join(", ")}`)
    for (const pgid of groups) {
      try {
        process.kill(-pgid, "SIGKILL")
      } catch {
        // Gone between the scan and the kill.
      }
    }
    // Waits on the groups' members, not on the marks: a process being torn down has already lost
    // its environment (no mark) while it is not yet a zombie.
    yield* Effect.sync(() => groups.filter(ServerProcess.groupAlive)).pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (left) => left.length === 0, times: 100 })
    )
    return groups
  })

/**
 * What earlier lives of runner `id` left (its current life excepted). Only lives that are over: a
 * runner started twice at one address by mistake must not kill the running one's servers before
 * it finds the port taken.
 */
export const sweepEarlier = (id: string) =>
  sweep(
    `left by an earlier runner at ${id}`,
    (m) => m.runner === id && m.runnerPid !== process.pid && !ServerProcess.isAlive(m.runnerPid)
  )

/** What runners that have died left on this host. */
export const sweepDead = sweep(
  "left by a runner that died",
  (m) => m.runnerPid !== process.pid && !ServerProcess.isAlive(m.runnerPid)
)

/** What this runner's own servers left after they were closed. */
export const sweepOwn = (id: string) =>
  sweep("left by this runner's toolsets", (m) => m.runner === id && m.runnerPid === process.pid)

/**
 * Sweeps when built, every `interval` while up, and once more when released — after everything
 * built on top of it (the runner and its toolsets) has closed.
 */
export const layer = (id: string, interval: Duration.Input = "5 seconds"): Layer.Layer<never> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      yield* Effect.acquireRelease(Effect.andThen(sweepEarlier(id), sweepDead), () => sweepOwn(id))
      yield* sweepDead.pipe(
        Effect.repeat(Schedule.spaced(Duration.fromInputUnsafe(interval))),
        Effect.forkScoped({ startImmediately: true })
      )
    })
  )
