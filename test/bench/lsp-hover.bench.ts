/**
 * LSP hover benchmark: 200 `lsp_hover` calls through a supervised `LspToolset` against 200 bare
 * `textDocument/hover` requests over vscode-jsonrpc, p50/p99 and their ratio (target <= 1.05).
 * Also: cold start to Ready for each real server.
 *
 * Two measurements, each with its own warm-up; in every round each side makes one call, in a
 * fresh random order (seeded: every run draws the same orders), so no side keeps following the
 * same other side and drift falls on all alike.
 *
 * 1. Against vscode-jsonrpc as it ships (`StockLspClient`: its own reader and writer, initialized
 *    like the toolset), each side on a typescript-language-server process of its own, and a second
 *    stock client on a third process as the control: how far two processes alone differ. Every
 *    process gets one call a round: a process called more often answers faster.
 * 2. On the toolset's own connection, so the server process is the same and only the client's
 *    work differs: "raw" is the session's `MessageConnection` (with Toolvisor's writer), and three
 *    sides build up from it to the toolset, to say where its time goes:
 *    - "as an Effect": the request in `Effect.promise`, run with `Effect.runPromise` — what any
 *      Effect API pays (a fiber, suspended and resumed around the answer);
 *    - "Requests.request": the session's request as tools send it, cancellable and failing as
 *      soon as the connection is lost (vscode-jsonrpc leaves it waiting);
 *    - "+ deadline, freshness": that, bounded by `call_timeout` and checked against the file on
 *      disk (`Requests.speculate`) — what the issue requires of every request about a file.
 *    The rest of "toolset" is the tool layer: the supervisor's session lookup, argument
 *    validation, path resolution, rendering.
 *
 * Run: cd /work/main && npm run bench:lsp
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Deadline, Policy, ServerProcess } from "@toolvisor/core"
import { LspSpec, LspToolset } from "@toolvisor/lsp"
import * as Paths from "@toolvisor/lsp/internal/paths"
import * as Render from "@toolvisor/lsp/internal/render"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Protocol from "vscode-languageserver-protocol"
import { ascending, gc, percentile, seededRandom, shuffled } from "./stats.ts"
import * as StockLspClient from "./stock-lsp-client.ts"

const CALLS = 200
/** Rounds before the measured ones, drawn like them: enough for the JIT to compile every path. */
const WARMUP = 200

const root = NodePath.resolve(import.meta.dirname, "../..")
const bin = (name: string) => NodePath.join(root, "node_modules/.bin", name)
const fixtures = NodePath.join(root, "packages/lsp/test/fixtures")

const copy = (name: string) => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), `toolvisor-bench-${name}-`))
  NodeFs.cpSync(NodePath.join(fixtures, name), dir, { recursive: true })
  return dir
}

const policy = Policy.fromLifecycleUnknownSync({ startup_timeout: "60s", call_timeout: "30s" })
const hoverArgs = { file: "src/main.ts", line: 3, character: 23 }
const pids = new Set<number>()

const fmt = (ms: number) => `${ms.toFixed(3)} ms`

const time = async (run: () => Promise<unknown>) => {
  const start = performance.now()
  await run()
  return performance.now() - start
}

