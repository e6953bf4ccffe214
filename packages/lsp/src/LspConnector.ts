/**
 * Opens an LSP session for the Supervisor: spawns the server through `ServerProcess`, speaks
 * JSON-RPC to it with `vscode-jsonrpc` (reading through the bounded `StdoutReader`, writing
 * through `StdinWriter`; requests through `Requests`, so each carries the tool
 * call's deadline and fails when the connection is lost), runs `initialize` → `initialized`,
 * answers the requests a server sends the client, waits for the server to settle (the work
 * `initialized` sets off, see `WorkProgress`) so that Ready means it answers, and keeps the
 * session's capabilities, documents and diagnostics. Closing the session sends `shutdown` +
 * `exit` (bounded), because some servers ignore a closed stdin; ServerProcess then escalates to
 * SIGTERM and SIGKILL for the ones that ignore that too.
 */
import * as NodePath from "node:path"
import { Classify, LifecycleError, ServerProcess, type Session } from "@toolvisor/core"
import * as WallClock from "@toolvisor/core/internal/wallClock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Rpc from "vscode-jsonrpc/node"
import * as Protocol from "vscode-languageserver-protocol"
import * as Capabilities from "./internal/capabilities.ts"
import * as Diagnostics from "./internal/diagnostics.ts"
import * as Documents from "./internal/documents.ts"
import * as Edits from "./internal/edits.ts"
import * as Paths from "./internal/paths.ts"
import * as Requests from "./internal/requests.ts"
import * as StdinWriter from "./internal/stdinWriter.ts"
import * as StdoutReader from "./internal/stdoutReader.ts"
import * as WorkProgress from "./internal/workProgress.ts"
import * as Workspace from "./internal/workspace.ts"
import * as LspSpec from "./LspSpec.ts"
import * as LspTools from "./LspTools.ts"

/** What tool requests run on. */
export interface LspSession {
  readonly name: string
  readonly spec: LspSpec.LspSpec
  /** Where the tools may read and write, its roots resolved when the session began. */
  readonly workspace: Workspace.Workspace
  readonly capabilities: Capabilities.Capabilities
  readonly documents: Documents.Documents
  readonly diagnostics: Diagnostics.Diagnostics
  /** The work the server reports it is doing (work-done progress), for a query to wait on. */
  readonly work: WorkProgress.WorkProgress
  readonly server: { readonly name: string; readonly version: string }
  /**
   * The JSON-RPC connection itself, for a caller that needs what `request` does not wrap (a
   * benchmark's baseline, a custom notification). It is disposed when the session closes.
   */
  readonly connection: Rpc.MessageConnection
  /**
   * A request bounded by the tool call's `Deadline`, cancelled on the server when the caller gives
   * up, and failed at once when the session is lost.
   */
  readonly request: Requests.Requests["request"]
  /** A request on a guess, checked once it is written (see `Requests.speculate`). */
  readonly speculate: Requests.Requests["speculate"]
  /** Fails once the session is lost or closed: race it against waits that are not requests. */
  readonly lost: Requests.Requests["lost"]
  /**
   * Applies a workspace edit to disk and re-syncs the open documents it touched; refused whole if
   * it touches a file outside the workspace.
   */
  readonly applyEdit: (
    edit: Protocol.WorkspaceEdit
  ) => Effect.Effect<
    ReadonlyArray<Edits.Change>,
    Edits.EditFailed | Edits.Refused | Documents.FileProblem | LifecycleError.LifecycleError
  >
}

/** What the connector needs: the toolset's name, the server's spec, and how long the handshake may wait for the server to settle. */
export interface Options {
  readonly name: string
  readonly spec: LspSpec.LspSpec
  readonly clientInfo?: { readonly name: string; readonly version: string }
  /**
   * How long after the spawn the handshake may wait for the server to settle, in milliseconds
   * (default `defaultSettle`); past it the server is Ready as it is. `LspToolset` gives half the
   * `startup_timeout`, so a server that stays busy is Ready late rather than failed.
   */
  readonly settleWithin?: number
}

/** How long a handshake waits for the server to settle when no budget is given. */
export const defaultSettle = 15_000

