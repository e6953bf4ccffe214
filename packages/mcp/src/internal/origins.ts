/**
 * The origins of a toolset's calls in flight, so a request its server sends meanwhile can be
 * attributed. The wire says nothing of which call a server request belongs to, so the toolset
 * tells only when every call in flight has one and the same origin; otherwise it says why not.
 */
import type { CallOrigin } from "@toolvisor/core"
import type { Attribution } from "./clientFeatures.ts"

export interface Origins {
  /** Counts a call of `origin` (none: an unattributed call) until the returned function is called. */
  readonly enter: (origin: CallOrigin.CallOrigin | undefined) => () => void
  readonly now: () => Attribution
}

export const make = (): Origins => {
  const byKey = new Map<string, { readonly origin: CallOrigin.CallOrigin; calls: number }>()
  let unattributed = 0
  return {
    enter: (origin) => {
      if (origin === undefined) {
        unattributed += 1
      } else {
        const entry = byKey.get(origin.key)
        if (entry === undefined) byKey.set(origin.key, { origin, calls: 1 })
        else entry.calls += 1
      }
      let left = false
      return () => {
        if (left) return
        left = true
        if (origin === undefined) {
          unattributed -= 1
          return
        }
        const entry = byKey.get(origin.key)
        if (entry !== undefined && --entry.calls === 0) byKey.delete(origin.key)
      }
    },
    now: () => {
      const [only] = byKey.values()
      if (only !== undefined && byKey.size === 1 && unattributed === 0) return { origin: only.origin }
      if (byKey.size === 0 && unattributed === 0) return { origin: undefined, unknown: "no call of it is in flight" }
      if (byKey.size === 0) return { origin: undefined, unknown: "the calls in flight named no origin" }
      return {
        origin: undefined,
        unknown: "calls of several origins are in flight, and the request does not say whose it is"
      }
    }
  }
}
