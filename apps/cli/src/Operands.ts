/**
 * One order for every command: the config comes first, then what the command acts on —
 * `describe [CONFIG] TOOL`, `call [CONFIG] TOOL [ARGS_JSON]`, `auth [CONFIG] NAME`, as in
 * `status [CONFIG]`. CONFIG is optional (./agent.yaml), so it is told apart from the other
 * operands by being a file that exists. Written after them it is still taken, with a note that
 * says the order, rather than being read as a tool's name or failing as "file not found".
 */
import * as NodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.ts"
import * as Shell from "./Shell.ts"

/** A command's operands after CONFIG, e.g. `["TOOL", "[ARGS_JSON]"]` (bracketed: optional). */
export interface Shape {
  readonly command: string
  readonly names: ReadonlyArray<string>
}

export interface Split {
  readonly config: Option.Option<string>
  /** The operands after CONFIG, in order. */
  readonly rest: ReadonlyArray<string>
}

/** How the command is written, for messages: `toolvisor call [CONFIG] TOOL [ARGS_JSON]`. */
export const usage = (shape: Shape): string => `toolvisor ${shape.command} [CONFIG] ${shape.names.join(" ")}`

const isFile = (path: string): boolean => {
  try {
    return NodeFs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** An operand only a config file name would be: a config's extension or a path (JSON arguments aside). */
const meantAsConfig = (operand: string): boolean =>
  !operand.trimStart().startsWith("{") && (/\.(ya?ml|jsonc?)$/i.test(operand) || /[/\\]/.test(operand))

const counted = (shape: Shape, config: Option.Option<string>, rest: ReadonlyArray<string>) => {
  const required = shape.names.filter((name) => !name.startsWith("[")).length
  if (rest.length < required) {
    return Effect.fail(
      new UsageError({ message: `${shape.command}: missing ${shape.names[rest.length]} (${usage(shape)})` })
    )
  }
  if (rest.length > shape.names.length) {
    return Effect.fail(new UsageError({ message: `${shape.command}: too many operands (${usage(shape)})` }))
  }
  const split: Split = { config, rest }
  return Effect.succeed(split)
}

/**
 * Splits `[CONFIG] …` into the config (when one is given) and the rest. A config written later
 * is moved first with a warning naming the command as it should be written; a config that does
 * not exist fails as "config file not found", naming it.
 */
export const split = (shape: Shape, operands: ReadonlyArray<string>): Effect.Effect<Split, UsageError> =>
  Effect.suspend(() => {
    const at = operands.findIndex(isFile)
    if (at === 0) return counted(shape, Option.some(operands[0] ?? ""), operands.slice(1))
    if (at > 0) {
      const config = operands[at] ?? ""
      const rest = operands.filter((_, i) => i !== at)
      return Effect.andThen(
        Effect.logWarning(
          `${shape.command}: the config comes first (${usage(shape)}); read ${config} as the config: ${Shell.toolvisor(shape.command, config, ...rest)}`
        ),
        counted(shape, Option.some(config), rest)
      )
    }
    const missing = operands.find(meantAsConfig) ?? (operands.length > shape.names.length ? operands[0] : undefined)
    if (missing !== undefined) {
      return Effect.fail(new UsageError({ message: `${shape.command}: config file not found: ${missing}` }))
    }
    return counted(shape, Option.none(), operands)
  })
