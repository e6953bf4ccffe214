/**
 * A bare effect/cluster round trip for `cluster.bench.ts`: an entity whose one RPC is Toolvisor's
 * own `CallTool` (the same schemas, encoding and sockets) but whose handler answers at once, with
 * no toolset, call ledger, fence or server behind it. Run as a script, it is a runner process
 * hosting that entity on its own database (a runner of the bench's cluster would take shards
 * from the toolset's runner): `node --conditions=@toolvisor/source cluster-bare.ts <url> <port>`.
 */
import * as NodeUrl from "node:url"
import { NodeRuntime } from "@effect/platform-node"
import * as Console from "effect/Console"
import * as Entity from "effect/cluster/Entity"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClusterRunner from "../../packages/cluster/src/ClusterRunner.ts"
import { CallTool } from "../../packages/cluster/src/internal/toolsetEntity.ts"
import { timers } from "../../packages/cluster/test/Runners.ts"

export const BareEntity = Entity.make("BenchBare", [CallTool])

const runner = (postgres: string, port: number) =>
  BareEntity.toLayer(
    BareEntity.of({
      CallTool: ({ payload }) => Effect.succeed({ content: [{ type: "text", text: String(payload.args.message) }] })
    }),
    { concurrency: "unbounded" }
  ).pipe(Layer.provideMerge(ClusterRunner.layer({ postgres, host: "127.0.0.1", port, timers })))

if (process.argv[1] === NodeUrl.fileURLToPath(import.meta.url)) {
  const [postgres = "", port = "0"] = process.argv.slice(2)
  NodeRuntime.runMain(
    Effect.scoped(
      Effect.andThen(Layer.build(runner(postgres, Number(port))), Effect.andThen(Console.log("is up"), Effect.never))
    )
  )
}
