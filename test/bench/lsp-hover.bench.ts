/**
 * LSP hover benchmark: 200 `lsp_hover` calls through a supervised `LspToolset` against 200 bare
 * `textDocument/hover` requests over vscode-jsonrpc, p50/p99 and their ratio (target <= 1.05).
 * Also: cold start to Ready for each real server.
 *
 * All sides talk to the same typescript-language-server process over the same connection (the
 * session's own `MessageConnection`, with its writer), so the server's state — project loaded,
 * file open at the same version, JIT warmth — is the same for all, and what differs is only the
 * client's work. Two server processes differ by more than that from one run to the next.
 *
 * Three more sides build up to the toolset, to say where its time goes:
 * - "as an Effect": the request wrapped in `Effect.promise`, run with `Effect.runPromise` — what
 *   any Effect API pays (a fiber, suspended and resumed around the answer);
 * - "Requests.request": the session's request as tools send it, cancellable and failing as soon
 *   as the connection is lost (vscode-jsonrpc leaves it waiting);
 * - "+ deadline, freshness": that, bounded by `call_timeout` and checked against the file on disk
 *   (`Requests.speculate`) — what the issue requires of every request about a file.
 * The rest of "toolset" is the tool layer: the supervisor's session lookup, argument validation,
 * path resolution, rendering. The calls go round robin, one by one, the order rotating each round
 * after the same warm-up, so every side follows every other alike and drift falls on all.
 *
 * Run: cd /work/main && npm run bench:lsp
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Policy, ServerProcess } from "@toolvisor/core"
import { Deadline, LspSpec, LspToolset, Paths, Render } from "@toolvisor/lsp"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Protocol from "vscode-languageserver-protocol"
import { ascending, gc, percentile } from "./stats.ts"

const CALLS = 200
/** Per side, alternating like the measured calls: enough for the JIT to compile both paths. */
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
  // for both sides.
  yield* toolset.callTool("lsp_diagnostics", { file: hoverArgs.file })
  const session = yield* toolset.supervisor.useDirect(Effect.succeed)
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

  const side = (name: string, run: () => Promise<unknown>) => ({ name, run, samples: [] as Array<number> })
  const supervised = side("toolset", viaToolset)
  const raw = side("raw vscode-jsonrpc", bare)
  const effect = side("as an Effect", asEffect)
  const requests = side("Requests.request", viaRequests)
  const required = side("+ deadline, freshness", withRequirements)
  const sides = [supervised, raw, effect, requests, required]
  const round = async (record: boolean) => {
    for (let i = 0; i < (record ? CALLS : WARMUP); i++) {
      // Round robin, starting one further each round: every side follows every other alike.
      const first = i % sides.length
      for (const side of [...sides.slice(first), ...sides.slice(0, first)]) {
        const millis = await time(side.run)
        if (record) side.samples.push(millis)
      }
    }
  }
  yield* Effect.promise(() => round(false))
  gc("bench:lsp")
  yield* Effect.promise(() => round(true))

  const answer = yield* toolset.callTool("lsp_hover", hoverArgs)
  const rawAnswer = yield* Effect.promise(bare)
  const agree =
    rawAnswer !== null &&
    answer.content[0]?.type === "text" &&
    answer.content[0].text === Render.hover(rawAnswer.contents)

  const p = (side: (typeof sides)[number], q: number) => percentile(ascending(side.samples), q)
  const ratio = (a: (typeof sides)[number], b: (typeof sides)[number]) => (p(a, 0.5) / p(b, 0.5)).toFixed(3)
  yield* Console.log(`lsp_hover x${CALLS} (typescript-language-server, same connection, round robin)`)
  for (const side of sides) {
    yield* Console.log(
      `  ${side.name}: p50 ${fmt(p(side, 0.5))}  p99 ${fmt(p(side, 0.99))}  p50 ratio to raw ${ratio(side, raw)}`
    )
  }
  yield* Console.log(
    `  ratio toolset/raw: p50 ${ratio(supervised, raw)}  p99 ${(p(supervised, 0.99) / p(raw, 0.99)).toFixed(3)}  (target p50 <= 1.05)`
  )
  const steps = [raw, effect, requests, required, supervised]
  yield* Console.log(
    `  step by step, p50 ratio to the step before: ${steps
      .slice(1)
      .map((step, i) => `${step.name} ${ratio(step, steps[i] ?? raw)}`)
      .join(", ")}`
  )

  yield* Console.log(`  answers agree: ${agree}`)
  yield* Console.log("cold start to Ready:")
  yield* Console.log(coldStarts.join("\n"))
})

await Effect.runPromise(Effect.scoped(program))
const alive = [...pids].filter(ServerProcess.groupAlive)
console.log(`server process groups left alive: ${alive.length}`)
if (alive.length > 0) process.exitCode = 1
