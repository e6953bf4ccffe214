/**
 * Who holds a credential for Toolvisor's HTTP port: the bearer of the static token (from a file or
 * the environment), or of a JWT access token that an OAuth authorization server signed for this
 * resource — its signature checked against the server's published keys (JWKS), and its `iss`,
 * `aud` and `exp` against what the gateway was told. The second lets a team put the gateway
 * behind its identity provider; the first is enough for one person's machine.
 */
import * as NodeCrypto from "node:crypto"
import { discoverAuthorizationServerMetadata } from "@modelcontextprotocol/sdk/client/auth.js"
import * as LogThrottle from "@toolvisor/core/internal/logThrottle"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Jose from "jose"

export interface Jwt {
  /** The authorization server's issuer identifier, as tokens carry it in `iss`. */
  readonly issuer: string
  /** The `aud` a token must carry: this resource's identifier, as clients ask for it (RFC 8707). */
  readonly audience: string
  /** Where the signing keys are; read from the issuer's metadata (RFC 8414, then OpenID) when omitted. */
  readonly jwksUrl?: string
}

export interface Options {
  /** A static bearer token; compared in constant time. */
  readonly token?: string
  /** Accept JWT access tokens from this authorization server. */
  readonly jwt?: Jwt
}

/**
 * What one request's `Authorization` header proves: a credential the gateway accepts, none at
 * all, one it refuses, or a token it cannot check now because the keys are out of reach.
 */
export type Verdict = "accepted" | "missing" | "invalid" | "unverifiable"

/**
 * A verdict with who the credential speaks for: a JWT's issuer and subject (`sub`, else the
 * client's `client_id` or `azp`), so what one user opened another cannot use; `undefined` for
 * the static token, which everyone who holds it shares.
 */
export interface Identified {
  readonly verdict: Verdict
  readonly principal?: string | undefined
}

export interface BearerAuth {
  /** Whether a credential is configured at all; without one every request is accepted. */
  readonly required: boolean
  /** The authorization server clients are sent to for a token, when JWTs are accepted. */
  readonly issuer: string | undefined
  readonly verify: (authorization: string | undefined) => Effect.Effect<Verdict>
  /** `verify`, with who an accepted credential speaks for. */
  readonly identify: (authorization: string | undefined) => Effect.Effect<Identified>
}

/** The authorization server's keys could not be found at start: its metadata is missing or names none. */
export class JwksError extends Schema.TaggedError<JwksError>()("JwksError", {
  issuer: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Clocks drift between the authorization server and this machine; a token is still honoured this
 * long after its `exp` (and before its `nbf`), as most resource servers allow.
 */
const clockTolerance = 30

/** How long a discovery or key fetch may take before it counts as out of reach. */
const fetchTimeout = 10_000

/** The token of `Bearer <token>`; the scheme is case-insensitive (RFC 7235). */
const bearerToken = (authorization: string | undefined): string | undefined =>
  /^Bearer +([\x21-\x7e]+) *$/i.exec(authorization ?? "")?.[1]

/**
 * Compares in constant time, so the token cannot be guessed byte by byte from response times;
 * hashing first makes the comparison independent of the lengths too.
 */
const sameToken = (expected: string, given: string): boolean =>
  NodeCrypto.timingSafeEqual(
    NodeCrypto.createHash("sha256").update(expected).digest(),
    NodeCrypto.createHash("sha256").update(given).digest()
  )

const timedFetch: typeof fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(fetchTimeout) })

/** The issuer's `jwks_uri`, from its metadata; the metadata must be the issuer's own (RFC 8414 §3.3). */
const discoverJwks = (issuer: string): Effect.Effect<string, JwksError> =>
  Effect.tryPromise({
    try: () => discoverAuthorizationServerMetadata(issuer, { fetchFn: timedFetch }),
    catch: (cause) => new JwksError({ issuer, message: `cannot read the metadata of ${issuer}: ${cause}`, cause })
  }).pipe(
    Effect.flatMap((metadata) => {
      if (metadata === undefined) {
        return Effect.fail(
          new JwksError({ issuer, message: `${issuer} publishes no OAuth or OpenID metadata: pass --jwks-url` })
        )
      }
      if (metadata.issuer !== issuer) {
        return Effect.fail(
          new JwksError({ issuer, message: `the metadata at ${issuer} is for another issuer, ${metadata.issuer}` })
        )
      }
      const jwksUri: unknown = metadata.jwks_uri
      return typeof jwksUri === "string"
        ? Effect.succeed(jwksUri)
        : Effect.fail(
            new JwksError({ issuer, message: `the metadata of ${issuer} names no jwks_uri: pass --jwks-url` })
          )
    })
  )

/** How long keys that could not be fetched are not asked for again. */
const refetchAfterFailure = 30_000

