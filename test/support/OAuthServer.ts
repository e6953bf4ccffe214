/**
 * A real OAuth 2.1 / OpenID Connect authorization server (`oidc-provider`, a certified
 * implementation) on loopback, with dynamic registration, PKCE, resource indicators and refresh
 * tokens, in front of an MCP server built with the SDK's server and its bearer-auth middleware,
 * which verifies the JWT access tokens. Both live in the test's scope. The browser step is driven
 * with plain HTTP through the provider's interaction pages, cookies and all.
 */
import * as NodeHttp from "node:http"
import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js"
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js"
import {
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter
} from "@modelcontextprotocol/sdk/server/auth/router.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { OAuthMetadataSchema } from "@modelcontextprotocol/sdk/shared/auth.js"
import * as Effect from "effect/Effect"
import express from "express"
import * as Jose from "jose"
import Provider, { errors } from "oidc-provider"
import { z } from "zod"

export interface Options {
  /** Access token lifetime in seconds. */
  readonly accessTokenTTL?: number
  /** The port of the pre-registered public client's redirect URI. */
  readonly callbackPort: number
  /** Other resource servers tokens may be issued for (RFC 8707), besides the fixture's MCP server. */
  readonly resources?: ReadonlyArray<string>
}

export interface OAuthServer {
  readonly issuer: string
  readonly mcpUrl: string
  /** Token endpoint requests, by grant type. */
  readonly grants: (type: string) => number
  /** Requests the MCP server has received, and how many it refused with 401. */
  readonly mcpRequests: () => number
  readonly refusals: () => number
  /** From now on the MCP server refuses every token it has seen (a server-side revocation). */
  readonly refuseSeenTokens: () => void
  /** Revokes a refresh token (and its grant) at the revocation endpoint, as the user would. */
  readonly revoke: (token: string, clientId: string) => Promise<void>
  readonly preRegistered: { readonly clientId: string }
  readonly machine: { readonly clientId: string; readonly clientSecret: string }
  /** A second machine client: another principal, for what one must not reach of the other's. */
  readonly otherMachine: { readonly clientId: string; readonly clientSecret: string }
}

const listen = (app: (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ server: NodeHttp.Server; port: number }>((resolve) => {
          const server = NodeHttp.createServer(app)
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            resolve({ server, port: typeof address === "object" && address !== null ? address.port : 0 })
          })
        })
    ),
    ({ server }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeAllConnections()
          })
      )
  )

