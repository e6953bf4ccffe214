/**
 * Where OAuth state lives between runs: one JSON file per server URL and client, in the user's
 * state directory, readable by the user alone (0600 in a 0700 directory). A file holds the
 * tokens, the client registration and the discovery result, so a restart reconnects without
 * a browser and without discovering again. The file is replaced atomically, so a crash mid-write
 * leaves the previous tokens, never half of new ones.
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js"
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** What is stored for one server and client. */
export interface Entry {
  readonly serverUrl: string
  readonly clientId?: string
  readonly tokens?: OAuthTokens
  /**
   * When to refresh the access token (epoch ms): 30 s before it expires, or halfway through a
   * shorter lifetime, computed from `expires_in` when it was saved.
   */
  readonly refreshAt?: number
  readonly clientInformation?: OAuthClientInformationMixed
  readonly discovery?: OAuthDiscoveryState
}

/** A store's files are keyed by the server URL and the configured client id (none: registered). */
export interface Key {
  readonly serverUrl: string
  readonly clientId?: string | undefined
}

export interface TokenStore {
  readonly dir: string
  readonly load: (key: Key) => Promise<Entry | undefined>
  readonly save: (entry: Entry) => Promise<void>
  /** Forgets the server's tokens and registration; false when nothing was stored. */
  readonly remove: (key: Key) => Promise<boolean>
  /** The file a key is stored in. */
  readonly pathOf: (key: Key) => string
}

/**
 * `$TOOLVISOR_STATE_DIR/oauth`, else `$XDG_STATE_HOME/toolvisor/oauth`, else
 * `~/.local/state/toolvisor/oauth`.
 */
export const defaultDir = (env: NodeJS.ProcessEnv = process.env): string => {
  if (env.TOOLVISOR_STATE_DIR) return NodePath.join(env.TOOLVISOR_STATE_DIR, "oauth")
  const state = env.XDG_STATE_HOME || NodePath.join(NodeOs.homedir(), ".local", "state")
  return NodePath.join(state, "toolvisor", "oauth")
}

const fileName = (key: Key): string =>
  `${NodeCrypto.createHash("sha256")
    .update(`${key.serverUrl}\n${key.clientId ?? ""}`)
    .digest("hex")
    .slice(0, 32)}.json`

const isMissing = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ENOENT"

/** A store in `dir` (created on first save, mode 0700). */
export const make = (dir: string = defaultDir()): TokenStore => {
  const pathOf = (key: Key) => NodePath.join(dir, fileName(key))
  return {
    dir,
    pathOf,
    load: async (key) => {
      try {
        const entry: Entry = JSON.parse(await NodeFs.readFile(pathOf(key), "utf8"))
        // A file for another server (a hash collision, a copied file) is not ours to use.
        return entry.serverUrl === key.serverUrl && entry.clientId === key.clientId ? entry : undefined
      } catch (error) {
        if (isMissing(error)) return undefined
        throw error
      }
    },
    save: async (entry) => {
      await NodeFs.mkdir(dir, { recursive: true, mode: 0o700 })
      const path = pathOf(entry)
      const temporary = `${path}.${process.pid}.${NodeCrypto.randomUUID()}.tmp`
      // Created 0600 (the umask can only narrow it), then renamed over the old file.
      await NodeFs.writeFile(temporary, JSON.stringify(entry), { mode: 0o600, flag: "wx" })
      await NodeFs.rename(temporary, path)
    },
    remove: async (key) => {
      try {
        await NodeFs.unlink(pathOf(key))
        return true
      } catch (error) {
        if (isMissing(error)) return false
        throw error
      }
    }
  }
}

/** The store remote toolsets use; tests and embedders provide their own directory. */
export const Current = Context.Reference<TokenStore>("@toolvisor/mcp/TokenStore", { defaultValue: () => make() })

/** `remove` as an Effect, for callers outside the SDK's promise world (`toolvisor auth --logout`). */
export const logout = (store: TokenStore, key: Key): Effect.Effect<boolean, Error> =>
  Effect.tryPromise({
    try: () => store.remove(key),
    catch: (cause) => new Error(`could not remove ${store.pathOf(key)}`, { cause })
  })
