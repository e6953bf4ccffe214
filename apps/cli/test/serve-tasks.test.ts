/**
 * `toolvisor serve` serving MCP tasks (2025-11-25) itself: the installed CLI in front of
 * server-everything (`ev`, over stdio; its `simulate-research-query` requires a task) and of the
 * task fixture server, real SDK clients over streamable HTTP and stdio. A `tools/call` with a
 * `task` is answered with the task, which runs on the backend; `tasks/*` see only the session's own
 * tasks; a task whose backend is SIGKILLed fails at once, its status the typed error; closing the
 * session cancels its tasks on the backend; a session keeps a bounded number of tasks.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, type Task } from "@modelcontextprotocol/sdk/types.js"
import * as Procfs from "@toolvisor/core/internal/procfs"
import * as Predicate from "effect/Predicate"
import {
  allReady,
  cliArgs,
  closeAll,
  errorCode,
  everythingEntry,
  freePort,
  root,
  Session,
  until,
  writeConfig,
  yaml
} from "./helpers.ts"

const taskServer = NodePath.join(root, "test/support/task-server.mjs")

/** The task fixture over stdio, as a toolset `tk`, logging its task events to `log`. */
const taskServerEntry = (log: string) => [
  "      - type: mcp",
  "        name: tk",
  `        command: "${process.execPath}"`,
  `        args: ["${taskServer}", "stdio"]`,
  "        env:",
  `          TASKS_LOG: "${log}"`
]

const gateways: Array<Session> = []
const clients: Array<Client> = []

afterEach(() => closeAll(clients, gateways))

const serveHttp = async (configFile: string) => {
  const port = await freePort()
  const gateway = new Session(["serve", configFile, "--http", String(port)])
  gateways.push(gateway)
  const base = `http://127.0.0.1:${port}`
  await until(allReady(base, 1), 60_000)
  return { base, pid: gateway.child.pid ?? 0 }
}

const connect = async (transport: Transport) => {
  const client = new Client({ name: "tasks-test", version: "1.0.0" })
  await client.connect(transport)
  clients.push(client)
  return client
}

const http = (base: string) => connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))

/** `tools/call` as a task: the gateway's CreateTaskResult. */
const callAsTask = (client: Client, name: string, args: { readonly [key: string]: unknown }) =>
  client.request({ method: "tools/call", params: { name, arguments: { ...args } } }, CreateTaskResultSchema, {
    task: {}
  })

/** Polls the task until `p` holds for it. */
const untilTask = async (client: Client, taskId: string, p: (task: Task) => boolean, within = 30_000) => {
  let last: Task | undefined
  await until(async () => {
    last = await client.experimental.tasks.getTask(taskId)
    return p(last)
  }, within)
  if (last === undefined) throw new Error("no task")
  return last
}

/** The server-everything process the gateway `pid` runs. */
const backendOf = (pid: number) =>
  Procfs.pids().find(
    (child) =>
      Procfs.stat(child)?.ppid === pid &&
      NodeFs.readFileSync(`/proc/${child}/cmdline`, "utf8").includes("server-everything")
  ) ?? 0

/** The text of a tool result's content. */
const textOf = (result: unknown) =>
  Predicate.hasProperty(result, "content") && Array.isArray(result.content)
    ? result.content.map((c: unknown) => (Predicate.hasProperty(c, "text") ? String(c.text) : "")).join("")
    : ""

