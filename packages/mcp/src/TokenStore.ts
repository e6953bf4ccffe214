/**
 * Where OAuth state lives between runs: one JSON file per server URL and client, in the user's
 * state directory, readable by the user alone (0600 in a 0700 directory). A file holds the
 * tokens, the client registration and the discovery result, so a restart reconnects without
 * a browser and without discovering again. The file is replaced atomically, so a crash mid-write
 * leaves the previous tokens, never half of new ones.
 *
 * The store checks what it finds before trusting it. A directory or file of ours whose mode lets
 * others in (a 0777 directory from a loose umask or a copied backup) is narrowed to 0700 / 0600:
 * only its owner can do that, so it is safe, and refusing would only make the user type the same
 * `chmod`. What is not ours to narrow is refused: a directory or file owned by another user, a
 * symbolic link (which could point the tokens, or a planted registration, anywhere), or anything
 * that is not a plain file or directory.
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs/promises"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js"
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { LifecycleError } from "@toolvisor/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

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

/** A token directory or file the store will not use; the user removes it and logs in again. */
export class TokenFileRefused extends Schema.TaggedError<TokenFileRefused>()("TokenFileRefused", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `refusing the OAuth token store's ${this.path}: ${this.reason}; remove it, then log in again (toolvisor auth)`
  }
}

/**
 * A refused token store, found anywhere along a failure's `cause` chain (the SDK passes the
 * store's error through), as the lifecycle error it is: a login is needed, and retrying cannot help.
 */
export const authRequired = (toolset: string, cause: unknown): LifecycleError.AuthRequired | undefined => {
  for (let at: unknown = cause, hops = 0; at instanceof Error && hops < 8; at = at.cause, hops++) {
    if (at instanceof TokenFileRefused) {
      return new LifecycleError.AuthRequired({ toolset, message: `${toolset}: ${at.message}`, cause: at })
    }
  }
  return undefined
}

/** The mode bits that let anyone but the owner in. */
const othersBits = 0o077

/** `lstat`, or undefined when nothing is there. */
const inspect = async (path: string) => {
  try {
    return await NodeFs.lstat(path)
  } catch (error) {
    if (isMissing(error)) return undefined
    throw error
  }
}

/**
 * Checks what is at `path`: narrows our own loose modes to `mode`, refuses links, other kinds and
 * other users' entries. False when nothing is there.
 */
const vet = async (path: string, kind: "directory" | "file", mode: number): Promise<boolean> => {
  const found = await inspect(path)
  if (found === undefined) return false
  const refuse = (reason: string) => Promise.reject(new TokenFileRefused({ path, reason }))
  if (found.isSymbolicLink()) return refuse("it is a symbolic link")
  if (kind === "directory" ? !found.isDirectory() : !found.isFile()) return refuse(`it is not a ${kind}`)
  const uid = process.getuid?.()
  if (uid !== undefined && found.uid !== uid)
    return refuse(`it belongs to user ${found.uid}, not to this user (${uid})`)
  if ((found.mode & othersBits) !== 0) await NodeFs.chmod(path, mode)
  return true
}

/** A store in `dir` (created on first save, mode 0700). */
export const make = (dir: string = defaultDir()): TokenStore => {
  const pathOf = (key: Key) => NodePath.join(dir, fileName(key))
  return {
    dir,
    pathOf,
    load: async (key) => {
      const path = pathOf(key)
      if (!(await vet(dir, "directory", 0o700)) || !(await vet(path, "file", 0o600))) return undefined
      const entry: Entry = JSON.parse(await NodeFs.readFile(path, "utf8"))
      // A file for another server (a hash collision, a copied file) is not ours to use.
      return entry.serverUrl === key.serverUrl && entry.clientId === key.clientId ? entry : undefined
    },
    save: async (entry) => {
      await NodeFs.mkdir(dir, { recursive: true, mode: 0o700 })
      await vet(dir, "directory", 0o700)
      const path = pathOf(entry)
      const temporary = `${path}.${process.pid}.${NodeCrypto.randomUUID()}.tmp`
      // Created 0600 (the umask can only narrow it) where nothing was (`wx` follows no link), then
      // renamed over the old file, or over a link, never through it.
      await NodeFs.writeFile(temporary, JSON.stringify(entry), { mode: 0o600, flag: "wx" })
      await NodeFs.rename(temporary, path)
    },
    remove: async (key) => {
      try {
        // A link is removed itself, never what it points to.
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
