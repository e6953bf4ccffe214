/**
 * Values a connection reads as it connects — an `envFile`'s variables, a `headersHelper`'s header
 * values — are secrets the config never saw, so the runtime's masking (by the config's secrets)
 * cannot know them. The connector masks them in its own errors: every string of the error, its
 * stderr lines and its cause included.
 */
import { LifecycleError, SecretValues } from "@toolvisor/core"
import * as Schema from "effect/Schema"

const encode = Schema.encodeSync(LifecycleError.LifecycleError)
const decode = Schema.decodeUnknownSync(LifecycleError.LifecycleError)

/**
 * Masks the secrets in an error. An error that shows none is returned as it is (its cause keeps
 * its class); one that does is rebuilt from its encoded form with every string masked.
 */
export const masker = (secrets: ReadonlyArray<string>) => {
  const mask = SecretValues.masker(secrets)
  return <E extends LifecycleError.LifecycleError>(error: E): E | LifecycleError.LifecycleError => {
    if (secrets.length === 0) return error
    const text = JSON.stringify(encode(error))
    if (mask(text) === text) return error
    return decode(JSON.parse(text, (_, value: unknown) => (typeof value === "string" ? mask(value) : value)))
  }
}