describe("serve: MCP tasks", () => {
  it("HTTP: a task call runs as this session's task, polled to its result; another session cannot see, read or cancel it", async () => {
    const { base } = await serveHttp(writeConfig(yaml([everythingEntry()])))
    const a = await http(base)
    const b = await http(base)
    assert.deepStrictEqual(a.getServerCapabilities()?.tasks?.requests?.tools?.call, {})
    const { task } = await callAsTask(a, "ev_simulate-research-query", { topic: "otters" })
    assert.strictEqual(task.status, "working")

    // Not b's: unknown to it (invalid params, as the spec has it), and not in its list.
    const foreign = b.experimental.tasks
    assert.strictEqual(await errorCode(foreign.getTask(task.taskId)), ErrorCode.InvalidParams)
    assert.strictEqual(await errorCode(foreign.cancelTask(task.taskId)), ErrorCode.InvalidParams)
    assert.strictEqual(
      await errorCode(b.request({ method: "tasks/result", params: { taskId: task.taskId } }, CallToolResultSchema)),
      ErrorCode.InvalidParams
    )
    assert.deepStrictEqual((await foreign.listTasks()).tasks, [])

    const done = await untilTask(a, task.taskId, (t) => t.status !== "working")
    assert.strictEqual(done.status, "completed")
    const result = await a.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    assert.include(textOf(result), "# Research Report: otters")
    assert.deepStrictEqual(
      (await a.experimental.tasks.listTasks()).tasks.map((t) => [t.taskId, t.status]),
      [[task.taskId, "completed"]]
    )
    // A tool that lists no taskSupport cannot run as a task; one that requires it still answers a plain call.
    assert.strictEqual(await errorCode(callAsTask(a, "ev_echo", { message: "hi" })), ErrorCode.MethodNotFound)
    const plain = await a.callTool({ name: "ev_simulate-research-query", arguments: { topic: "seals" } })
    assert.include(textOf(plain), "# Research Report: seals")
  }, 120_000)

  it("stdio: a task is cancelled on request; a task whose backend is SIGKILLed fails at once with the typed error", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(["serve", writeConfig(yaml([everythingEntry()]))]),
      cwd: root,
      stderr: "ignore"
    })
    const client = await connect(transport)
    const first = await callAsTask(client, "ev_simulate-research-query", { topic: "otters" })
    const cancelled = await client.experimental.tasks.cancelTask(first.task.taskId)
    assert.strictEqual(cancelled.status, "cancelled")

    const { task } = await callAsTask(client, "ev_simulate-research-query", { topic: "seals" })
    const backend = backendOf(transport.pid ?? 0)
    assert.isAbove(backend, 0)
    const killedAt = Date.now()
    process.kill(backend, "SIGKILL")
    const failed = await untilTask(client, task.taskId, (t) => t.status !== "working")
    assert.strictEqual(failed.status, "failed")
    assert.match(failed.statusMessage ?? "", /^ServerCrashed: /)
    assert.isBelow(Date.now() - killedAt, 5_000, "failed within a poll of the death, never hung")
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    assert.isTrue(result.isError)
  }, 120_000)

  it("HTTP: closing the session cancels its running tasks on the backend; a session keeps a bounded number of tasks", async () => {
    const log = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-tasks-")), "tasks.log")
    const { base } = await serveHttp(writeConfig(yaml([taskServerEntry(log)])))
    const events = () =>
      NodeFs.existsSync(log)
        ? NodeFs.readFileSync(log, "utf8")
            .split("\n")
            .filter((l) => l !== "")
        : []

    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`))
    const client = await connect(transport)
    const running = await Promise.all(
      Array.from({ length: 32 }, (_, i) => callAsTask(client, "tk_slow", { ms: 600_000, label: `t${i}` }))
    )
    assert.strictEqual(new Set(running.map((r) => r.task.taskId)).size, 32)
    // The 33rd is refused while every one of them runs.
    assert.strictEqual(
      await errorCode(callAsTask(client, "tk_slow", { ms: 1, label: "over" })),
      ErrorCode.InvalidRequest
    )
    await until(() => events().filter((e) => e.startsWith("created ")).length === 32, 30_000)

    // DELETE: the session ends, and with it every task it started, on the backend too.
    await transport.terminateSession()
    await until(() => events().filter((e) => e.startsWith("cancelled ")).length === 32, 30_000)
    assert.strictEqual(events().filter((e) => e.startsWith("completed ")).length, 0)
  }, 120_000)
})
