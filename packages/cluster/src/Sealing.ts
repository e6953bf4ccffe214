/**
 * Secrets at rest. A toolset's start request is persisted in the cluster's database, and its
 * transport holds whatever the config took from the environment (tokens in headers, keys in
 * env). With a cluster key shared by clients and runners (`TOOLVISOR_CLUSTER_KEY`), those parts
 * are stored sealed (AES-256-GCM) and opened only by the runner that runs the toolset.
 */
import * as NodeCrypto from "node:crypto"

/** The environment variable clients and runners read the cluster key from. */
export const envKey = "TOOLVISOR_CLUSTER_KEY"

/**
 * An AES-256 key, made from the cluster key's passphrase by `key`. Clients seal with it and
 * runners open with it, so both must be given the same passphrase.
 */
export interface Key {
  readonly bytes: Buffer
}

/** A key from a passphrase of any length (HKDF-SHA-256 stretches it to 256 bits). */
export const key = (passphrase: string): Key => ({
  bytes: Buffer.from(NodeCrypto.hkdfSync("sha256", passphrase, "toolvisor", "toolset-spec", 32))
})

/** The key in the environment, if one is set. */
export const fromEnv = (env: Readonly<Record<string, string | undefined>> = process.env): Key | undefined => {
  const passphrase = env[envKey]
  return passphrase === undefined || passphrase === "" ? undefined : key(passphrase)
}

const ivLength = 12
const tagLength = 16

/** Base64 of iv, tag and ciphertext. */
export const seal = (k: Key, plaintext: string): string => {
  const iv = NodeCrypto.randomBytes(ivLength)
  const cipher = NodeCrypto.createCipheriv("aes-256-gcm", k.bytes, iv)
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64")
}

/** The plaintext, or undefined when the key is not the one it was sealed with (or the data was altered). */
export const open = (k: Key, sealed: string): string | undefined => {
  try {
    const raw = Buffer.from(sealed, "base64")
    const decipher = NodeCrypto.createDecipheriv("aes-256-gcm", k.bytes, raw.subarray(0, ivLength))
    decipher.setAuthTag(raw.subarray(ivLength, ivLength + tagLength))
    return Buffer.concat([decipher.update(raw.subarray(ivLength + tagLength)), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/**
 * A keyed digest (HMAC-SHA-256, under a key of its own made from the cluster key): what stands for
 * a sealed definition in the clear. Its plain SHA-256 signature let anyone who reads the database
 * test guesses of the secrets inside it, offline.
 */
export const digest = (k: Key, text: string): string =>
  NodeCrypto.createHmac(
    "sha256",
    Buffer.from(NodeCrypto.hkdfSync("sha256", k.bytes, "toolvisor", "toolset-digest", 32))
  )
    .update(text)
    .digest("hex")
