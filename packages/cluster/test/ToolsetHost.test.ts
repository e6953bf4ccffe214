import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { AgentConfig } from "@toolvisor/config"
import { ServerProcess } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as TestRunner from "effect/cluster/TestRunner"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as CallOutcome from "../src/CallOutcome.ts"
import * as ClusterRegistry from "../src/ClusterRegistry.ts"
import * as CallLedger from "../src/internal/callLedger.ts"
import * as Fence from "../src/internal/fence.ts"
import * as Orphans from "../src/internal/orphans.ts"
import * as ToolsetEntity from "../src/internal/toolsetEntity.ts"
import * as ToolsetHost from "../src/internal/toolsetHost.ts"
import * as Sealing from "../src/Sealing.ts"
import { config, journalEntry, tsEntry } from "./helpers.ts"

/** A ledger that has seen every request already, as after a runner crash. */
const first = { runner: "10.0.0.9:34431", startedAt: new Date(0) }
const replayedLedger = Layer.succeed(CallLedger.CallLedger, {
  begin: () => Effect.succeed({ _tag: "Repeated", ...first }),
  lookup: () => Effect.succeed(first)
})

const cluster = (
  ledger: Layer.Layer<CallLedger.CallLedger>,
  key?: Sealing.Key,
  fence: Layer.Layer<Fence.Fence> = Fence.layerAlone
) =>
  ToolsetHost.layer({ activationWait: "5 seconds", ...(key === undefined ? {} : { key }) }).pipe(
    Layer.provide([ledger, fence]),
    Layer.provideMerge(TestRunner.layer)
  )

const journal = () => NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cluster-")), "journal")

const readyBoard = (registry: ToolsetRegistry.Registry) =>
  registry.status.pipe(
    Stream.filter((board) => board.length > 0 && board.every((s) => s.state === "Ready")),
    Stream.runHead
  )

