/**
 * Opens an LSP session for the Supervisor: spawns the server through `ServerProcess`, speaks
 * JSON-RPC to it with `vscode-jsonrpc`, runs `initialize` → `initialized`, answers the requests
 * a server sends the client, and keeps the session's capabilities, documents and diagnostics.
 * Closing the session sends `shutdown` + `exit` (bounded), because some servers ignore a closed
 * stdin; ServerProcess then escalates to SIGTERM and SIGKILL for the ones that ignore that too.
 */
import * as NodePath from "node:path"
import { Classify, type LifecycleError, ServerProcess, type Session } from "@toolvisor/core"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Rpc from "vscode-jsonrpc/node"
import * as Protocol from "vscode-languageserver-protocol"
import * as Capabilities from "./Capabilities.ts"
import * as Diagnostics from "./Diagnostics.ts"
import * as Documents from "./Documents.ts"
import * as Edits from "./Edits.ts"
import type * as LspSpec from "./LspSpec.ts"
import * as LspTools from "./LspTools.ts"
import * as Paths from "./Paths.ts"

/** The server answered a request with an error; the session itself is fine. */
export class ResponseFailed extends Data.TaggedError("ResponseFailed")<{
  readonly method: string
  readonly code: number
  readonly message: string
}> {}

export type RequestError = ResponseFailed | LifecycleError.LifecycleError

/** What tool requests run on. */
export interface LspSession {
  readonly name: string
  readonly spec: LspSpec.LspSpec
  readonly capabilities: Capabilities.Capabilities
  readonly documents: Documents.Documents
  readonly diagnostics: Diagnostics.Diagnostics
  readonly server: { readonly name: string; readonly version: string }
  /** A request with the fiber's interruption wired to `$/cancelRequest`. */
  readonly request: <P, R, E>(
    type: Rpc.RequestType<P, R, E>,
    params: Rpc.RequestParam<P>
  ) => Effect.Effect<R, RequestError>
  /** Applies a workspace edit to disk and re-syncs the open documents it touched. */
  readonly applyEdit: (
    edit: Protocol.WorkspaceEdit
  ) => Effect.Effect<
    ReadonlyArray<Edits.Change>,
    Edits.EditFailed | Documents.FileProblem | LifecycleError.LifecycleError
  >
}

export interface Options {
  readonly name: string
  readonly spec: LspSpec.LspSpec
  readonly clientInfo?: { readonly name: string; readonly version: string }
}

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