/** How long closing waits for `shutdown` before sending `exit` anyway. */
const shutdownBudget = 800

/** How long a closed connection waits for the process exit that tells why. */
const exitReportGrace = 1_000

/**
 * A request no server implements. Any answer — even "method not found" — proves the server still
 * reads, dispatches and writes, and the JSON-RPC layer answers it without touching the language
 * engine, so a busy but healthy server passes; a wedged one (not reading stdin, event loop
 * blocked) cannot answer at all. A real request such as `workspace/symbol` would be costly on a
 * big workspace and is not implemented by every server.
 */
const ping = new Rpc.RequestType<object, unknown, unknown>("$/toolvisor/ping")

/** Runs on wall-clock time: the budget is about a real process, even under a TestClock. */
const wallTimeout = <A>(promise: Promise<A>, millis: number): Promise<A | undefined> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), millis)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      }
    )
  })

/** What Toolvisor tells a server it can do as a client in `initialize`. */
export const clientCapabilities: Protocol.ClientCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  window: { workDoneProgress: true },
  workspace: {
    configuration: true,
    didChangeConfiguration: { dynamicRegistration: false },
    workspaceFolders: true,
    applyEdit: true,
    workspaceEdit: { documentChanges: true, resourceOperations: ["create", "rename", "delete"] },
    symbol: { dynamicRegistration: true },
    // Answered (with nothing to do): see the refresh handlers in `make`.
    diagnostics: { refreshSupport: true }
  },
  textDocument: {
    synchronization: { dynamicRegistration: false, didSave: false, willSave: false },
    publishDiagnostics: { versionSupport: true },
    // Pull diagnostics. pyright turns them on only with `dynamicRegistration` (it then registers
    // `textDocument/diagnostic` after `initialized` and stops pushing); servers that advertise
    // `diagnosticProvider` statically (tsc --lsp, vscode-json) are pulled either way.
    diagnostic: { dynamicRegistration: true, relatedDocumentSupport: false },
    hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
    definition: { dynamicRegistration: true, linkSupport: true },
    references: { dynamicRegistration: true },
    implementation: { dynamicRegistration: true, linkSupport: true },
    documentSymbol: { dynamicRegistration: true, hierarchicalDocumentSymbolSupport: true },
    codeAction: {
      dynamicRegistration: true,
      codeActionLiteralSupport: {
        codeActionKind: {
          valueSet: ["quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite", "source"]
        }
      }
    },
    rename: { dynamicRegistration: true, prepareSupport: false },
    formatting: { dynamicRegistration: true },
    callHierarchy: { dynamicRegistration: true },
    typeHierarchy: { dynamicRegistration: true },
    signatureHelp: {
      dynamicRegistration: true,
      signatureInformation: {
        documentationFormat: ["markdown", "plaintext"],
        parameterInformation: { labelOffsetSupport: true }
      }
    },
    inlayHint: { dynamicRegistration: true }
  }
}

