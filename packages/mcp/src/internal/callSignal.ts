/**
 * The signal of a request a fiber sends: an `AbortSignal` as the SDK and `TaskCall` read one
 * (`aborted`, `reason`, `throwIfAborted`, `abort` listeners), made without an `AbortController`.
 * Such a signal aborts only when its fiber is interrupted, which few calls are, and a controller
 * per call (an `EventTarget`, the map of its listeners) was half of what `registry.callTool`
 * cost over `callToolNow` on the call-path bench: ~2 µs of each call and ~6 µs of CPU.
 *
 * Nothing that checks `instanceof AbortSignal` (Node's `fetch`, timers, `events.once`) may be
 * handed one; the SDK's requests and `TaskCall` only read it.
 */

/** A listener as `addEventListener` takes it. */
type Listener = Parameters<AbortSignal["addEventListener"]>[1]

export class CallSignal implements AbortSignal {
  aborted = false
  reason: unknown = undefined
  onabort: ((this: AbortSignal, event: Event) => unknown) | null = null
  private listeners: Array<Listener> | undefined = undefined

  throwIfAborted(): void {
    if (this.aborted) throw this.reason
  }

  /** Only `abort` is ever dispatched; a listener added once aborted is never called, as on the web. */
  addEventListener(type: string, listener: Listener | null): void {
    if (type !== "abort" || listener === null || this.aborted) return
    if (this.listeners === undefined) this.listeners = [listener]
    else if (!this.listeners.includes(listener)) this.listeners.push(listener)
  }

  removeEventListener(type: string, listener: Listener | null): void {
    if (type !== "abort" || this.listeners === undefined) return
    const at = this.listeners.indexOf(listener as Listener)
    if (at >= 0) this.listeners.splice(at, 1)
  }

  dispatchEvent(event: Event): boolean {
    if (event.type !== "abort") return true
    this.onabort?.call(this, event)
    const listeners = this.listeners ?? []
    this.listeners = undefined
    for (const listener of listeners) {
      if (typeof listener === "function") listener.call(this, event)
      else listener.handleEvent(event)
    }
    return true
  }

  /** Aborts once, with `reason` or the `AbortError` an `AbortController` gives. */
  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.dispatchEvent(new Event("abort"))
  }
}
