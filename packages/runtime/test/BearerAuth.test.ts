/**
 * BearerAuth against a real authorization server (oidc-provider, the one the OAuth tests run):
 * the keys found through its metadata, a token it signed for this audience accepted, and each
 * check that must refuse one — audience, issuer, expiry (on the TestClock, to the second of the
 * clock tolerance), signature — refusing it. The static token is compared as a whole.
 */
import * as NodeHttp from "node:http"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import * as OAuthServer from "../../../test/support/OAuthServer.ts"
import * as OAuthTokens from "../../../test/support/OAuthTokens.ts"
import * as BearerAuth from "../src/internal/bearerAuth.ts"

const audience = "http://127.0.0.1:1/mcp"

const setup = Effect.gen(function* () {
  const server = yield* OAuthServer.make({ callbackPort: 1, resources: [audience] })
  const auth = yield* BearerAuth.make({ jwt: { issuer: server.issuer, audience } })
  const token = yield* OAuthTokens.forResource(server, audience)
  return { server, auth, token }
})

const bearer = (token: string) => `Bearer ${token}`

describe("BearerAuth with JWTs", () => {
  it.effect("accepts a token the issuer signed for this audience, in any case of the scheme", () =>
    Effect.gen(function* () {
      const { auth, token } = yield* setup
      yield* TestClock.setTime(Date.now())
      assert.isTrue(auth.required)
      assert.strictEqual(yield* auth.verify(bearer(token)), "accepted")
      assert.strictEqual(yield* auth.verify(`bearer ${token}`), "accepted")
      assert.strictEqual(yield* auth.verify(undefined), "missing")
      assert.strictEqual(yield* auth.verify(`Basic ${token}`), "invalid")
      assert.strictEqual(yield* auth.verify(token), "invalid")
    })
  )

  it.effect("refuses a token for another audience, from another issuer, or with a forged signature", () =>
    Effect.gen(function* () {
      const { server, auth, token } = yield* setup
      yield* TestClock.setTime(Date.now())
      const elsewhere = yield* OAuthTokens.forResource(server, server.mcpUrl)
      assert.strictEqual(yield* auth.verify(bearer(elsewhere)), "invalid")

      const { jwks } = yield* OAuthTokens.endpoints(server)
      const otherIssuer = yield* BearerAuth.make({ jwt: { issuer: "https://idp.example", audience, jwksUrl: jwks } })
      assert.strictEqual(yield* otherIssuer.verify(bearer(token)), "invalid")

      const [header, payload, signature = ""] = token.split(".")
      const forged = `${header}.${payload}.${signature.slice(0, -4)}${signature.endsWith("AAAA") ? "BBBB" : "AAAA"}`
      assert.strictEqual(yield* auth.verify(bearer(forged)), "invalid")
      const claims = Buffer.from(JSON.stringify({ ...OAuthTokens.claims(token), aud: audience })).toString("base64url")
      assert.strictEqual(yield* auth.verify(bearer(`${header}.${claims}.${signature}`)), "invalid")
    })
  )

  it.effect("honours a token for less than 30 seconds past its exp (clock skew), and no longer", () =>
    Effect.gen(function* () {
      const { auth, token } = yield* setup
      const { exp } = OAuthTokens.claims(token)
      yield* TestClock.setTime(exp * 1000 + 29_999)
      assert.strictEqual(yield* auth.verify(bearer(token)), "accepted")
      yield* TestClock.setTime(exp * 1000 + 30_000)
      assert.strictEqual(yield* auth.verify(bearer(token)), "invalid")
    })
  )

  it.effect("keys out of reach make a token unverifiable, not invalid", () =>
    Effect.gen(function* () {
      const { server, token } = yield* setup
      const unreachable = yield* BearerAuth.make({
        jwt: { issuer: server.issuer, audience, jwksUrl: "http://127.0.0.1:1/jwks" }
      })
      yield* TestClock.setTime(Date.now())
      assert.strictEqual(yield* unreachable.verify(bearer(token)), "unverifiable")
    })
  )

  it.effect("keys that could not be fetched are not asked for again for every token", () =>
    Effect.gen(function* () {
      const { server, token } = yield* setup
      // A key set that is down, counting the requests it gets.
      let fetches = 0
      const down = NodeHttp.createServer((_req, res) => {
        fetches += 1
        res.writeHead(503).end()
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => down.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise((resolve) => down.close(resolve)))
      )
      const address = down.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const auth = yield* BearerAuth.make({
        jwt: { issuer: server.issuer, audience, jwksUrl: `http://127.0.0.1:${port}/jwks` }
      })
      yield* TestClock.setTime(Date.now())
      for (let i = 0; i < 20; i++) assert.strictEqual(yield* auth.verify(bearer(token)), "unverifiable")
      // Each of the 20 fetched the key set again (and logged it): anyone's request, token or not.
      assert.strictEqual(fetches, 1)
    })
  )

  it.effect("an issuer without metadata fails at make, naming the issuer", () =>
    Effect.gen(function* () {
      const { server } = yield* setup
      const error = yield* Effect.flip(BearerAuth.make({ jwt: { issuer: server.mcpUrl, audience } }))
      assert.strictEqual(error._tag, "JwksError")
      assert.include(error.message, server.mcpUrl)
    })
  )
})

describe("BearerAuth with a static token", () => {
  it.effect("accepts exactly the token; nothing required without one", () =>
    Effect.gen(function* () {
      const auth = yield* BearerAuth.make({ token: "s3cret" })
      assert.strictEqual(yield* auth.verify("Bearer s3cret"), "accepted")
      assert.strictEqual(yield* auth.verify("Bearer s3cret2"), "invalid")
      assert.strictEqual(yield* auth.verify("Bearer s3cre"), "invalid")
      assert.strictEqual(yield* auth.verify("Bearer "), "invalid")
      const open = yield* BearerAuth.make({})
      assert.isFalse(open.required)
    })
  )
})
