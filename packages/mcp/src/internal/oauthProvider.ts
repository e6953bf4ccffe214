/**
 * The MCP SDK's `OAuthClientProvider` for one remote toolset, backed by a `TokenStore`. The SDK
 * does discovery, registration, PKCE, the code exchange and the client-credentials grant; this
 * module adds what it leaves to the application:
 * - a background connection never starts a login: with no usable token it fails at once with
 *   `AuthRequired` instead of registering a client or waiting for a browser;
 * - tokens are refreshed before they expire, and a refresh is shared by every request that needs
 *   it (with refresh-token rotation a second, parallel refresh would present a spent token);
 * - a `401` on a request that carried a token gets one shared refresh and one retry, then
 *   `AuthRequired` — never one refresh per request in flight.
 */
import * as NodeCrypto from "node:crypto"
import {
  discoverOAuthServerInfo,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  refreshAuthorization,
  auth as sdkAuth,
  UnauthorizedError
} from "@modelcontextprotocol/sdk/client/auth.js"
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { OAuthError, ServerError } from "@modelcontextprotocol/sdk/server/auth/errors.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Classify, LifecycleError, Redaction } from "@toolvisor/core"
import type * as McpSpec from "../McpSpec.ts"
import * as RemoteFetch from "./remoteFetch.ts"
import type * as TokenStore from "./tokenStore.ts"

/** A token this close to expiry is refreshed before it is sent (docker-agent uses the same 30 s). */
const expirySkewMillis = 30_000

/** When a token that lives `lifetime` ms should be replaced: never later than half its life. */
const refreshDelay = (lifetime: number): number => lifetime - Math.min(expirySkewMillis, lifetime / 2)

/** The browser step, present only when a person asked to log in. */
export interface Interactive {
  readonly redirectUrl: string
  /** Shows the authorization URL to the user (opens a browser, or prints it). */
  readonly open: (authorizationUrl: URL) => Promise<void>
}

export interface Options {
  readonly name: string
  readonly serverUrl: string
  readonly oauth?: McpSpec.OAuth | undefined
  readonly store: TokenStore.TokenStore
  readonly interactive?: Interactive
  readonly now?: () => number
  /** The fetch that reaches the network (tests count token requests with it). */
  readonly fetch?: FetchLike
  /** The toolset's redactor: every token and client secret read or saved is added to it. */
  readonly redactor?: Redaction.Redactor
}

export interface Provider extends OAuthClientProvider {
  /** Fetch for the transport: retries a request whose token was refused, once, after a shared refresh. */
  readonly fetch: FetchLike
}

/** The grant a config asks for: a secret and no callback port means no person is present. */
export const usesClientCredentials = (oauth: McpSpec.OAuth | undefined): boolean =>
  oauth?.clientSecret !== undefined && oauth.callbackPort === undefined && oauth.callbackRedirectURL === undefined

/** The redirect URI for a callback port: loopback, as RFC 8252 asks of native apps. */
export const redirectUrlFor = (oauth: McpSpec.OAuth | undefined, port: number): string =>
  // biome-ignore lint/suspicious/noTemplateCurlyInString: docker-agent's placeholder, replaced literally
  oauth?.callbackRedirectURL?.replaceAll("${callbackPort}", String(port)) ?? `http://127.0.0.1:${port}/callback`

const authRequired = (name: string, why: string, cause?: unknown) =>
  new LifecycleError.AuthRequired({
    toolset: name,
    message: `${name}: authentication required: ${Redaction.redact(why)}`,
    ...(cause === undefined ? {} : { cause })
  })

const bearerOf = (init: RequestInit | undefined): string | undefined => {
  const value = new Headers(init?.headers).get("authorization")
  return value?.toLowerCase().startsWith("bearer ") ? value.slice(7) : undefined
}

/**
 * `Classify.classify`, knowing that the SDK reports a 401 only after its own auth handling gave
 * up (`UnauthorizedError`, or "401 after successful authentication"): with a provider attached, a
 * 401 is always a login problem, where a bare 401 elsewhere may be an application's error.
 */
