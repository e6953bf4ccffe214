/**
 * A language server client as vscode-jsonrpc ships it — its own `StreamMessageReader` and
 * `StreamMessageWriter`, nothing of Toolvisor's — for a benchmark's baseline. It starts the server
 * in a process group of its own, sends the toolset's `initialize` (same client capabilities, root
 * and workspace folder), opens one file and waits until the project is loaded (a hover answers
 * with the signature), so it starts where a toolset that has answered diagnostics starts.
 * Closing the scope kills the group.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { ServerProcess } from "@toolvisor/core"
import { LspConnector } from "@toolvisor/lsp"
import * as Paths from "@toolvisor/lsp/internal/paths"
import * as Effect from "effect/Effect"
import * as Rpc from "vscode-jsonrpc/node"
import * as Protocol from "vscode-languageserver-protocol"

export interface StockClient {
  readonly pid: number
  /** The hover request at `position` in the open file, straight through vscode-jsonrpc. */
  readonly hover: (position: Protocol.Position) => Promise<Protocol.Hover | null>
}

const spawn = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      NodeChildProcess.spawn(command, args, { cwd, detached: true, stdio: ["pipe", "pipe", "ignore"] })
    ),
    (child) =>
      Effect.promise(async () => {
        if (child.pid === undefined) return
        try {
          process.kill(-child.pid, "SIGKILL")
        } catch {
          // Already gone.
        }
        while (ServerProcess.groupAlive(child.pid)) await new Promise((resolve) => setTimeout(resolve, 20))
      })
  )

/** Starts `command` in `cwd` and opens `file` (relative to it), ready for semantic answers. */
export const make = (options: {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly file: string
  /** A position whose hover names `loaded` once the project is loaded. */
  readonly probe: Protocol.Position
  readonly loaded: string
}) =>
  Effect.gen(function* () {
    const { cwd } = options
    const child = yield* spawn(options.command, options.args, cwd)
    const pid = child.pid
    if (pid === undefined) return yield* Effect.die(new Error(`${options.command}: could not be started`))
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Rpc.createMessageConnection(new Rpc.StreamMessageReader(child.stdout), new Rpc.StreamMessageWriter(child.stdin))
      ),
      (connection) => Effect.sync(() => connection.dispose())
    )
    // Every server-to-client request gets an answer, as the toolset gives one.
    connection.onRequest(() => null)
    connection.listen()
    const rootUri = Paths.toUri(cwd)
    const path = NodePath.join(cwd, options.file)
    const uri = Paths.toUri(path)
    const hover = (position: Protocol.Position) =>
      connection.sendRequest(Protocol.HoverRequest.type, { textDocument: { uri }, position })
    yield* Effect.promise(async () => {
      await connection.sendRequest(Protocol.InitializeRequest.type, {
        processId: process.pid,
        rootUri,
        rootPath: cwd,
        workspaceFolders: [{ uri: rootUri, name: NodePath.basename(cwd) }],
        capabilities: LspConnector.clientCapabilities
      })
      await connection.sendNotification(Protocol.InitializedNotification.type, {})
      await connection.sendNotification(Protocol.DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId: Paths.languageId(path), version: 1, text: NodeFs.readFileSync(path, "utf8") }
      })
      const deadline = Date.now() + 60_000
      while (!JSON.stringify(await hover(options.probe)).includes(options.loaded)) {
        if (Date.now() > deadline) throw new Error(`${options.command}: the project did not load within 60 s`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })
    return { pid, hover } satisfies StockClient
  })
