/**
 * The client features an app provides to its MCP servers: `Sampling`, `Elicitation` and `Roots`,
 * each an optional service. A toolset declares exactly the capabilities whose service it was given
 * and answers the server's requests with them; a server never offers what the app cannot answer.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Elicitation from "./Elicitation.ts"
import * as Roots from "./Roots.ts"
import * as Sampling from "./Sampling.ts"

/** The services a toolset answers its server's requests with; absent ones are not declared. */
export interface Features {
  readonly sampling?: Sampling.Service | undefined
  readonly elicitation?: Elicitation.Service | undefined
  readonly roots?: Roots.Service | undefined
}

/** The features provided in the current context (none required). */
export const current: Effect.Effect<Features> = Effect.gen(function* () {
  const sampling = Option.getOrUndefined(yield* Effect.serviceOption(Sampling.Sampling))
  const elicitation = Option.getOrUndefined(yield* Effect.serviceOption(Elicitation.Elicitation))
  const roots = Option.getOrUndefined(yield* Effect.serviceOption(Roots.Roots))
  return {
    ...(sampling === undefined ? {} : { sampling }),
    ...(elicitation === undefined ? {} : { elicitation }),
    ...(roots === undefined ? {} : { roots })
  }
})

/** Whether any feature may need to know which call caused a request (roots too: a gateway answers them per caller). */
export const needsOrigin = (features: Features): boolean =>
  features.sampling !== undefined || features.elicitation !== undefined || features.roots !== undefined
