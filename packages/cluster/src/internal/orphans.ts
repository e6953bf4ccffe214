/**
 * No server outlives its runner. Every server carries core's owner mark (the runner process's pid
 * and start time); a runner adds its id, which children and grandchildren inherit too. Servers
 * that ignore both stdin EOF and the LSP `processId` keep running when their runner is SIGKILLed,
 * while the cluster starts a second copy elsewhere; the marks let them be found and their groups
 * killed:
 * - a runner starting up kills what any owner that is gone left on this host — its own earlier
 *   lives' leftovers among them — and does that again every few seconds;
 * - a runner shutting down kills what its own toolsets left, after they were closed.
 * Linux only (it reads /proc); elsewhere the sweeps log that they cannot look and do nothing.
 */
import { Owner } from "@toolvisor/core"
import * as Procfs from "@toolvisor/core/internal/procfs"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The environment variable that names the runner that started a process, by its runner id. */
export const envKey = "TOOLVISOR_RUNNER"

/** The runner id of a runner address: unique on a host, since two runners cannot share a port. */
export const runnerId = (address: { readonly host: string; readonly port: number }): string =>
  `${address.host}:${address.port}`

/** What a runner adds to the environment of the servers it starts, on top of the owner mark. */
export const mark = (id: string): Readonly<Record<string, string>> => ({ [envKey]: id })

/** A live process a runner started. */
export interface Marked extends Owner.Marked {
  readonly runner: string
}

const runnerOf = (env: ReadonlyMap<string, string>) => env.get(envKey)

/** The runner that started a live process, from the mark in its environment. */
export const markOf = (pid: number): { readonly runner: string } | undefined => {
  const runner = Procfs.environ(pid)?.get(envKey)
  return runner === undefined ? undefined : { runner }
}

/** Every live process on this host that a runner started, except this process's own group. */
export const scan = (): ReadonlyArray<Marked> =>
  Owner.scan().flatMap((m) => {
    const runner = runnerOf(m.env)
    return runner === undefined ? [] : [{ ...m, runner }]
  })

/** What this runner's own servers left after they were closed. */
const sweepOwn = (id: string) =>
  Owner.sweep(
    "left by this runner's toolsets",
    // A live owner with this process's pid is this process.
    (m) => runnerOf(m.env) === id && m.owner.pid === process.pid && Owner.isAlive(m.owner)
  )

/**
 * Kills the process group a server leads at once (SIGKILL), for a toolset this runner must stop
 * serving now: its shard belongs to another runner, which runs its own copy.
 */
export const killServer = (pgid: number, why: string) => Owner.sweep(why, (m) => m.pgid === pgid)

/**
 * Sweeps when built, every `interval` while up, and once more when released — after everything
 * built on top of it (the runner and its toolsets) has closed. What an earlier life at this
 * address left needs no sweep of its own: its owner is gone, so the first sweep ends it, before
 * this runner listens or starts a server.
 */
export const layer = (id: string, interval: Duration.Input = "5 seconds"): Layer.Layer<never> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      yield* Effect.addFinalizer(() => Effect.asVoid(sweepOwn(id)))
      yield* Owner.guard(interval)
    })
  )
