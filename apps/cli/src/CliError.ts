/**
 * The ways a command ends badly, as the exit code tells a script: a `UsageError` (bad
 * arguments, a missing file) exits 2, a `Failure` (the command ran, its outcome is a failure)
 * exits 1. Both carry one line for people. A `Shown` failure was the command's own output
 * already (`validate`'s problems), so nothing more is printed.
 */
import * as Schema from "effect/Schema"

/** A failure the user caused (bad arguments, a missing file): exit 2, one clear line. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** The command ran but its outcome is a failure (a tool error, a required toolset down): exit 1. */
export class Failure extends Schema.TaggedError<Failure>()("Failure", { message: Schema.String }) {}

/** A failure the command has already printed as its result: exit `exitCode`, print nothing more. */
export class Shown extends Schema.TaggedError<Shown>()("Shown", { exitCode: Schema.Number, message: Schema.String }) {}