/** Thrown for a token whose key is not known while the issuer's keys are out of reach. */
class KeysOutOfReach extends Error {}

/**
 * The issuer's key set as `jose` fetches, caches and refreshes it, asked for again at most every
 * `refetchAfterFailure` once a fetch failed: `jose` fetches again for every token with a key it
 * does not know, so while the issuer was down each such request — anyone's, token or not — made
 * this process fetch. Meanwhile the keys already fetched still verify.
 */
const keySet = (url: URL): Jose.JWTVerifyGetKey => {
  const remote = Jose.createRemoteJWKSet(url, { timeoutDuration: fetchTimeout })
  let failedAt = Number.NEGATIVE_INFINITY
  return async (header, token) => {
    if (Date.now() - failedAt < refetchAfterFailure) {
      const known = remote.jwks()
      if (known === undefined) throw new KeysOutOfReach()
      return Jose.createLocalJWKSet(known)(header, token).catch((cause: unknown) => {
        throw cause instanceof Jose.errors.JWKSNoMatchingKey ? new KeysOutOfReach() : cause
      })
    }
    return remote(header, token).catch((cause: unknown) => {
      if (outOfReachError(cause)) failedAt = Date.now()
      throw cause
    })
  }
}

/**
 * Whether a failure says the keys could not be had (no answer, a timeout, an answer that is not
 * a key set: `jose`'s generic error), which says nothing about the token.
 */
const outOfReachError = (cause: unknown): boolean =>
  !(cause instanceof Jose.errors.JOSEError) ||
  cause instanceof Jose.errors.JWKSTimeout ||
  cause.code === Jose.errors.JOSEError.code

/** Keys out of reach are said once per 10 s, not for every request that met them. */
const outOfReach = LogThrottle.make()

/** A verifier of JWT access tokens against the issuer's key set, which `jose` fetches, caches and refreshes. */
const jwtVerifier = (jwt: Jwt) =>
  Effect.gen(function* () {
    const jwksUrl = jwt.jwksUrl ?? (yield* discoverJwks(jwt.issuer))
    if (!URL.canParse(jwksUrl)) {
      return yield* new JwksError({ issuer: jwt.issuer, message: `the JWKS address is not a URL: ${jwksUrl}` })
    }
    const keys = keySet(new URL(jwksUrl))
    return (token: string): Effect.Effect<Identified> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.tryPromise({
          try: () =>
            Jose.jwtVerify(token, keys, {
              issuer: jwt.issuer,
              audience: jwt.audience,
              requiredClaims: ["exp"],
              clockTolerance,
              currentDate: new Date(now)
            }),
          catch: (cause) => cause
        }).pipe(
          Effect.map(({ payload }): Identified => ({ verdict: "accepted", principal: principalOf(payload) })),
          Effect.catch(
            (cause): Effect.Effect<Identified> =>
              // A token that fails a check is invalid; keys out of reach say nothing about the token.
              cause instanceof Jose.errors.JOSEError && !outOfReachError(cause)
                ? Effect.as(Effect.logDebug(`a bearer token was refused: ${cause.code}`), { verdict: "invalid" })
                : Effect.as(
                    outOfReach.warn(jwksUrl, `cannot check a bearer token: the keys at ${jwksUrl} are out of reach`),
                    { verdict: "unverifiable" }
                  )
          )
        )
      )
  })

/** Who a verified token speaks for: its issuer and subject, else the client it was issued to. */
const principalOf = (payload: Jose.JWTPayload): string => {
  const client = payload.client_id ?? payload.azp
  const who = payload.sub ?? (typeof client === "string" ? `client ${client}` : "")
  return JSON.stringify([payload.iss ?? "", who])
}

/** Checks credentials as configured; with JWTs, finds the issuer's keys first, so a wrong issuer fails at start. */
export const make = (options: Options): Effect.Effect<BearerAuth, JwksError> =>
  Effect.gen(function* () {
    const { token, jwt } = options
    const verifyJwt = jwt === undefined ? undefined : yield* jwtVerifier(jwt)
    const identify = (authorization: string | undefined): Effect.Effect<Identified> => {
      const given = bearerToken(authorization)
      if (given === undefined) return Effect.succeed({ verdict: authorization === undefined ? "missing" : "invalid" })
      if (token !== undefined && sameToken(token, given)) return Effect.succeed({ verdict: "accepted" })
      return verifyJwt === undefined ? Effect.succeed({ verdict: "invalid" }) : verifyJwt(given)
    }
    const verify = (authorization: string | undefined) => Effect.map(identify(authorization), (found) => found.verdict)
    return { required: token !== undefined || jwt !== undefined, issuer: jwt?.issuer, verify, identify }
  })
