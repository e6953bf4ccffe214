/**
 * `toolvisor runner`: this process becomes a cluster runner that hosts toolsets for `--cluster`
 * clients, until SIGTERM. Loaded only for this command, with the cluster and its SQL driver.
 */
import { ClusterRunner, Sealing } from "@toolvisor/cluster"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ClusterFlags from "./ClusterFlags.ts"

export interface Options extends ClusterFlags.Member {
  readonly postgres: string
  readonly host: string
  readonly port: number
  readonly listenHost: Option.Option<string>
  readonly lanePort: number
}

export const run = Effect.fn("toolvisor.runner")(function* (options: Options) {
  const { file, timers } = yield* ClusterFlags.given(options)
  const key = Sealing.fromEnv()
  yield* ClusterRunner.start({
    postgres: options.postgres,
    host: options.host,
    port: options.port,
    lanePort: options.lanePort,
    timers,
    settingsFile: file,
    ...(key === undefined ? {} : { key }),
    ...Option.match(options.listenHost, { onNone: () => ({}), onSome: (listenHost) => ({ listenHost }) })
  })
  yield* Console.log(`runner ${options.host}:${options.port} is up (pid ${process.pid})`)
  return yield* Effect.never
})
