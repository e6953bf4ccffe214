/**
 * `toolvisor runner`: this process becomes a cluster runner that hosts toolsets for `--cluster`
 * clients, until SIGTERM. Loaded only for this command, with the cluster and its SQL driver.
 */
import { ClusterRunner, Sealing } from "@toolvisor/cluster"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as DurationFlag from "./DurationFlag.ts"

export interface Options {
  readonly postgres: string
  readonly host: string
  readonly port: number
  readonly listenHost: Option.Option<string>
  readonly lease: string
  readonly leaseRefresh: string
  readonly healthCheck: string
  readonly assignmentsRefresh: string
  readonly messagePoll: string
  readonly shutdownGrace: string
}

export const run = Effect.fn("toolvisor.runner")(function* (options: Options) {
  const timers = {
    lease: yield* DurationFlag.parse(options.lease, "--lease"),
    leaseRefresh: yield* DurationFlag.parse(options.leaseRefresh, "--lease-refresh"),
    healthCheck: yield* DurationFlag.parse(options.healthCheck, "--health-check"),
    assignmentsRefresh: yield* DurationFlag.parse(options.assignmentsRefresh, "--assignments-refresh"),
    messagePoll: yield* DurationFlag.parse(options.messagePoll, "--message-poll"),
    shutdownGrace: yield* DurationFlag.parse(options.shutdownGrace, "--shutdown-grace")
  }
  const key = Sealing.fromEnv()
  yield* ClusterRunner.start({
    postgres: options.postgres,
    host: options.host,
    port: options.port,
    timers,
    ...(key === undefined ? {} : { key }),
    ...Option.match(options.listenHost, { onNone: () => ({}), onSome: (listenHost) => ({ listenHost }) })
  })
  yield* Console.log(`runner ${options.host}:${options.port} is up (pid ${process.pid})`)
  return yield* Effect.never
})
