/**
 * VS Code's `envFile`: a dotenv file whose variables a stdio server starts with. It is read each
 * time the server starts — never when a config is only loaded — and the server's own `env` wins
 * over it. A file that cannot be read is a start failure, like a missing binary.
 */
import { LifecycleError } from "@toolvisor/core"
import * as BoundedFile from "@toolvisor/core/internal/boundedFile"
import * as Effect from "effect/Effect"

/** A dotenv file is a few KiB; a bigger one is not an env file. */
export const maxBytes = 1024 * 1024

const line = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$/

/** `KEY=value` lines; `#` comments, blank lines and surrounding quotes as dotenv writes them. */
export const parse = (text: string): Readonly<Record<string, string>> =>
  Object.fromEntries(
    text.split(/\r?\n/).flatMap((raw) => {
      if (/^\s*(#|$)/.test(raw)) return []
      const match = line.exec(raw)
      if (match === null) return []
      const [, key = "", value = ""] = match
      const quoted = /^(["'])([\s\S]*)\1$/.exec(value)
      return [[key, quoted === null ? value.replace(/\s+#.*$/, "") : (quoted[2] ?? "")]]
    })
  )

const reasonOf = (cause: unknown): string => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined
  if (code === "ENOENT") return "no such file"
  if (code === "EISDIR") return "it is a directory"
  if (code === "EACCES") return "permission denied"
  return code ?? (cause instanceof Error ? cause.message : String(cause))
}

/** Reads a regular file of at most `maxBytes` (a FIFO or a device would block or never end). */
const readBounded = async (path: string): Promise<string> => {
  const text = await BoundedFile.readText(path, { maxBytes })
  if (text === undefined) throw new Error(`larger than ${maxBytes / 1024} KiB`)
  return text
}

/**
 * Where a text no env file holds has a NUL byte: no environment value can carry one, and the
 * spawn that refused it quoted the value — a secret, or with `/proc/self/environ` as the file,
 * our own environment. Only the line and its key are named.
 */
const nulAt = (text: string): string | undefined => {
  const at = text.indexOf("\0")
  if (at < 0) return undefined
  const number = text.slice(0, at).split("\n").length
  const key = line.exec(text.split("\n")[number - 1]?.split("\0")[0] ?? "")?.[1]
  return `line ${number}${key === undefined ? "" : ` (the value of ${key})`} has a NUL byte, which no environment value can hold`
}

/** The file's variables, or the start failure that names the toolset and the file. */
export const read = (
  toolset: string,
  path: string
): Effect.Effect<Readonly<Record<string, string>>, LifecycleError.ServerUnavailable> =>
  Effect.tryPromise({
    try: () => readBounded(path),
    catch: (cause) =>
      new LifecycleError.ServerUnavailable({
        toolset,
        message: `${toolset}: cannot read the env file ${path}: ${reasonOf(cause)}`,
        cause
      })
  }).pipe(
    Effect.flatMap((text) => {
      const nul = nulAt(text)
      return nul === undefined
        ? Effect.succeed(parse(text))
        : Effect.fail(
            new LifecycleError.ServerUnavailable({ toolset, message: `${toolset}: the env file ${path}: ${nul}` })
          )
    })
  )
