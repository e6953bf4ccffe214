/**
 * Duration flags (`--timeout 5s`, the runner's timers) parsed with the config's own duration
 * syntax, so a flag and a YAML field accept the same text; a bad value is a usage error.
 */
import { Policy } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { UsageError } from "./CliError.ts"

export const parse = (text: string, flag = "--timeout") =>
  Schema.decodeUnknownEffect(Policy.DurationString)(text).pipe(
    Effect.mapError(() => new UsageError({ message: `${flag}: expected a duration like 30s, got "${text}"` }))
  )
