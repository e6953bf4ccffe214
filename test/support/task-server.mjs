// An MCP server whose tasks outlive the session that created them, as a server backed by a job
// queue keeps them: one task store for every session, each task found by its id alone. Its tool
// `slow` must run as a task (`execution.taskSupport: "required"`) and completes `ms` after it is
// created. Over stdio (`task-server.mjs stdio`) or streamable HTTP (`task-server.mjs http`, on
// PORT, endpoint /mcp). `POST /drop` ends every HTTP session, as a server that lost its session
// table does, and keeps the tasks: a request with an old session id then answers 404. Environment:
//   TASKS_LOG  append "<event> <taskId>" there as a task is created, completed or cancelled
import { appendFileSync } from "node:fs"
import { createServer } from "node:http"
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { z } from "zod"

const log = (event, taskId) => {
  if (process.env.TASKS_LOG) appendFileSync(process.env.TASKS_LOG, `${event} ${taskId}\n`)
}

/** Tasks bound to no session: any session that knows the id finds the task. */
class SharedTaskStore extends InMemoryTaskStore {
  createTask(params, requestId, request) {
    return super.createTask(params, requestId, request, undefined)
  }
  async updateTaskStatus(taskId, status, message, sessionId) {
    await super.updateTaskStatus(taskId, status, message, sessionId)
    if (status === "cancelled") log("cancelled", taskId)
  }
}

const store = new SharedTaskStore()

const makeServer = () => {
  const server = new McpServer(
    { name: "task-server", version: "1.0.0" },
    { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore: store }
  )
  server.experimental.tasks.registerToolTask(
    "slow",
    {
      description: "Completes as a task `ms` milliseconds after it is created",
      inputSchema: { ms: z.number(), label: z.string() },
      execution: { taskSupport: "required" }
    },
    {
      createTask: async ({ ms, label }, extra) => {
        const task = await extra.taskStore.createTask({ ttl: 300_000, pollInterval: 200 })
        log("created", task.taskId)
        setTimeout(() => {
          store
            .storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: `done: ${label}` }] })
            .then(() => log("completed", task.taskId))
            .catch(() => undefined)
        }, ms)
        return { task }
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId)
    }
  )
  return server
}

if (process.argv[2] === "http") {
  const sessions = new Map()
  const readBody = async (req) => {
    let text = ""
    for await (const chunk of req) text += chunk
    return text === "" ? undefined : JSON.parse(text)
  }
  const http = createServer(async (req, res) => {
    if (req.url === "/drop") {
      const dropped = [...sessions.values()]
      sessions.clear()
      await Promise.all(dropped.map((transport) => transport.close()))
      res.writeHead(200).end(String(dropped.length))
      return
    }
    const body = req.method === "POST" ? await readBody(req) : undefined
    const id = req.headers["mcp-session-id"]
    let transport = typeof id === "string" ? sessions.get(id) : undefined
    if (transport === undefined && id === undefined && body?.method === "initialize") {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport)
      })
      await makeServer().connect(transport)
    }
    if (transport === undefined) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }))
      return
    }
    await transport.handleRequest(req, res, body)
  })
  http.listen(Number(process.env.PORT ?? 0), "127.0.0.1")
} else {
  await makeServer().connect(new StdioServerTransport())
}