const wallSleep = (millis: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

export const clientCapabilities: Protocol.ClientCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  window: { workDoneProgress: true },
  workspace: {
    configuration: true,
    workspaceFolders: true,
    applyEdit: true,
    workspaceEdit: { documentChanges: true, resourceOperations: ["create", "rename", "delete"] },
    symbol: { dynamicRegistration: true }
  },
  textDocument: {
    synchronization: { dynamicRegistration: false, didSave: false, willSave: false },
    // No `diagnostic` (pull) client capability: pyright 1.1.414 then registers pull diagnostics
    // and exits (code 1) when pulled during its first workspace scan. Servers that offer pull
    // on their own (`diagnosticProvider`, e.g. tsc --lsp) are still pulled.
    publishDiagnostics: { versionSupport: true },
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

export const make = (options: Options): Session.Connector<LspSession> => ({
  connect: Effect.gen(function* () {
    const { name, spec } = options
    const proc = yield* ServerProcess.spawn(name, {
      command: spec.command,
      args: spec.args,
      cwd: spec.cwd,
      ...(spec.env === undefined ? {} : { env: spec.env })
    })
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Rpc.createMessageConnection(new Rpc.StreamMessageReader(proc.stdout), new Rpc.StreamMessageWriter(proc.stdin))
      ),
      (connection) => Effect.sync(() => connection.dispose())
    )
    const closed = Deferred.makeUnsafe<void>()
    // A closed connection throws on any send, `$/cancelRequest` included.
    let isClosed = false
    connection.onClose(() => {
      isClosed = true
      Deferred.doneUnsafe(closed, Effect.void)
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        isClosed = true
      })
    )
    const context = yield* Effect.context<never>()
    const runPromise = Effect.runPromiseWith(context)
    connection.onError(([error]) => {
      Effect.runForkWith(context)(Effect.logWarning(`${name}: JSON-RPC error: ${error.message}`))
    })

    const request = <P, R, E>(
      type: Rpc.RequestType<P, R, E>,
      params: Rpc.RequestParam<P>
    ): Effect.Effect<R, RequestError> =>
      Effect.tryPromise({
        try: (signal) => {
          const source = new Rpc.CancellationTokenSource()
          let settled = false
          // Only a request still in flight is cancelled: Effect also aborts the signal after the
          // answer, and a late `$/cancelRequest` makes pyright exit.
          signal.addEventListener(
            "abort",
            () => {
              if (!settled && !isClosed) source.cancel()
            },
            { once: true }
          )
          return connection.sendRequest(type, params, source.token).finally(() => {
            settled = true
          })
        },
        catch: (cause) =>
          cause instanceof Rpc.ResponseError
            ? new ResponseFailed({ method: type.method, code: cause.code, message: cause.message })
            : Classify.classify(name, cause)
      })

    // Registered before `listen`, so nothing the server sends early goes unanswered.
    const diagnostics = Diagnostics.make()
    const toolCounts = yield* Queue.unbounded<number>()
    let capabilities = Capabilities.make({})
    let documents: Documents.Documents | undefined
    const rootUri = Paths.toUri(spec.cwd)
    const folders = [{ uri: rootUri, name: NodePath.basename(spec.cwd) }]

    const applyEdit = (edit: Protocol.WorkspaceEdit) =>
      Effect.gen(function* () {
        const changes = yield* Edits.applyWorkspaceEdit(edit)
        const open = documents
        if (open !== undefined) {
          yield* Effect.forEach(changes, (change) => open.refresh(change.path), { discard: true })
        }
        return changes
      })

    const announce = (changed: boolean): void => {
      if (changed) Queue.offerUnsafe(toolCounts, LspTools.available(capabilities).length)
    }

    connection.onNotification(Protocol.PublishDiagnosticsNotification.type, diagnostics.publishUnsafe)
    // An empty object per section, not null: pyright (with pull diagnostics) exits on a null
    // section, and vscode-css-language-server pushes nothing without an object.
    connection.onRequest(Protocol.ConfigurationRequest.type, (params) => params.items.map(() => ({})))
    connection.onRequest(Protocol.WorkDoneProgressCreateRequest.type, () => undefined)
    connection.onRequest(Protocol.WorkspaceFoldersRequest.type, () => folders)
    connection.onRequest(Protocol.ShowMessageRequest.type, () => null)
    connection.onRequest(Protocol.RegistrationRequest.type, (params) =>
      announce(capabilities.register(params.registrations))
    )
    connection.onRequest(Protocol.UnregistrationRequest.type, (params) =>
      announce(capabilities.unregister(params.unregisterations))
    )
    connection.onRequest(Protocol.ApplyWorkspaceEditRequest.type, (params) =>
      runPromise(
        applyEdit(params.edit).pipe(
          Effect.as<Protocol.ApplyWorkspaceEditResult>({ applied: true }),
          Effect.catch((error) => Effect.succeed({ applied: false, failureReason: error.message }))
        )
      )
    )
    connection.listen()

    const initialized = yield* proc.whileRunning(
      request(Protocol.InitializeRequest.type, {
        processId: process.pid,
        clientInfo: options.clientInfo ?? { name: "toolvisor", version: "0.1.0" },
        rootUri,
        rootPath: spec.cwd,
        workspaceFolders: folders,
        capabilities: clientCapabilities
      }).pipe(Effect.catchTag("ResponseFailed", (error) => Effect.fail(Classify.classify(name, error))))
    )
    capabilities = Capabilities.make(initialized.capabilities)
    documents = yield* Documents.make({
      name,
      connection,
      sync: initialized.capabilities.textDocumentSync,
      seq: diagnostics.seqUnsafe
    })
    yield* Effect.tryPromise({
      try: () => connection.sendNotification(Protocol.InitializedNotification.type, {}),
      catch: (cause) => Classify.classify(name, cause)
    })
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

    const lostConnection = Deferred.await(closed).pipe(
      Effect.andThen(
        Effect.raceFirst(
          proc.exited,
          wallSleep(exitReportGrace).pipe(
            Effect.andThen(Effect.fail(Classify.classify(name, new Error("connection closed by the server"))))
          )
        )
      )
    )
    const serverInfo = initialized.serverInfo
    const session: LspSession = {
      name,
      spec,
      capabilities,
      documents,
      diagnostics,
      // Not every server names itself (typescript-language-server does not): the command does.
      server:
        serverInfo === undefined
          ? { name: NodePath.basename(spec.command), version: "" }
          : { name: serverInfo.name, version: serverInfo.version ?? "" },
      request,
      applyEdit
    }
    return {
      handle: session,
      ended: Effect.raceFirst(proc.exited, lostConnection),
      probe: request(ping, {}).pipe(Effect.catchTag("ResponseFailed", () => Effect.void)),
      pid: proc.pid,
      toolCount: LspTools.available(capabilities).length,
      toolCountChanges: Stream.fromQueue(toolCounts),
      server: session.server
    } satisfies Session.Session<LspSession>
  })
})