export const classify = (name: string, cause: unknown): LifecycleError.LifecycleError =>
  cause instanceof UnauthorizedError || (cause instanceof StreamableHTTPError && cause.code === 401)
    ? authRequired(name, cause.message, cause)
    : Classify.classify(name, cause)

const isLoopback = (host: string) => host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)

/**
 * Where a login may send its codes, verifier and tokens: over HTTPS, to this machine, or to the
 * server's own origin (its requests carry the token as they are). A server, or metadata, naming a
 * plain-HTTP authorization server elsewhere would have them travel in the clear: refused.
 */
const refuseInsecure = (name: string, serverUrl: string, url: string | URL) => {
  const target = new URL(String(url))
  if (target.protocol === "https:" || isLoopback(target.hostname) || target.origin === new URL(serverUrl).origin) return
  throw authRequired(
    name,
    `refused to log in through ${target.origin}: it is plain HTTP on another host, so the login's codes and tokens would travel in the clear`
  )
}

/** `fetch`, for a login's requests to `serverUrl` and its authorization server: only where `refuseInsecure` allows. */
export const securely =
  (name: string, serverUrl: string, fetch: FetchLike = RemoteFetch.forAuth()): FetchLike =>
  async (url, init) => {
    refuseInsecure(name, serverUrl, url)
    return fetch(url, init)
  }

