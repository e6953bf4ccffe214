/**
 * Values known to be secret (tokens, keys and passwords that came from the environment) masked
 * wherever they appear in a text. Pattern redaction (`LifecycleError.redact`) catches credential
 * shapes; this catches the exact values, whatever they look like.
 */

/** Short values would mask unrelated text (a secret "1" would garble `toolsets[1]`), so they are left alone. */
export const minLength = 4

/** Replaces every occurrence of each secret with `***`, longest first so overlapping values mask whole. */
export const masker = (secrets: ReadonlyArray<string>): ((text: string) => string) => {
  const masked = secrets.filter((secret) => secret.length >= minLength).sort((a, b) => b.length - a.length)
  return (text) => masked.reduce((out, secret) => out.split(secret).join("***"), text)
}
