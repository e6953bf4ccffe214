/**
 * LSP hover benchmark: 200 `lsp_hover` calls through a supervised `LspToolset` against the same
 * hover sent over raw `vscode-jsonrpc`, each to its own typescript-language-server on its own
 * copy of the fixture project, measured in the same run (ABBA blocks, so drift falls on both):
 * p50/p99 and the ratio. Also: cold start to Ready for each real server.
 *
 * Run: cd /work/main && npm run bench:lsp
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Policy, ServerProcess } from "@toolvisor/core"
import { LspSpec, LspToolset } from "@toolvisor/lsp"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Rpc from "vscode-jsonrpc/node"
import * as Protocol from "vscode-languageserver-protocol"
import { ascending } from "./stats.ts"

const CALLS = 200
const BLOCK = 50
const WARMUP = 30

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

const percentile = (samples: ReadonlyArray<number>, p: number) => {
  const sorted = ascending(samples)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

const fmt = (ms: number) => `${ms.toFixed(3)} ms`

/** A bare client: spawn, initialize, open the file once; then only `textDocument/hover`. */
const rawClient = (cwd: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const proc = NodeChildProcess.spawn(bin("typescript-language-server"), ["--stdio"], { cwd, detached: true })
      if (proc.pid !== undefined) pids.add(proc.pid)
      const connection = Rpc.createMessageConnection(
        new Rpc.StreamMessageReader(proc.stdout),
        new Rpc.StreamMessageWriter(proc.stdin)
      )
      connection.onRequest(Protocol.ConfigurationRequest.type, (params) => params.items.map(() => ({})))
      connection.onRequest(Protocol.WorkDoneProgressCreateRequest.type, () => undefined)
      connection.listen()
      const rootUri = `file://${cwd}`
      await connection.sendRequest(Protocol.InitializeRequest.type, {
        processId: process.pid,
        rootUri,
        workspaceFolders: [{ uri: rootUri, name: "bench" }],
        capabilities: { workspace: { configuration: true } }
      })
      await connection.sendNotification(Protocol.InitializedNotification.type, {})
      const uri = `${rootUri}/src/main.ts`
      const text = NodeFs.readFileSync(NodePath.join(cwd, "src/main.ts"), "utf8")
      await connection.sendNotification(Protocol.DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId: "typescript", version: 1, text }
      })
      const hover = () =>
        connection.sendRequest(Protocol.HoverRequest.type, {
          textDocument: { uri },
          position: { line: hoverArgs.line - 1, character: hoverArgs.character - 1 }
        })
      return { proc, connection, hover }
    }),
    ({ proc, connection }) =>
      Effect.promise(async () => {
        await connection.sendRequest(Protocol.ShutdownRequest.type).catch(() => undefined)
        await connection.sendNotification(Protocol.ExitNotification.type).catch(() => undefined)
        connection.dispose()
        await new Promise((resolve) => setTimeout(resolve, 200))
        if (proc.pid !== undefined && ServerProcess.groupAlive(proc.pid)) process.kill(-proc.pid, "SIGKILL")
      })
  )

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

  const toolset = yield* LspToolset.make({
    name: "ts",
    spec: LspSpec.make({ command: bin("typescript-language-server"), args: ["--stdio"], cwd: copy("ts-project") }),
    policy
  })
  yield* toolset.start
  const pid = (yield* toolset.state).pid
  if (pid !== undefined) pids.add(pid)
  const raw = yield* rawClient(copy("ts-project"))

  const viaToolset = () => Effect.runPromise(toolset.callTool("lsp_hover", hoverArgs))
  // Both wait for the project to load (the first semantic answer), then warm up.
  yield* toolset.callTool("lsp_diagnostics", { file: hoverArgs.file })
  for (let i = 0; i < WARMUP; i++) {
    yield* Effect.promise(viaToolset)
    yield* Effect.promise(raw.hover)
  }
  const check = yield* toolset.callTool("lsp_hover", hoverArgs)
  const rawCheck = yield* Effect.promise(raw.hover)
  const supervised: Array<number> = []
  const bare: Array<number> = []
  const blocks = CALLS / BLOCK
  for (let b = 0; b < blocks; b++) {
    const order = b % 2 === 0 ? ([supervised, bare] as const) : ([bare, supervised] as const)
    for (const series of order) {
      for (let i = 0; i < BLOCK; i++) {
        series.push(yield* Effect.promise(() => time(series === supervised ? viaToolset : raw.hover)))
      }
    }
  }
  const p50 = [percentile(supervised, 50), percentile(bare, 50)] as const
  const p99 = [percentile(supervised, 99), percentile(bare, 99)] as const
  yield* Console.log(`lsp_hover x${CALLS} (typescript-language-server, ABBA blocks of ${BLOCK})`)
  yield* Console.log(`  toolset: p50 ${fmt(p50[0])}  p99 ${fmt(p99[0])}`)
  yield* Console.log(`  raw vscode-jsonrpc: p50 ${fmt(p50[1])}  p99 ${fmt(p99[1])}`)
  yield* Console.log(
    `  ratio toolset/raw: p50 ${(p50[0] / p50[1]).toFixed(3)}  p99 ${(p99[0] / p99[1]).toFixed(3)}  (target <= 1.05)`
  )
  yield* Console.log(`  answers agree: ${check.content.length > 0 && rawCheck !== null}`)
  yield* Console.log("cold start to Ready:")
  yield* Console.log(coldStarts.join("\n"))
})

await Effect.runPromise(Effect.scoped(program))
const alive = [...pids].filter(ServerProcess.groupAlive)
console.log(`server process groups left alive: ${alive.length}`)
if (alive.length > 0) process.exitCode = 1
