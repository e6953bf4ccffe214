/**
 * Access tokens from the test authorization server (`packages/mcp/test/OAuthServer.ts`, a real
 * oidc-provider) as a machine client gets them: the client-credentials grant, for a resource
 * named by its indicator (RFC 8707), so the token's `aud` is that resource.
 */
import * as Effect from "effect/Effect"
import type * as OAuthServer from "./OAuthServer.ts"

const field = (value: unknown, name: string): string => {
  const found =
    typeof value === "object" && value !== null ? Object.getOwnPropertyDescriptor(value, name)?.value : undefined
  if (typeof found !== "string") throw new Error(`no ${name} in ${JSON.stringify(value)}`)
  return found
}

/** Where the server's token endpoint and key set are, from its OpenID metadata. */
export const endpoints = (server: OAuthServer.OAuthServer) =>
  Effect.promise(async () => {
    const metadata: unknown = await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()
    return { token: field(metadata, "token_endpoint"), jwks: field(metadata, "jwks_uri") }
  })

/** A JWT access token for `resource`, issued to the server's machine client (or `client`). */
export const forResource = (
  server: OAuthServer.OAuthServer,
  resource: string,
  client: OAuthServer.OAuthServer["machine"] = server.machine
) =>
  Effect.flatMap(endpoints(server), ({ token }) =>
    Effect.promise(async () => {
      const { clientId, clientSecret } = client
      const response = await fetch(token, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource, scope: "mcp:tools" })
      })
      const body: unknown = await response.json()
      if (!response.ok) throw new Error(`no token for ${resource}: ${response.status} ${JSON.stringify(body)}`)
      return field(body, "access_token")
    })
  )

/** The claims of a JWT, unverified: for a test to read `exp`. */
export const claims = (jwt: string): { readonly exp: number } => {
  const payload: unknown = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8"))
  const exp =
    typeof payload === "object" && payload !== null ? Object.getOwnPropertyDescriptor(payload, "exp")?.value : undefined
  if (typeof exp !== "number") throw new Error("the token has no exp")
  return { exp }
}
