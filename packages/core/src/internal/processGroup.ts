/**
 * A process group as one thing. A server leads its own group and whatever it starts (an `npx`
 * wrapper's real server, a helper) joins it, so signals go to the group and "gone" means that no
 * live member is left — the leader's exit alone says nothing about its children.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Procfs from "./procfs.ts"
import * as WallClock from "./wallClock.ts"

/** Sends `signal` to every member of the group; a group that is already gone is no error. */
export const signal = (pgid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Waits until no live member of the group is left; false if `within` (real time) passes first. */
export const awaitGone = (pgid: number, within: Duration.Duration): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(within)
    while (Procfs.groupAlive(pgid)) {
      if (Date.now() >= deadline) return false
      yield* WallClock.sleep(20)
    }
    return true
  })
