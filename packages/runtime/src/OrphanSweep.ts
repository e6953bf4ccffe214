/**
 * Local mode's guard against servers left by a Toolvisor that was killed (SIGKILL, the OOM killer,
 * a container stop past its timeout) together with its watchdog, which otherwise ends them within
 * seconds (`Owner`): such servers carry their dead owner's mark, and a Toolvisor kills their
 * process groups when it starts — before any server of its own is up — and every few seconds
 * while it runs. Cluster runners do the same, with their runner ids (`@toolvisor/cluster`).
 */
import { Owner } from "@toolvisor/core"
import * as Layer from "effect/Layer"

/** How often a running Toolvisor looks for servers that another, killed, Toolvisor left. */
export const interval = "5 seconds"

/** Sweeps now, returning once the left-over servers are gone, then every `interval` in the current scope. */
export const start = Owner.guard(interval)

/** `start` as a Layer, for an Effect app that builds its registry with `Runtime.layer`. */
export const layer: Layer.Layer<never> = Layer.effectDiscard(start)
