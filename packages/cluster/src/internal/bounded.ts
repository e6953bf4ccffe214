/**
 * A layer whose release has a deadline. Effect's cluster layers can wait forever while shutting
 * down (a runner that was paused past its lease and resumed never finished its SIGTERM: a
 * connection's fiber never ended, and the socket server waited for it). A runner must always
 * exit, so the release gets `limit`; past it `overrun` runs (the host stops what it started) and
 * the release is left to finish in the background, if ever, while the process goes on to exit.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"

export const bounded = <A, E, R, R2>(
  layer: Layer.Layer<A, E, R>,
  limit: Duration.Input,
  overrun: (limit: Duration.Duration) => Effect.Effect<void, never, R2>
): Layer.Layer<A, E, R | R2> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const deadline = Duration.fromInputUnsafe(limit)
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
          const closed = yield* Fiber.await(closing).pipe(Effect.timeoutOption(deadline))
          if (Option.isNone(closed)) yield* overrun(deadline)
        })
      )
      return yield* Layer.buildWithScope(layer, scope)
    })
  )
