/**
 * The CLI as a cluster client: `status`, `tools`, `call` and `serve` with `--cluster`, against
 * one real runner process and a real PostgreSQL server; and the runner's own bad input.
 */
import * as ChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ServerProcess } from "@toolvisor/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Orphans from "../src/internal/orphans.ts"
import { journalServer } from "./helpers.ts"
import * as Postgres from "./Postgres.ts"
import { cli, clientTimerFlags, settingsFile, startRunners } from "./Runners.ts"

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const runCli = (args: ReadonlyArray<string>) =>
  Effect.promise(
    () =>
      new Promise<Finished>((resolve) => {
        const child = ChildProcess.spawn(process.execPath, [cli, ...args], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
        child.on("close", (code) => resolve({ code, stdout, stderr }))
      })
  )

/** `status --json` through the cluster on the runner's timers, patient with a loaded machine. */
const statusJson = (postgres: string, config: string, settings: string) =>
  runCli(["status", config, "--json", "--cluster", postgres, "--cluster-settings", settings, "--timeout", "60s"])

class Setup extends Context.Service<
  Setup,
  { readonly postgres: string; readonly config: string; readonly journal: string; readonly settings: string }
>()("test/Setup") {}

/** `run --json` through the cluster on the runner's timers, its stdio piped. */
const runJson = Effect.map(Effect.service(Setup), ({ postgres, config, settings }) =>
  ChildProcess.spawn(
    process.execPath,
    [cli, "run", config, "--json", "--cluster", postgres, "--cluster-settings", settings],
    {
      stdio: ["pipe", "pipe", "pipe"]
    }
  )
)

const setup = Layer.effect(
  Setup,
  Effect.gen(function* () {
    const { url } = yield* Postgres.Postgres
    yield* startRunners(url, [24471])
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-cluster-cli-"))
    const journal = NodePath.join(dir, "journal")
    const config = NodePath.join(dir, "agent.yaml")
    NodeFs.writeFileSync(
      config,
      [
        "agents:",
        "  root:",
        "    toolsets:",
        "      - type: mcp",
        "        name: notes",
        `        command: "${process.execPath}"`,
        `        args: ["${journalServer}"]`,
        `        env: { JOURNAL_FILE: "${journal}" }`
      ].join("\n")
    )
    return { postgres: url, config, journal, settings: settingsFile(dir) }
  })
).pipe(Layer.provide(Postgres.layer))

describe("the CLI as a cluster client", () => {
  layer(setup, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.effect("status and tools report the toolsets the runner hosts; the server is the runner's, not the CLI's", () =>
      Effect.gen(function* () {
        const { postgres, config, settings } = yield* Setup
        const status = yield* statusJson(postgres, config, settings)
        assert.strictEqual(status.code, 0, status.stderr)
        const [notes] = JSON.parse(status.stdout) as ReadonlyArray<{ state: string; pid: number }>
        assert.strictEqual(notes?.state, "Ready")
        // The CLI has exited; the server lives on under the runner, marked as its own.
        const environ = NodeFs.readFileSync(`/proc/${notes?.pid}/environ`, "utf8")
        assert.include(environ.split("\0"), `${Orphans.envKey}=127.0.0.1:24471`)
        const tools = yield* runCli(["tools", config, "--json", "--cluster", postgres, "--cluster-settings", settings])
        assert.strictEqual(tools.code, 0, tools.stderr)
        const names = (JSON.parse(tools.stdout) as { tools: ReadonlyArray<{ name: string }> }).tools.map((t) => t.name)
        assert.deepStrictEqual(names.sort(), ["notes_append", "notes_echo", "notes_echo_unmarked", "notes_pid"])
      })
    )

    it.effect("call runs the tool on the runner", () =>
      Effect.gen(function* () {
        const { postgres, config, journal, settings } = yield* Setup
        const called = yield* runCli([
          "call",
          config,
          "notes_append",
          '{"line":"from the cli"}',
          "--cluster",
          postgres,
          "--cluster-settings",
          settings
        ])
        assert.strictEqual(called.code, 0, called.stderr)
        assert.include(called.stdout, "appended from the cli")
        assert.strictEqual(NodeFs.readFileSync(journal, "utf8"), "from the cli\n")
      })
    )

    it.effect("serve fronts the cluster's toolsets as one MCP server", () =>
      Effect.gen(function* () {
        const { postgres, config, settings } = yield* Setup
        const client = new Client({ name: "test", version: "1.0.0" })
        yield* Effect.promise(() =>
          client.connect(
            new StdioClientTransport({
              command: process.execPath,
              args: [cli, "serve", config, "--cluster", postgres, "--cluster-settings", settings],
              stderr: "ignore"
            })
          )
        )
        const result = yield* Effect.promise(async () => {
          // The gateway lists what the cluster reports; wait for the toolset to be in it.
          for (let i = 0; i < 200; i++) {
            const { tools } = await client.listTools()
            if (tools.some((t) => t.name === "notes_echo")) break
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          return client.callTool({ name: "notes_echo", arguments: { message: "through the gateway" } })
        })
        yield* Effect.promise(() => client.close())
        assert.deepStrictEqual(result.content, [{ type: "text", text: "through the gateway" }])
      })
    )

    it.effect("run --json follows the cluster's toolsets and exits 0 on SIGTERM, leaving them running", () =>
      Effect.gen(function* () {
        const child = yield* runJson
        const ready = yield* Effect.promise(
          () =>
            new Promise<{ pid: number }>((resolve) => {
              let buffered = ""
              child.stdout.on("data", (chunk: Buffer) => {
                buffered += chunk.toString()
                const line = buffered
                  .split("\n")
                  .map((l) =>
                    l.startsWith("{") ? (JSON.parse(l) as { type: string; state?: string; pid: number }) : undefined
                  )
                  .find((l) => l?.type === "status" && l.state === "Ready")
                if (line !== undefined) resolve(line)
              })
            })
        )
        const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
        child.kill("SIGTERM")
        assert.strictEqual(yield* Effect.promise(() => exited), 0)
        // The toolset belongs to the cluster: a client going away does not stop it.
        assert.isTrue(ServerProcess.isAlive(ready.pid))
      })
    )

    it.effect(
      "run --json answers what it is sent as it starts once the cluster's toolsets are known, as a local run does",
      () =>
        Effect.gen(function* () {
          const child = yield* runJson
          // Sent before anything is known of the toolset, which is Ready on its runner (the tests before started it).
          child.stdin.write(`${JSON.stringify({ cmd: "call", id: "c", tool: "notes_pid" })}\n`)
          const answer = yield* Effect.promise(
            () =>
              new Promise<{ type: string; tag?: string; message?: string }>((resolve) => {
                let buffered = ""
                child.stdout.on("data", (chunk: Buffer) => {
                  buffered += chunk.toString()
                  const found = buffered
                    .split("\n")
                    .filter((l) => l.startsWith("{"))
                    .map((l) => JSON.parse(l) as { type: string; id?: string })
                    .find((l) => l.id === "c")
                  if (found !== undefined) resolve(found)
                })
              })
          )
          const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
          child.stdin.end()
          assert.strictEqual(answer.type, "result", JSON.stringify(answer))
          assert.strictEqual(yield* Effect.promise(() => exited), 0)
        })
    )

    it.effect(
      "clients and runners share one settings source; a member whose timers differ is refused, saying how",
      () =>
        Effect.gen(function* () {
          const { postgres, config, settings } = yield* Setup
          // On the defaults (a 10 s lease), against a runner on a 4 s lease.
          const defaults = yield* runCli(["status", config, "--json", "--cluster", postgres, "--timeout", "20s"])
          assert.strictEqual(defaults.code, 1)
          assert.include(defaults.stderr, "SettingsMismatch")
          assert.include(defaults.stderr, "--lease 10s here, 4s on runner 127.0.0.1:24471")
          assert.notInclude(defaults.stderr, "    at ")
          // The same timers as flags agree as well as the file does.
          const flags = yield* runCli(["tools", config, "--json", "--cluster", postgres, ...clientTimerFlags])
          assert.strictEqual(flags.code, 0, flags.stderr)
          // A flag wins over the file; a second runner on other timers does not join.
          const other = yield* runCli([
            "runner",
            "--postgres",
            postgres,
            "--port",
            "24478",
            "--cluster-settings",
            settings,
            "--lease",
            "6s"
          ])
          assert.strictEqual(other.code, 1)
          assert.include(other.stderr, "--lease 6s here, 4s on runner 127.0.0.1:24471")
          // The file is checked like any config: unknown keys and broken rules are named.
          const dir = NodePath.dirname(settings)
          const typo = NodePath.join(dir, "typo.yaml")
          NodeFs.writeFileSync(typo, "cluster:\n  lease: 4s\n  lease_refesh: 1s\n")
          const misspelt = yield* runCli(["tools", config, "--cluster", postgres, "--cluster-settings", typo])
          assert.strictEqual(misspelt.code, 2)
          assert.include(misspelt.stderr, "did you mean `lease_refresh`?")
          const slow = yield* runCli(["tools", config, "--cluster", postgres, "--lease", "4s", "--lease-refresh", "3s"])
          assert.strictEqual(slow.code, 2)
          assert.include(slow.stderr, "must be at most half the lease (4s)")
        })
    )

    it.effect("bad runner input is a clear one-line error, not a stack trace", () =>
      Effect.gen(function* () {
        const lease = yield* runCli(["runner", "--postgres", "postgres://x@127.0.0.1:1/x", "--lease", "soon"])
        assert.strictEqual(lease.code, 2)
        assert.include(lease.stderr, `--lease: expected a duration like 30s, got "soon"`)
        const unreachable = yield* runCli([
          "runner",
          "--postgres",
          "postgres://me:s3cret-pw@127.0.0.1:1/x",
          "--port",
          "24479"
        ])
        assert.strictEqual(unreachable.code, 1)
        assert.include(unreachable.stderr, "cannot reach the cluster's PostgreSQL at postgres://me:***@127.0.0.1:1/x")
        assert.notInclude(unreachable.stderr, "s3cret-pw")
        assert.notInclude(unreachable.stderr, "    at ")
        // What PostgreSQL says, under the driver's "Failed to connect" or "Query failed", says what to fix.
        const { postgres: url } = yield* Setup
        const missing = yield* runCli([
          "runner",
          "--postgres",
          url.replace(/\/postgres$/, "/nosuchdb"),
          "--port",
          "24479"
        ])
        assert.strictEqual(missing.code, 1)
        assert.include(missing.stderr, `PgConnection: Failed to connect: database "nosuchdb" does not exist`)
        ChildProcess.execFileSync("psql", [url, "-qc", "DROP ROLE IF EXISTS nopriv; CREATE ROLE nopriv LOGIN"])
        const unprivileged = yield* runCli([
          "runner",
          "--postgres",
          url.replace("toolvisor@", "nopriv@"),
          "--port",
          "24479"
        ])
        assert.strictEqual(unprivileged.code, 1)
        assert.include(unprivileged.stderr, "Query failed: permission denied for schema public")
        // A second runner at the address of the one this suite started, on other timers: the port is
        // taken, the running one's server is left alone, and its timers still stand for it (the
        // second's were recorded in its name, and every new member was refused for them).
        const { postgres, config, settings } = yield* Setup
        const status = yield* statusJson(postgres, config, settings)
        const [notes] = JSON.parse(status.stdout) as ReadonlyArray<{ pid: number }>
        const taken = yield* runCli(["runner", "--postgres", postgres, "--port", "24471"])
        assert.strictEqual(taken.code, 1)
        assert.include(taken.stderr, "runner cannot listen on 127.0.0.1:24471: listen EADDRINUSE")
        assert.notInclude(taken.stderr, "    at ")
        const after = yield* statusJson(postgres, config, settings)
        assert.strictEqual(after.code, 0, after.stderr)
        const onTimers = ["--cluster-settings", settings]
        // The call lane's port: one taken, one out of range.
        for (const [lanePort, why] of [
          ["24471", "listen EADDRINUSE"],
          ["70000", "options.port should be >= 0 and < 65536"]
        ] as const) {
          const lane = yield* runCli([
            "runner",
            "--postgres",
            postgres,
            "--port",
            "24477",
            "--lane-port",
            lanePort,
            ...onTimers
          ])
          assert.strictEqual(lane.code, 1)
          assert.include(lane.stderr, `runner cannot take calls on 127.0.0.1:${lanePort}: `)
          assert.include(lane.stderr, why)
          assert.notInclude(lane.stderr, "    at ")
        }
        assert.isTrue(ServerProcess.isAlive(notes?.pid ?? 0), "the running runner's server was killed")
      })
    )

    it.effect(
      "stop ends the config's toolsets on their runners, for every client; without --cluster it says why not",
      () =>
        Effect.gen(function* () {
          const { postgres, config, settings } = yield* Setup
          const local = yield* runCli(["stop", config])
          assert.strictEqual(local.code, 2)
          assert.include(local.stderr, "stop: stops toolsets a cluster runs, so it needs --cluster URL")
          const cluster = ["--cluster", postgres, "--cluster-settings", settings]
          const typo = yield* runCli(["stop", config, "nots", ...cluster])
          assert.strictEqual(typo.code, 2, typo.stderr)
          assert.include(typo.stderr, `stop: no toolset named "nots" (toolsets: notes)`)
          const [notes] = JSON.parse((yield* statusJson(postgres, config, settings)).stdout) as ReadonlyArray<{
            pid: number
          }>
          assert.isTrue(ServerProcess.isAlive(notes?.pid ?? 0))
          const stopped = yield* runCli(["stop", config, "notes", ...cluster])
          assert.strictEqual(stopped.code, 0, stopped.stderr)
          assert.strictEqual(stopped.stdout.trim(), "stopped: notes")
          // Its server is ended on the runner, not by this client, which never ran it.
          yield* Effect.sync(() => ServerProcess.isAlive(notes?.pid ?? 0)).pipe(
            Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (alive) => !alive }),
            Effect.timeout("10 seconds")
          )
        })
    )
  })
})
