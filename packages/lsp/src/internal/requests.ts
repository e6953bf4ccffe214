/**
 * Requests and notifications on one language server connection. Each one honours the deadline
 * of the tool call it belongs to (`Deadline`), tells the server when it gives up on a request
 * (`$/cancelRequest`), and fails as soon as the connection is lost. vscode-jsonrpc does not do
 * the last part itself: a closed connection leaves its pending requests waiting until `dispose`.
 * With all three here, a tool call runs in the caller's fiber — no fiber racing the session's
 * end, no sleeping fiber for the deadline — which is what keeps a hover close to a bare request.
 */
import { Classify, Deadline, type LifecycleError } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Rpc from "vscode-jsonrpc/node"

/** The server answered a request with an error; the session itself is fine. */
export class ResponseFailed extends Schema.TaggedError<ResponseFailed>()("ResponseFailed", {
  toolset: Schema.String,
  method: Schema.String,
  /** The JSON-RPC error code the server answered with. */
  code: Schema.Number,
  message: Schema.String
}) {}

/**
 * The server answered, but not in the shape the protocol gives its answer (a hover whose contents
 * are null, a location without a range): reading it failed. The request ran.
 */
export class MalformedAnswer extends Schema.TaggedError<MalformedAnswer>()("MalformedAnswer", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

export type RequestError = ResponseFailed | LifecycleError.LifecycleError

export interface Requests {
  /** Sends a request; interrupting the caller, or the deadline passing, cancels it on the server. */
  readonly request: <P, R, E>(
    type: Rpc.RequestType<P, R, E>,
    params: Rpc.RequestParam<P>
  ) => Effect.Effect<R, RequestError>
  /**
   * Sends a request made on a guess — say, that a document is unchanged on disk — and checks the
   * guess (`holds`) once the request is written, while the server works on it. A wrong guess
   * cancels the request and runs `otherwise` in its place. Checking first would put the check on
   * the path to the server.
   */
  readonly speculate: <P, R, E, E2>(
    type: Rpc.RequestType<P, R, E>,
    params: Rpc.RequestParam<P>,
    holds: () => boolean,
    otherwise: () => Effect.Effect<R, E2>
  ) => Effect.Effect<R, RequestError | E2>
  /** Sends a notification: done once written, which a server that stopped reading can delay. */
  readonly notify: <P>(
    type: Rpc.NotificationType<P>,
    params: Rpc.RequestParam<P>
  ) => Effect.Effect<void, LifecycleError.LifecycleError>
  /** Fails once the connection is lost, for waits that are not requests (pushed diagnostics). */
  readonly lost: Effect.Effect<never, LifecycleError.LifecycleError>
  /**
   * Ends the connection's requests: those in flight, and any sent later, fail with `error` (an
   * effect, so it can wait for the exit report that says why). Only the first call counts.
   */
  readonly close: (error: Effect.Effect<never, LifecycleError.LifecycleError>) => void
}

export const make = (name: string, connection: Rpc.MessageConnection): Requests => {
  let lostWith: Effect.Effect<never, LifecycleError.LifecycleError> | undefined
  const lostSignal = Deferred.makeUnsafe<void>()
  /** What each operation in flight does when the connection is lost. */
  const inFlight = new Set<(error: Effect.Effect<never, LifecycleError.LifecycleError>) => void>()

  const failure =
    (method: string) =>
    (cause: unknown): RequestError =>
      cause instanceof Rpc.ResponseError &&
      cause.code !== Rpc.ErrorCodes.PendingResponseRejected &&
      cause.code !== Rpc.ErrorCodes.ConnectionInactive
        ? new ResponseFailed({ toolset: name, method, code: cause.code, message: cause.message })
        : Classify.classify(name, cause)

  /**
   * One operation in flight: settled by the answer, the deadline's timer, the connection's loss
   * or the caller's interruption, whichever comes first; the others then do nothing.
   */
  const send = <A, E extends RequestError, E2 = never>(
    write: (token: Rpc.CancellationToken | undefined) => Promise<A>,
    fail: (cause: unknown) => E,
    cancellable: boolean,
    /** Run once the request is written: an effect it returns cancels the request and runs instead. */
    check?: () => Effect.Effect<A, E2> | undefined
  ): Effect.Effect<A, E | E2 | LifecycleError.LifecycleError> =>
    Effect.withFiber((fiber) => {
      if (lostWith !== undefined) return lostWith
      const deadline = fiber.getRef(Deadline.Current)
      if (deadline !== undefined && Deadline.remaining(deadline) === 0) {
        return Effect.fail(Deadline.exceeded(name, deadline))
      }
      return Effect.callback<A, E | E2 | LifecycleError.LifecycleError>((resume) => {
        const source = cancellable ? new Rpc.CancellationTokenSource() : undefined
        let timer: ReturnType<typeof setTimeout> | undefined
        let settled = false
        const settle = (outcome: Effect.Effect<A, E | E2 | LifecycleError.LifecycleError>) => {
          if (settled) return
          settled = true
          if (timer !== undefined) clearTimeout(timer)
          inFlight.delete(settle)
          resume(outcome)
        }
        // Only a request still in flight is cancelled, and only on a live connection: pyright
        // exits on a `$/cancelRequest` for a request it already answered, and a closed
        // connection throws on any send.
        const cancel = () => {
          if (lostWith !== undefined || source === undefined) return
          try {
            source.cancel()
          } catch {
            // The connection closed under us; its loss is reported by `close`.
          }
        }
        // Written first, so the server starts on it while the bookkeeping below runs.
        let answer: Promise<A>
        try {
          answer = write(source?.token)
        } catch (cause) {
          answer = Promise.reject(cause)
        }
        answer.then(
          (value) => settle(Effect.succeed(value)),
          (cause: unknown) => settle(Effect.fail(fail(cause)))
        )
        inFlight.add(settle)
        if (deadline !== undefined) {
          timer = setTimeout(() => {
            cancel()
            settle(Effect.fail(Deadline.exceeded(name, deadline)))
          }, Deadline.remaining(deadline))
        }
        const instead = check?.()
        if (instead !== undefined) {
          cancel()
          settle(instead)
        }
        return Effect.sync(() => {
          if (settled) return
          settled = true
          if (timer !== undefined) clearTimeout(timer)
          inFlight.delete(settle)
          cancel()
        })
      })
    })

  const sendRequest = <P, R, E, E2 = never>(
    type: Rpc.RequestType<P, R, E>,
    params: Rpc.RequestParam<P>,
    check?: () => Effect.Effect<R, E2> | undefined
  ) => send((token) => connection.sendRequest(type, params, token), failure(type.method), true, check)

  return {
    request: (type, params) => sendRequest(type, params),
    speculate: (type, params, holds, otherwise) => sendRequest(type, params, () => (holds() ? undefined : otherwise())),
    notify: (type, params) =>
      send(
        () => connection.sendNotification(type, params),
        (cause) => Classify.classify(name, cause),
        false
      ),
    lost: Effect.suspend(() => Deferred.await(lostSignal)).pipe(
      Effect.andThen(Effect.suspend(() => lostWith ?? Effect.never))
    ),
    close: (error) => {
      if (lostWith !== undefined) return
      lostWith = error
      for (const settle of [...inFlight]) settle(error)
      Deferred.doneUnsafe(lostSignal, Effect.void)
    }
  }
}
