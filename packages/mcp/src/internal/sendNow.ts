/**
 * How a request sent outside the Effect runtime, on the session `Supervisor.liveNow` gave, ends:
 * one code path for tool calls and for prompts and resources. A session that fails its
 * requests when it dies settles the request by itself; on one that may never (a remote session)
 * the request races the session's end (`onEnd`), as `Supervisor.use` does. A failure is handed
 * to `recover`, which runs the caller's recovery in the runtime; a request its caller aborted
 * ends interrupted.
 */
import { Deadline, type Supervisor } from "@toolvisor/core"
import * as Exit from "effect/Exit"
import * as McpConnector from "../McpConnector.ts"

/** The SDK's options of one request. */
export interface SdkOptions {
  readonly signal?: AbortSignal
  readonly timeout: number
}

/** What the SDK bounds a request by (what is left of its deadline) and what aborts it. */
export const sdkOptions = (deadline: Deadline.Deadline | undefined, signal: AbortSignal | undefined): SdkOptions => ({
  ...(signal === undefined ? {} : { signal }),
  timeout: deadline === undefined ? McpConnector.noSdkTimeout : Deadline.remaining(deadline)
})

/** What to do with the outcome of a request sent at once. */
export interface Settle<A, B, E> {
  readonly signal: AbortSignal | undefined
  readonly succeeded: (answer: A) => B
  /** The request's own failure, classified as the runtime path classifies it. */
  readonly failure: (cause: unknown) => E
  /** Runs the recovery of a failed request (or of one whose session ended under it) in the runtime. */
  readonly recover: (error: E | Supervisor.Lost) => Promise<Exit.Exit<B, E>>
}

export const settle = <S, A, B, E>(
  now: Supervisor.Now<S>,
  sent: Promise<A>,
  how: Settle<A, B, E>
): Promise<Exit.Exit<B, E>> => {
  const succeeded = (answer: A): Exit.Exit<B, E> => Exit.succeed(how.succeeded(answer))
  const outcome = (cause: unknown) =>
    how.signal?.aborted === true ? Exit.interrupt() : how.recover(how.failure(cause))
  const { onEnd } = now
  if (onEnd === undefined) return sent.then(succeeded, outcome)
  return new Promise<Exit.Exit<B, E>>((resolve) => {
    let over = false
    const end = (exit: () => Exit.Exit<B, E> | Promise<Exit.Exit<B, E>>) => {
      if (over) return
      over = true
      stopListening()
      resolve(exit())
    }
    // Recovered after the Supervisor's actor is done with the session's end, not inside it.
    const stopListening = onEnd((lost) => end(() => Promise.resolve(lost).then(how.recover)))
    sent.then(
      (answer) => end(() => succeeded(answer)),
      (cause) => end(() => outcome(cause))
    )
  })
}