/** A connector for a Supervisor: each connect spawns the server and completes the LSP handshake. */
export const make = (options: Options): Session.Connector<LspSession> => ({
  connect: Effect.gen(function* () {
    const { name, spec } = options
    const began = Date.now()
    const proc = yield* ServerProcess.spawn(name, {
      command: spec.command,
      args: spec.args,
      cwd: spec.cwd,
      ...(spec.env === undefined ? {} : { env: spec.env })
    })
    const awaiting = new Set<StdoutReader.RequestId>()
    const reader = StdoutReader.make(proc.stdout, awaiting)
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Rpc.createMessageConnection(reader, StdinWriter.make(proc.stdin, awaiting), undefined, {
          messageStrategy: reader.strategy
        })
      ),
      (connection) => Effect.sync(() => connection.dispose())
    )
    const requests = Requests.make(name, connection)
    const closed = Deferred.makeUnsafe<void>()
    /**
     * Why the connection closed. When the reader gave up on the stream, that says why, at once:
     * the process lives on, so waiting for its exit would only delay the restart. Otherwise the
     * process exit (with its code and stderr), if it comes soon.
     */
    const whyClosed = Effect.suspend(() =>
      reader.broken === undefined
        ? Effect.raceFirst(
            proc.exited,
            WallClock.sleep(exitReportGrace).pipe(
              Effect.andThen(Effect.fail(Classify.classify(name, new Error("connection closed by the server"))))
            )
          )
        : Effect.fail(
            new LifecycleError.TransportError({
              toolset: name,
              message: `${name}: ${reader.broken}; the stream can no longer be followed`
            })
          )
    )
    /** What a request in flight fails with when the server goes away: why, if that is known soon. */
    const serverGone = whyClosed.pipe(
      Effect.andThen(
        Effect.fail(
          new LifecycleError.ServerCrashed({
            toolset: name,
            message: `${name}: the server exited while the request was in flight`,
            exitCode: 0,
            signal: null
          })
        )
      )
    )
    connection.onClose(() => {
      Deferred.doneUnsafe(closed, Effect.void)
      requests.close(serverGone)
    })
    // Runs after the polite goodbye below and before `dispose` (finalizers are LIFO): what is
    // still in flight then will not be answered. A session closed because its process died (the
    // exit can be seen before the connection's close) reports the death, not a close.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() =>
        requests.close(
          proc.hasExited()
            ? serverGone
            : Effect.fail(LifecycleError.notStarted(name, "the session closed while the request was in flight"))
        )
      )
    )
    const context = yield* Effect.context<never>()
    const runPromise = Effect.runPromiseWith(context)
    connection.onError(([error]) => {
      Effect.runForkWith(context)(Effect.logWarning(`${name}: JSON-RPC error: ${error.message}`))
    })

    // Registered before `listen`, so nothing the server sends early goes unanswered.
    const workspace = yield* Effect.sync(() => Workspace.make(spec.cwd, spec.allowOutsideWorkspace))
    const diagnostics = Diagnostics.make(workspace)
    const work = WorkProgress.make(connection)
    const toolCounts = yield* Queue.unbounded<number>()
    let capabilities = Capabilities.make({})
    let documents: Documents.Documents | undefined
    const rootUri = Paths.toUri(spec.cwd)
    const folders = [{ uri: rootUri, name: NodePath.basename(spec.cwd) }]

    const applyEdit = (edit: Protocol.WorkspaceEdit) =>
      Effect.gen(function* () {
        const changes = yield* Edits.applyWorkspaceEdit(workspace, edit)
        const open = documents
        if (open !== undefined) {
          yield* Effect.forEach(changes, (change) => open.refresh(change.path), { discard: true })
        }
        return changes
      })

    const catalogue = () =>
      LspTools.available(capabilities)
        .map((tool) => tool.name)
        .join(",")
    /** Applies a (un)registration; a change of the catalogue is announced, any change wakes waiters. */
    const reregister = (update: () => boolean): void => {
      const before = catalogue()
      if (!update()) return
      diagnostics.wake()
      if (catalogue() !== before) Queue.offerUnsafe(toolCounts, LspTools.available(capabilities).length)
    }

    connection.onNotification(Protocol.PublishDiagnosticsNotification.type, diagnostics.publishUnsafe)
    // Every request from the server counts as activity for `WorkProgress.settle`.
    connection.onRequest(
      Protocol.ConfigurationRequest.type,
      work.noting((params: Protocol.ConfigurationParams) =>
        params.items.map((item) => LspSpec.section(spec, item.section))
      )
    )
    connection.onRequest(
      Protocol.WorkDoneProgressCreateRequest.type,
      work.noting(() => undefined)
    )
    connection.onRequest(
      Protocol.WorkspaceFoldersRequest.type,
      work.noting(() => folders)
    )
    connection.onRequest(
      Protocol.ShowMessageRequest.type,
      work.noting(() => null)
    )
    connection.onRequest(
      Protocol.RegistrationRequest.type,
      work.noting((params: Protocol.RegistrationParams) =>
        reregister(() => capabilities.register(params.registrations))
      )
    )
    connection.onRequest(
      Protocol.UnregistrationRequest.type,
      work.noting((params: Protocol.UnregistrationParams) =>
        reregister(() => capabilities.unregister(params.unregisterations))
      )
    )
    // A refresh asks the client to pull again what it shows; every tool call pulls afresh, so an
    // answer is all it takes. It must be an answer: pyright sends `workspace/diagnostic/refresh`
    // whenever it registered pull diagnostics, without checking `refreshSupport`, and exits
    // (code 1, unhandled rejection) when the client answers with an error such as "method not
    // found".
    for (const refresh of [
      Protocol.DiagnosticRefreshRequest.method,
      Protocol.InlayHintRefreshRequest.method,
      Protocol.SemanticTokensRefreshRequest.method,
      Protocol.CodeLensRefreshRequest.method,
      Protocol.InlineValueRefreshRequest.method,
      Protocol.FoldingRangeRefreshRequest.method
    ]) {
      connection.onRequest(
        refresh,
        work.noting(() => null)
      )
    }
    connection.onRequest(
      Protocol.ApplyWorkspaceEditRequest.type,
      work.noting((params: Protocol.ApplyWorkspaceEditParams) =>
        runPromise(
          applyEdit(params.edit).pipe(
            Effect.as<Protocol.ApplyWorkspaceEditResult>({ applied: true }),
            Effect.catch((error) => Effect.succeed({ applied: false, failureReason: error.message }))
          )
        )
      )
    )
    connection.listen()

    const initialized = yield* proc.whileRunning(
      requests
        .request(Protocol.InitializeRequest.type, {
          processId: process.pid,
          clientInfo: options.clientInfo ?? { name: "toolvisor", version: "0.1.0" },
          rootUri,
          rootPath: spec.cwd,
          workspaceFolders: folders,
          capabilities: clientCapabilities,
          ...(spec.initializationOptions === undefined ? {} : { initializationOptions: spec.initializationOptions })
        })
        .pipe(Effect.catchTag("ResponseFailed", (error) => Effect.fail(Classify.classify(name, error))))
    )
    capabilities = Capabilities.make(initialized.capabilities)
    documents = yield* Documents.make({
      toolset: name,
      notify: requests.notify,
      sync: initialized.capabilities.textDocumentSync,
      seq: diagnostics.seqUnsafe,
      workspace
    })
    yield* requests.notify(Protocol.InitializedNotification.type, {})
    if (spec.settings !== undefined) {
      yield* requests.notify(Protocol.DidChangeConfigurationNotification.type, { settings: spec.settings })
    }
    yield* WorkProgress.settle(
      work,
      requests.request(ping, {}).pipe(Effect.catchTag("ResponseFailed", () => Effect.void)),
      (options.settleWithin ?? defaultSettle) - (Date.now() - began)
    )
    yield* proc.established
    // Runs first on close (finalizers are LIFO): the polite goodbye, then dispose, then the process.
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        try {
          await wallTimeout(connection.sendRequest(Protocol.ShutdownRequest.type), shutdownBudget)
          await connection.sendNotification(Protocol.ExitNotification.type)
        } catch {
          // The server is already gone or broken: the process close below handles it.
        }
      })
    )

    const serverInfo = initialized.serverInfo
    const session: LspSession = {
      name,
      spec,
      workspace,
      capabilities,
      documents,
      diagnostics,
      work,
      connection,
      // Not every server names itself (typescript-language-server does not): the command does.
      server:
        serverInfo === undefined
          ? { name: NodePath.basename(spec.command), version: "" }
          : { name: serverInfo.name, version: serverInfo.version ?? "" },
      request: requests.request,
      speculate: requests.speculate,
      lost: requests.lost,
      applyEdit
    }
    return {
      handle: session,
      selfBounded: true,
      ended: Effect.raceFirst(proc.exited, Effect.andThen(Deferred.await(closed), whyClosed)),
      probe: requests.request(ping, {}).pipe(Effect.catchTag("ResponseFailed", () => Effect.void)),
      pid: proc.pid,
      toolCount: LspTools.available(capabilities).length,
      toolCountChanges: Stream.fromQueue(toolCounts),
      server: session.server
    } satisfies Session.Session<LspSession>
  })
})