/** Builds the provider; nothing is read from the store until the SDK asks. */
export const make = (options: Options): Provider => {
  const { name, serverUrl, oauth, store } = options
  const now = options.now ?? Date.now
  const network = securely(name, serverUrl, options.fetch ?? RemoteFetch.forAuth())
  const key: TokenStore.Key = { serverUrl, clientId: oauth?.clientId }
  const clientCredentials = usesClientCredentials(oauth)
  const origin = new URL(serverUrl).origin
  let entry: TokenStore.Entry | undefined
  let loaded = false
  let codeVerifier: string | undefined
  let renewing: Promise<OAuthTokens> | undefined

  /** What the store holds is secret from the moment it is read or written. */
  const remember = (found: TokenStore.Entry | undefined): TokenStore.Entry | undefined => {
    const values = [found?.tokens?.access_token, found?.tokens?.refresh_token, found?.clientInformation?.client_secret]
    options.redactor?.add(values.flatMap((value) => (typeof value === "string" ? [value] : [])))
    return found
  }

  const read = async (): Promise<TokenStore.Entry> => {
    if (!loaded) {
      entry = remember(await store.load(key))
      loaded = true
    }
    return entry ?? { serverUrl, ...(oauth?.clientId === undefined ? {} : { clientId: oauth.clientId }) }
  }
  const write = async (change: (current: TokenStore.Entry) => TokenStore.Entry) => {
    entry = change(await read())
    remember(entry)
    await store.save(entry)
  }
  const forgetTokens = () => write(({ tokens: _, refreshAt: __, ...rest }) => rest)

  const redirectUrl = options.interactive?.redirectUrl ?? redirectUrlFor(oauth, oauth?.callbackPort ?? 0)

  const configuredClient = (): OAuthClientInformationMixed | undefined =>
    oauth?.clientId === undefined
      ? undefined
      : {
          client_id: oauth.clientId,
          ...(oauth.clientSecret === undefined ? {} : { client_secret: oauth.clientSecret })
        }

  /** A registration made for another redirect URI (an earlier login's port) cannot finish this login. */
  const usableRegistration = (info: OAuthClientInformationMixed | undefined) =>
    info === undefined ||
    options.interactive === undefined ||
    !("redirect_uris" in info) ||
    info.redirect_uris.includes(redirectUrl)
      ? info
      : undefined

  /**
   * Tokens granted for fewer scopes than the config now asks for are not used (as docker-agent
   * does): the next login asks for the new ones. A grant that does not list its scopes is trusted.
   */
  const coversScopes = (tokens: OAuthTokens): boolean => {
    const granted = tokens.scope?.split(" ")
    return granted === undefined || (oauth?.scopes ?? []).every((scope) => granted.includes(scope))
  }

  const clientInformation = async (): Promise<OAuthClientInformationMixed | undefined> => {
    const configured = configuredClient()
    const stored = (await read()).clientInformation
    if (configured !== undefined)
      return stored?.client_id === configured.client_id ? { ...stored, ...configured } : configured
    const registered = usableRegistration(stored)
    if (registered === undefined && options.interactive === undefined) {
      // Registering is the first step of a login; a background connection does not start one.
      throw authRequired(name, "no stored login for this server")
    }
    return registered
  }

  /**
   * The SDK reads the discovery state first when a 401 arrives. A background connection with
   * nothing to log in with stops there: no discovery requests, no registration, no browser.
   */
  const discoveryState = async (): Promise<OAuthDiscoveryState | undefined> => {
    const current = await read()
    const canProceed =
      options.interactive !== undefined || clientCredentials || current.tokens?.refresh_token !== undefined
    if (!canProceed) throw authRequired(name, "no stored login for this server")
    return current.discovery
  }

  const discovery = async (): Promise<OAuthDiscoveryState> => {
    const known = (await read()).discovery
    if (known !== undefined) return known
    const found = await discoverOAuthServerInfo(serverUrl, { fetchFn: network })
    await write((current) => ({ ...current, discovery: found }))
    return found
  }

  /** One refresh (or client-credentials grant) at a time; every caller shares its outcome. */
  const renew = (): Promise<OAuthTokens> => {
    renewing ??= obtain().finally(() => {
      renewing = undefined
    })
    return renewing
  }

  const obtain = async (): Promise<OAuthTokens> => {
    const replaced = entry?.tokens?.access_token
    // Another process on the same store (`toolvisor auth`, a second run) may have renewed the
    // tokens already; with rotation our refresh token would be spent, so take theirs.
    entry = remember(await store.load(key))
    const current = entry?.tokens
    if (
      current !== undefined &&
      current.access_token !== replaced &&
      (entry?.refreshAt ?? Number.POSITIVE_INFINITY) > now()
    ) {
      return current
    }
    const refreshToken = current?.refresh_token
    if (refreshToken === undefined) {
      if (!clientCredentials) throw authRequired(name, "the access token expired and there is no refresh token")
      await sdkAuth(provider, { serverUrl, fetchFn: network })
      const tokens = (await read()).tokens
      if (tokens === undefined) throw authRequired(name, "the client-credentials grant returned no token")
      return tokens
    }
    const found = await discovery()
    const client = await clientInformation()
    if (client === undefined) throw authRequired(name, "no client registration for the refresh")
    try {
      const tokens = await refreshAuthorization(found.authorizationServerUrl, {
        ...(found.authorizationServerMetadata === undefined ? {} : { metadata: found.authorizationServerMetadata }),
        clientInformation: client,
        refreshToken,
        ...(found.resourceMetadata === undefined ? {} : { resource: found.resourceMetadata.resource }),
        fetchFn: network
      })
      await provider.saveTokens({ ...tokens, issuer: found.authorizationServerUrl })
      return tokens
    } catch (error) {
      // The server refused the grant (revoked, expired, reused): only a new login helps.
      if (error instanceof OAuthError && !(error instanceof ServerError)) {
        await forgetTokens()
        throw authRequired(name, `the refresh token was refused (${error.errorCode})`, error)
      }
      throw new LifecycleError.TransportError({
        toolset: name,
        message: `${name}: could not refresh the access token: ${Redaction.redact(String(error))}`,
        cause: error
      })
    }
  }

  const provider: Provider = {
    get redirectUrl() {
      return clientCredentials ? undefined : redirectUrl
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: "Toolvisor",
        redirect_uris: clientCredentials ? [] : [redirectUrl],
        grant_types: clientCredentials ? ["client_credentials"] : ["authorization_code", "refresh_token"],
        response_types: clientCredentials ? [] : ["code"],
        token_endpoint_auth_method: oauth?.clientSecret === undefined ? "none" : "client_secret_basic",
        ...(oauth?.scopes === undefined ? {} : { scope: oauth.scopes.join(" ") })
      }
    },
    // `OAuth.login` checks the callback against the state in the URL it opened.
    state: () => NodeCrypto.randomBytes(16).toString("base64url"),
    clientInformation,
    saveClientInformation: ({ client_secret, ...information }) =>
      // A configured secret stays in the config: the file holds only what the server handed out.
      write((current) => ({
        ...current,
        clientInformation:
          oauth?.clientSecret === undefined || client_secret !== oauth.clientSecret
            ? { ...information, ...(client_secret === undefined ? {} : { client_secret }) }
            : information
      })),
    tokens: async () => {
      const current = await read()
      if (current.tokens === undefined || !coversScopes(current.tokens)) return clientCredentials ? renew() : undefined
      const expiring = current.refreshAt !== undefined && current.refreshAt <= now()
      return expiring && (current.tokens.refresh_token !== undefined || clientCredentials) ? renew() : current.tokens
    },
    saveTokens: (tokens) =>
      write((current) => {
        // A refresh response may omit the refresh token: the old one stays valid.
        const refresh_token = tokens.refresh_token ?? current.tokens?.refresh_token
        return {
          ...current,
          tokens: { ...tokens, ...(refresh_token === undefined ? {} : { refresh_token }) },
          ...(tokens.expires_in === undefined ? {} : { refreshAt: now() + refreshDelay(tokens.expires_in * 1000) })
        }
      }),
    redirectToAuthorization: async (authorizationUrl) => {
      if (options.interactive === undefined) throw authRequired(name, "the server asks for a login")
      refuseInsecure(name, serverUrl, authorizationUrl)
      await options.interactive.open(authorizationUrl)
    },
    saveCodeVerifier: (verifier) => {
      codeVerifier = verifier
    },
    codeVerifier: () => {
      if (codeVerifier === undefined) throw authRequired(name, "no login in progress")
      return codeVerifier
    },
    saveDiscoveryState: (found) => write((current) => ({ ...current, discovery: found })),
    discoveryState,
    invalidateCredentials: (scope) =>
      write(({ tokens, refreshAt, clientInformation, discovery, ...rest }) => ({
        ...rest,
        ...(scope === "all" || scope === "tokens" || tokens === undefined
          ? {}
          : { tokens, ...(refreshAt === undefined ? {} : { refreshAt }) }),
        ...(scope === "all" || scope === "client" || clientInformation === undefined ? {} : { clientInformation }),
        ...(scope === "all" || scope === "discovery" || discovery === undefined ? {} : { discovery })
      })),
    ...(clientCredentials
      ? {
          prepareTokenRequest: (scope?: string) =>
            new URLSearchParams({ grant_type: "client_credentials", ...(scope === undefined ? {} : { scope }) })
        }
      : {}),
    fetch: async (url, init) => {
      const response = await network(url, init)
      const sent = bearerOf(init)
      // Without a token the SDK's own 401 handling runs: discovery, then a login or AuthRequired.
      // Only the server's own requests carry its token; token endpoint calls never do.
      if (response.status !== 401 || sent === undefined || new URL(String(url)).origin !== origin) return response
      await response.body?.cancel()
      const current = (await read()).tokens
      // Another request already replaced the refused token: retry with the new one, no refresh.
      const fresh = current !== undefined && current.access_token !== sent ? current : await renew()
      const headers = new Headers(init?.headers)
      headers.set("authorization", `Bearer ${fresh.access_token}`)
      const retried = await network(url, { ...init, headers })
      if (retried.status === 401) {
        await retried.body?.cancel()
        await forgetTokens()
        throw authRequired(name, "the server refused a freshly refreshed token")
      }
      return retried
    }
  }
  return provider
}