export const make = (options: Options) =>
  Effect.gen(function* () {
    const mcpApp = express()
    const authApp = express()
    const mcp = yield* listen(mcpApp)
    const as = yield* listen(authApp)
    const issuer = `http://127.0.0.1:${as.port}`
    const mcpUrl = `http://127.0.0.1:${mcp.port}/mcp`
    const { privateKey, publicKey } = yield* Effect.promise(() => Jose.generateKeyPair("RS256", { extractable: true }))
    const jwk = yield* Effect.promise(() => Jose.exportJWK(privateKey))
    const keys = Jose.createLocalJWKSet({
      keys: [{ ...(yield* Effect.promise(() => Jose.exportJWK(publicKey))), kid: "test", alg: "RS256" }]
    })
    const grantCounts = new Map<string, number>()
    const machine = { clientId: "machine", clientSecret: "machine-secret-7c1d0e" }
    const otherMachine = { clientId: "other-machine", clientSecret: "other-secret-2b9f4a" }
    const preRegistered = { clientId: "pre-registered" }

    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: preRegistered.clientId,
          token_endpoint_auth_method: "none",
          redirect_uris: [`http://127.0.0.1:${options.callbackPort}/callback`],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"]
        },
        ...[machine, otherMachine].map(({ clientId, clientSecret }) => ({
          client_id: clientId,
          client_secret: clientSecret,
          grant_types: ["client_credentials"],
          response_types: [],
          redirect_uris: []
        }))
      ],
      jwks: { keys: [{ ...jwk, kid: "test", use: "sig", alg: "RS256" }] },
      scopes: ["openid", "offline_access", "mcp:tools"],
      pkce: { required: () => true },
      issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
      findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
      features: {
        devInteractions: { enabled: true },
        registration: { enabled: true },
        clientCredentials: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => mcpUrl,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== mcpUrl && !options.resources?.includes(indicator)) throw new errors.InvalidTarget()
            return {
              scope: "mcp:tools",
              audience: indicator,
              accessTokenTTL: options.accessTokenTTL ?? 3600,
              accessTokenFormat: "jwt",
              jwt: { sign: { alg: "RS256" } }
            }
          }
        }
      }
    })
    provider.on("grant.success", (ctx) => {
      const type = String(ctx.oidc.params?.grant_type)
      grantCounts.set(type, (grantCounts.get(type) ?? 0) + 1)
    })
    authApp.use(provider.callback())

    const metadata = OAuthMetadataSchema.parse(
      yield* Effect.promise(() => fetch(`${issuer}/.well-known/openid-configuration`).then((r) => r.json()))
    )
    const accepted: Array<string> = []
    const refused = new Set<string>()
    let requests = 0

    mcpApp.use(
      mcpAuthMetadataRouter({
        oauthMetadata: metadata,
        resourceServerUrl: new URL(mcpUrl),
        scopesSupported: ["mcp:tools"]
      })
    )
    let unauthorized = 0
    mcpApp.use("/mcp", (_req, res, next) => {
      requests++
      res.on("finish", () => {
        if (res.statusCode === 401) unauthorized++
      })
      next()
    })
    mcpApp.use(
      "/mcp",
      requireBearerAuth({
        resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(mcpUrl)),
        verifier: {
          verifyAccessToken: async (token) => {
            if (refused.has(token)) throw new InvalidTokenError("the token was revoked")
            const verified = await Jose.jwtVerify(token, keys, { issuer, audience: mcpUrl }).catch((cause) => {
              throw new InvalidTokenError(String(cause))
            })
            accepted.push(token)
            return {
              token,
              clientId: String(verified.payload.client_id),
              scopes: String(verified.payload.scope ?? "").split(" "),
              expiresAt: Number(verified.payload.exp),
              resource: new URL(mcpUrl)
            }
          }
        }
      })
    )
    const mcpServer = () => {
      const server = new McpServer({ name: "oauth-fixture", version: "1.0.0" })
      server.registerTool("whoami", { inputSchema: { note: z.string().optional() } }, async (_args, extra) => ({
        content: [{ type: "text", text: `client ${extra.authInfo?.clientId}` }]
      }))
      return server
    }
    mcpApp.post("/mcp", express.json(), async (req, res) => {
      const server = mcpServer()
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
      res.on("close", () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(req, res, req.body)
    })
    // The legacy SSE transport, under the same resource (the token's audience covers /mcp/…).
    const streams = new Map<string, SSEServerTransport>()
    mcpApp.get("/mcp/sse", async (_req, res) => {
      const transport = new SSEServerTransport("/mcp/messages", res)
      streams.set(transport.sessionId, transport)
      res.on("close", () => streams.delete(transport.sessionId))
      await mcpServer().connect(transport)
    })
    mcpApp.post("/mcp/messages", express.json(), async (req, res) => {
      const transport = streams.get(String(req.query.sessionId))
      if (transport === undefined) res.status(404).end()
      else await transport.handlePostMessage(req, res, req.body)
    })
    mcpApp.all("/mcp", (_req, res) => {
      res.status(405).end()
    })

    return {
      issuer,
      mcpUrl,
      grants: (type) => grantCounts.get(type) ?? 0,
      mcpRequests: () => requests,
      refusals: () => unauthorized,
      refuseSeenTokens: () => {
        for (const token of accepted) refused.add(token)
      },
      revoke: async (token, clientId) => {
        const response = await fetch(`${issuer}/token/revocation`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ token, client_id: clientId })
        })
        if (!response.ok) throw new Error(`revocation failed: ${response.status} ${await response.text()}`)
      },
      preRegistered,
      machine,
      otherMachine
    } satisfies OAuthServer
  })

/** A minimal cookie jar: enough for the provider's interaction session. */
const jar = () => {
  const cookies = new Map<string, string>()
  return {
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; "),
    store: (response: Response) => {
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(";")
        const at = pair!.indexOf("=")
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1))
      }
    }
  }
}

/**
 * Plays the user in the browser: follows the authorization URL, logs in as `account` and
 * consents, then follows the final redirect to the client's callback.
 */
export const approve = async (authorizationUrl: URL, account = "alice"): Promise<void> => {
  const cookies = jar()
  let url = authorizationUrl.href
  for (let hops = 0; hops < 20; hops++) {
    const response = await fetch(url, { redirect: "manual", headers: { cookie: cookies.header() } })
    cookies.store(response)
    const location = response.headers.get("location")
    if (location !== null) {
      await response.body?.cancel()
      const next = new URL(location, url)
      if (next.pathname === "/callback") {
        await (await fetch(next)).text()
        return
      }
      url = next.href
      continue
    }
    const page = await response.text()
    const action = /action="([^"]+)"/.exec(page)?.[1]
    const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1]
    if (action === undefined || prompt === undefined)
      throw new Error(`unexpected page at ${url}: ${page.slice(0, 300)}`)
    const form = new URLSearchParams({ prompt, login: account, password: "any" })
    const submitted = await fetch(new URL(action, url), {
      method: "POST",
      redirect: "manual",
      headers: { cookie: cookies.header(), "content-type": "application/x-www-form-urlencoded" },
      body: form
    })
    cookies.store(submitted)
    await submitted.body?.cancel()
    const location2 = submitted.headers.get("location")
    if (location2 === null) throw new Error(`the ${prompt} form did not redirect`)
    url = new URL(location2, url).href
  }
  throw new Error("too many redirects in the authorization flow")
}