const program = Effect.gen(function* () {
  // Cold start to Ready, each real server.
  const coldStarts: Array<string> = []
  for (const [name, spec] of [
    [
      "typescript-language-server",
      LspSpec.make({ command: bin("typescript-language-server"), args: ["--stdio"], cwd: copy("ts-project") })
    ],
    [
      "pyright-langserver",
      LspSpec.make({ command: bin("pyright-langserver"), args: ["--stdio"], cwd: copy("py-project") })
    ]
  ] as const) {
    const millis = yield* Effect.scoped(
      Effect.gen(function* () {
        const toolset = yield* LspToolset.make({ name, spec, policy })
        const start = performance.now()
        yield* toolset.start
        const elapsed = performance.now() - start
        const pid = (yield* toolset.state).pid
        if (pid !== undefined) pids.add(pid)
        return elapsed
      })
    )
    coldStarts.push(`  ${name}: ${fmt(millis)}`)
  }

  const cwd = copy("ts-project")
  const toolset = yield* LspToolset.make({
    name: "ts",
    spec: LspSpec.make({ command: bin("typescript-language-server"), args: ["--stdio"], cwd }),
    policy
  })
  yield* toolset.start
  const pid = (yield* toolset.state).pid
  if (pid !== undefined) pids.add(pid)
  // Waits for the project to load (the first semantic answer); this also opens the file, once,
  // for every side on this connection.
  yield* toolset.callTool("lsp_diagnostics", { file: hoverArgs.file })
  const session = yield* toolset.supervisor.use(Effect.succeed)
  const params: Protocol.HoverParams = {
    textDocument: { uri: Paths.toUri(NodePath.join(cwd, hoverArgs.file)) },
    position: { line: hoverArgs.line - 1, character: hoverArgs.character - 1 }
  }
  const document = session.documents.opened(NodePath.join(cwd, hoverArgs.file))
  if (document === undefined) return yield* Effect.die(new Error("bench:lsp: the file is not open"))
  const viaToolset = () => Effect.runPromise(toolset.callTool("lsp_hover", hoverArgs))
  const bare = () => session.connection.sendRequest(Protocol.HoverRequest.type, params)
  const asEffect = () =>
    Effect.runPromise(Effect.promise(() => session.connection.sendRequest(Protocol.HoverRequest.type, params)))
  const viaRequests = () => Effect.runPromise(session.request(Protocol.HoverRequest.type, params))
  const withRequirements = () =>
    Effect.runPromise(
      Deadline.within(30_000)(
        session.speculate(
          Protocol.HoverRequest.type,
          params,
          () => session.documents.unchanged(document),
          () => session.request(Protocol.HoverRequest.type, params)
        )
      )
    )

  const stockClient = () =>
    StockLspClient.make({
      command: bin("typescript-language-server"),
      args: ["--stdio"],
      cwd: copy("ts-project"),
      file: hoverArgs.file,
      probe: params.position,
      loaded: "add(a: number, b: number)"
    }).pipe(Effect.tap((client) => Effect.sync(() => pids.add(client.pid))))
  const stock = yield* stockClient()
  const control = yield* stockClient()

  const side = (name: string, run: () => Promise<unknown>) => ({ name, run, samples: [] as Array<number> })
  type Side = ReturnType<typeof side>
  const random = seededRandom(20261124)
  const measure = (sides: ReadonlyArray<Side>) =>
    Effect.promise(async () => {
      for (let i = 0; i < WARMUP + CALLS; i++) {
        if (i === WARMUP) gc("bench:lsp")
        for (const side of shuffled(sides, random)) {
          const millis = await time(side.run)
          if (i >= WARMUP) side.samples.push(millis)
        }
      }
    })
  const p = (side: Side, q: number) => percentile(ascending(side.samples), q)
  const ratio = (a: Side, b: Side, q = 0.5) => (p(a, q) / p(b, q)).toFixed(3)
  const line = (side: Side, to: Side) =>
    `  ${side.name}: p50 ${fmt(p(side, 0.5))}  p99 ${fmt(p(side, 0.99))}  p50 ratio to ${to.name} ${ratio(side, to)}`

  const supervised = side("toolset", viaToolset)
  const baseline = side("stock vscode-jsonrpc", () => stock.hover(params.position))
  const second = side("stock vscode-jsonrpc, control", () => control.hover(params.position))
  yield* measure([supervised, baseline, second])
  yield* Console.log(`lsp_hover x${CALLS}, typescript-language-server, one process per side:`)
  for (const each of [supervised, baseline, second]) yield* Console.log(line(each, baseline))
  yield* Console.log(
    `  ratio toolset/stock vscode-jsonrpc: p50 ${ratio(supervised, baseline)}  p99 ${ratio(supervised, baseline, 0.99)}  (target p50 <= 1.05)`
  )

  const onConnection = side("toolset", viaToolset)
  const raw = side("raw vscode-jsonrpc", bare)
  const steps = [
    raw,
    side("as an Effect", asEffect),
    side("Requests.request", viaRequests),
    side("+ deadline, freshness", withRequirements),
    onConnection
  ]
  yield* measure(steps)
  yield* Console.log(`lsp_hover x${CALLS}, all sides on the toolset's own connection:`)
  for (const each of steps) yield* Console.log(line(each, raw))
  yield* Console.log(
    `  ratio toolset/raw: p50 ${ratio(onConnection, raw)}  p99 ${ratio(onConnection, raw, 0.99)}  (target p50 <= 1.05)`
  )
  yield* Console.log(
    `  step by step, p50 ratio to the step before: ${steps
      .slice(1)
      .map((step, i) => `${step.name} ${ratio(step, steps[i] ?? raw)}`)
      .join(", ")}`
  )

  const answer = yield* toolset.callTool("lsp_hover", hoverArgs)
  const others = yield* Effect.promise(() =>
    Promise.all([bare(), stock.hover(params.position), control.hover(params.position)])
  )
  const agree = others.every(
    (other) =>
      other !== null && answer.content[0]?.type === "text" && answer.content[0].text === Render.hover(other.contents)
  )
  yield* Console.log(`  answers agree: ${agree}`)
  yield* Console.log("cold start to Ready:")
  yield* Console.log(coldStarts.join("\n"))
})

await Effect.runPromise(Effect.scoped(program))
const alive = [...pids].filter(ServerProcess.groupAlive)
console.log(`server process groups left alive: ${alive.length}`)
if (alive.length > 0) process.exitCode = 1
