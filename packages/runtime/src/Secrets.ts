/**
 * Values that came from the environment (tokens in headers, keys in args) are secrets: they are
 * masked in every message and snapshot the runtime lets out, on top of core's pattern redaction.
 */
import { LifecycleError, SecretValues, type State } from "@toolvisor/core"

/** Masks each secret (and anything `redact` recognises) in a text. Very short values are left alone. */
export const masker = (secrets: ReadonlyArray<string>): ((text: string) => string) => {
  const values = SecretValues.masker(secrets)
  return (text) => LifecycleError.redact(values(text))
}

/** A snapshot whose error message is masked. */
export const snapshot = (s: State.StatusSnapshot, mask: (text: string) => string): State.StatusSnapshot =>
  s.lastError === undefined ? s : { ...s, lastError: { ...s.lastError, message: mask(s.lastError.message) } }