describe("toolsets hosted as cluster entities (in-process test runner)", () => {
  it.live("a toolset starts on a runner, serves calls through the registry and stops for good", () =>
    Effect.gen(function* () {
      const file = journal()
      // What the entry reads at the server's start travels with it and is read on the runner.
      const envFile = NodePath.join(NodePath.dirname(file), ".env")
      NodeFs.writeFileSync(envFile, "GREETING=from the env file\n")
      const registry = yield* ClusterRegistry.make(
        config([journalEntry("notes", { env: { JOURNAL_FILE: file }, envFile })])
      )
      yield* registry.start
      yield* readyBoard(registry)
      const [status] = yield* registry.snapshot
      assert.strictEqual(status?.state, "Ready")
      assert.strictEqual(status?.kind, "mcp-stdio")
      const pid = status?.pid ?? 0
      assert.isTrue(ServerProcess.isAlive(pid))
      // The server carries the runner's mark, which the orphan sweep looks for.
      const environ = NodeFs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
      assert.isTrue(environ.some((e) => e.startsWith(`${Orphans.envKey}=`)))
      assert.include(environ, "GREETING=from the env file")

      const echoed = yield* registry.callTool("notes_echo", { message: "hi" })
      assert.deepStrictEqual(echoed.content, [{ type: "text", text: "hi" }])
      yield* registry.callTool("notes_append", { line: "one" })
      assert.strictEqual(NodeFs.readFileSync(file, "utf8"), "one\n")
      const catalog = yield* registry.catalog()
      assert.deepStrictEqual(catalog.tools.map((t) => t.name).sort(), [
        "notes_append",
        "notes_echo",
        "notes_echo_unmarked",
        "notes_pid"
      ])

      yield* registry.stopToolset("notes")
      yield* registry.status.pipe(
        Stream.filter((board) => board[0]?.state === "Stopped"),
        Stream.runHead
      )
      assert.isFalse(ServerProcess.isAlive(pid))
    }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory)))
  )

  it.live("a server whose shard this runner cannot confirm is killed when its entity closes, not asked to finish", () =>
    Effect.gen(function* () {
      // As after a store restart dropped the shard's lock: nobody holds it, and another runner may take it.
      const unconfirmed = Layer.succeed(Fence.Fence, {
        ...Fence.alone,
        release: (_shard, _stop, halt) => halt({ _tag: "Unowned" })
      })
      // A server that ignores stdin's end and SIGTERM: asked to finish, it takes both graces (4 s).
      const entry = journalEntry("notes", { env: { JOURNAL_FILE: journal(), IGNORE_EOF: "1" } })
      const { pid, closing } = yield* Effect.gen(function* () {
        const registry = yield* ClusterRegistry.make(config([entry]))
        yield* registry.start
        return { pid: (yield* registry.snapshot)[0]?.pid ?? 0, closing: Date.now() }
      }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory, undefined, unconfirmed)))
      // The runner (here the in-process one) closes its entities as it goes: the server is gone by then.
      assert.isAbove(pid, 0)
      assert.isFalse(ServerProcess.isAlive(pid))
      assert.isBelow(Date.now() - closing, 1500, "the server was asked to finish")
    })
  )

  it.live("a call re-delivered after its runner died is refused unless the tool is safe to repeat", () =>
    Effect.gen(function* () {
      const file = journal()
      const registry = yield* ClusterRegistry.make(config([journalEntry("notes", { env: { JOURNAL_FILE: file } })]))
      yield* registry.start
      const refused = yield* Effect.flip(registry.callTool("notes_append", { line: "twice?" }))
      assert.strictEqual(refused._tag, "CallOutcomeUnknown")
      assert.include(refused.message, "10.0.0.9:34431")
      assert.isFalse(NodeFs.existsSync(file))
      // Read-only tools skip the ledger: repeating them is harmless.
      const echoed = yield* registry.callTool("notes_echo", { message: "again" })
      assert.deepStrictEqual(echoed.content, [{ type: "text", text: "again" }])
      yield* registry.stopToolset("notes")
    }).pipe(Effect.scoped, Effect.provide(cluster(replayedLedger)))
  )

  it.live("a call cut short after it reached the server may have run; a call to a stopped toolset did not run", () =>
    Effect.gen(function* () {
      const file = journal()
      const registry = yield* ClusterRegistry.make(config([journalEntry("notes", { env: { JOURNAL_FILE: file } })]))
      yield* registry.start
      // The server journals the call at once, then takes 3 s to answer; the toolset is stopped meanwhile.
      const inFlight = yield* registry
        .callTool("notes_append", { line: "cut short", ms: 3000 })
        .pipe(Effect.flip, Effect.forkChild({ startImmediately: true }))
      yield* Effect.sync(() => NodeFs.existsSync(file)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (written) => written })
      )
      yield* registry.stopToolset("notes")
      const cut = yield* Fiber.join(inFlight)
      assert.strictEqual(cut._tag, "CallOutcomeUnknown")
      assert.strictEqual(CallOutcome.outcome(cut), "MayHaveRun")
      assert.strictEqual(NodeFs.readFileSync(file, "utf8"), "cut short\n")

      const refused = yield* Effect.flip(registry.callTool("notes_append", { line: "never" }))
      assert.strictEqual(CallOutcome.outcome(refused), "NotRun", `${refused._tag}: ${refused.message}`)
      assert.strictEqual(NodeFs.readFileSync(file, "utf8"), "cut short\n")
    }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory)))
  )

  it.live(
    "a fresh activation answers calls once its start request arrives, and fails them in bounded time if none does",
    () =>
      Effect.gen(function* () {
        const entry = journalEntry("late")
        const registry = yield* ClusterRegistry.make(config([entry]))
        // No start yet: the entity has no spec, so a call waits for one, then fails with NotStarted.
        const failed = yield* Effect.flip(registry.callTool("late_echo", { message: "x" }))
        assert.strictEqual(failed._tag, "UnknownTool")
        yield* registry.start
        const echoed = yield* registry.callTool("late_echo", { message: "x" })
        assert.deepStrictEqual(echoed.content, [{ type: "text", text: "x" }])
        yield* registry.stopToolset("late")
      }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory)))
  )

  it.live("a language server runs as an entity too, with its tools filtered by what it advertises", () =>
    Effect.gen(function* () {
      const registry = yield* ClusterRegistry.make(config([tsEntry()]))
      yield* registry.start
      const [status] = yield* registry.snapshot
      assert.strictEqual(status?.kind, "lsp")
      assert.strictEqual(status?.state, "Ready")
      const hover = yield* registry.callTool("lsp_hover", { file: "src/math.ts", line: 2, character: 17 })
      assert.include(JSON.stringify(hover.content), "add(a: number, b: number): number")
      const names = (yield* registry.catalog()).tools.map((t) => t.name)
      assert.include(names, "lsp_definition")
      yield* registry.stopToolset("typescript")
      assert.isFalse(ServerProcess.isAlive(status?.pid ?? 0))
    }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory)))
  )

  it.live("closing a client lets go of its toolsets without stopping them; another client finds them running", () =>
    Effect.gen(function* () {
      const entry = journalEntry("shared")
      const first = yield* Effect.scoped(
        Effect.gen(function* () {
          const registry = yield* ClusterRegistry.make(config([entry]))
          yield* registry.start
          return (yield* registry.snapshot)[0]?.pid ?? 0
        })
      )
      assert.isTrue(ServerProcess.isAlive(first))
      const registry = yield* ClusterRegistry.make(config([entry]))
      const board = yield* readyBoard(registry)
      assert.strictEqual(board._tag === "Some" ? board.value[0]?.pid : undefined, first)
      yield* registry.stopToolset("shared")
    }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory)))
  )

  it("what a runner builds from the wire is the whole entry: env file, headers helper, workspace reach, log level", () => {
    const wire = (entry: AgentConfig.ToolsetConfig) => {
      const sent = Schema.decodeUnknownSync(ToolsetEntity.Spec)(
        JSON.parse(JSON.stringify(Schema.encodeSync(ToolsetEntity.Spec)(ToolsetEntity.toSpec(entry))))
      )
      const opened = ToolsetEntity.open(sent, undefined)
      if (typeof opened === "string") throw new Error(opened)
      return ToolsetEntity.buildable(opened, {})
    }
    const local = { ...journalEntry("local", { envFile: "/srv/app/.env" }), logLevel: "warning" as const }
    const built = wire(local)
    assert.strictEqual(built.transport._tag === "stdio" ? built.transport.envFile : undefined, "/srv/app/.env")
    assert.strictEqual(built.logLevel, "warning")
    const remote = {
      ...journalEntry("remote"),
      transport: {
        _tag: "http" as const,
        url: "https://tracker.example/mcp",
        headers: {},
        headersHelper: { command: "print-headers", cwd: "/srv/config" }
      }
    }
    assert.deepStrictEqual(wire(remote).transport, remote.transport)
    const lsp = { ...tsEntry(), allowOutsideWorkspace: ["/srv/shared"] }
    assert.deepStrictEqual(wire(lsp).allowOutsideWorkspace, ["/srv/shared"])
    assert.strictEqual(wire({ ...tsEntry(), allowOutsideWorkspace: true }).allowOutsideWorkspace, true)
    assert.isUndefined(wire(tsEntry()).allowOutsideWorkspace)
  })

  describe("with a cluster key", () => {
    const token = "tok-9f8e7d6c5b4a"
    const sealedEntry = (file: string) => ({
      ...journalEntry("vault", { env: { JOURNAL_FILE: file, API_TOKEN: token }, lifecycle: { required: true } }),
      secrets: [token]
    })

    it("the persisted spec holds no secret, and opens only with the same key", () => {
      const spec = ToolsetEntity.toSpec(sealedEntry("/tmp/x"), Sealing.key("right"))
      assert.notInclude(JSON.stringify(spec), token)
      assert.strictEqual(spec.transport._tag, "sealed")
      const opened = ToolsetEntity.open(spec, Sealing.key("right"))
      assert.isTrue(typeof opened !== "string" && JSON.stringify(opened).includes(token))
      assert.include(ToolsetEntity.open(spec, Sealing.key("wrong")), "sealed with another cluster key")
      assert.include(ToolsetEntity.open(spec, undefined), Sealing.envKey)
    })

    it("the persisted signature and entity id confirm no guess of the secrets: keyed, the same under the same key", () => {
      const entry = sealedEntry("/tmp/x")
      const spec = ToolsetEntity.toSpec(entry, Sealing.key("right"))
      // The plain signature is what anyone can compute from a config and a guessed secret.
      assert.notInclude(JSON.stringify(spec), entry.signature.slice(0, 16))
      assert.notInclude(ToolsetEntity.entityId(spec), entry.signature.slice(0, 16))
      assert.strictEqual(ToolsetEntity.toSpec(entry, Sealing.key("right")).signature, spec.signature)
      assert.notStrictEqual(ToolsetEntity.toSpec(entry, Sealing.key("other")).signature, spec.signature)
    })

    it("a remote toolset's oauth block travels sealed with its transport; its client secret never in the clear", () => {
      const secret = "cs-5e4d3c2b1a"
      const remote = {
        ...journalEntry("tracker"),
        transport: {
          _tag: "http" as const,
          url: "https://tracker.example/mcp",
          headers: {},
          oauth: { clientId: "machine", clientSecret: secret, scopes: ["read"] },
          headersHelper: { command: "print-headers", cwd: "/srv/config" }
        },
        secrets: [secret]
      }
      const spec = ToolsetEntity.toSpec(remote, Sealing.key("right"))
      assert.notInclude(JSON.stringify(spec), secret)
      const opened = ToolsetEntity.open(spec, Sealing.key("right"))
      assert.deepStrictEqual(typeof opened === "string" ? opened : opened.transport, remote.transport)
    })

    it.live("a runner with the key runs the sealed toolset with its secrets", () =>
      Effect.gen(function* () {
        const file = journal()
        const registry = yield* ClusterRegistry.make(config([sealedEntry(file)]), { key: Sealing.key("right") })
        yield* registry.start
        yield* registry.callTool("vault_append", { line: "sealed" })
        assert.strictEqual(NodeFs.readFileSync(file, "utf8"), "sealed\n")
        const [status] = yield* registry.snapshot
        const environ = NodeFs.readFileSync(`/proc/${status?.pid}/environ`, "utf8")
        assert.include(environ, `API_TOKEN=${token}`)
        yield* registry.stopToolset("vault")
      }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory, Sealing.key("right"))))
    )

    it.live("a runner with another key refuses to start it, saying why", () =>
      Effect.gen(function* () {
        const registry = yield* ClusterRegistry.make(config([sealedEntry(journal())]), { key: Sealing.key("right") })
        const failed = yield* Effect.flip(registry.start)
        assert.strictEqual(failed.failures[0]?.tag, "ServerUnavailable")
        assert.include(failed.message, "sealed with another cluster key")
        assert.notInclude(failed.message, token)
      }).pipe(Effect.scoped, Effect.provide(cluster(CallLedger.layerMemory, Sealing.key("wrong"))))
    )
  })
})
