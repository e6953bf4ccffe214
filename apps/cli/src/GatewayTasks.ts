/**
 * The gateway's own MCP tasks (2025-11-25), one table per client session: a client's `tools/call`
 * with a `task` param is answered at once with the task (CreateTaskResult) while the call runs in
 * the background, as a task on the backend too (`CallOptions.task`, so a lost HTTP session to the
 * backend is resumed there); `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` are the
 * SDK's handlers over this table, which also sends `notifications/tasks/status` as a task ends.
 *
 * A session sees its own tasks only: the table is the session's, so another session's task id
 * is unknown here (-32602, as the spec has it). A call whose backend died ends its task `failed`
 * at once, its status message the typed error (`ServerCrashed: …`). Closing the session (DELETE,
 * expiry, stdin closed) cancels every task still running, which cancels the backend's, and forgets
 * them all. A hostile client is bounded: at most `maxTasks` per session (the oldest ended one makes
 * room), each kept at most `maxTtl` from its creation.
 */
import { randomUUID } from "node:crypto"
import type { CreateTaskOptions, TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  type CreateTaskResult,
  ErrorCode,
  McpError,
  type Result,
  type ServerNotification,
  type ServerRequest,
  type Task
} from "@modelcontextprotocol/sdk/types.js"
import type { Toolset } from "@toolvisor/core"
import type { ToolsetRegistry } from "@toolvisor/runtime"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/** The most tasks a session keeps, running or ended. */
export const maxTasks = 32

/** The longest a task is kept from its creation (a running one is cancelled then). */
export const maxTtl = 60 * 60_000

/** How often a client is asked to poll. */
const pollInterval = 500

/** The longest status message kept from a failed call's answer. */
const maxStatusMessage = 1_000

/** The capability the gateway declares when its toolsets may run tools as tasks. */
export const capability = { list: {}, cancel: {}, requests: { tools: { call: {} } } } as const

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

interface Entry {
  readonly task: Task
  result: Result | undefined
  readonly controller: AbortController
  readonly expiry: NodeJS.Timeout
}

/** One session's tasks. */
export interface Tasks {
  /** Given to the session's `Server` (`taskStore`): what the SDK's `tasks/*` handlers read. */
  readonly store: TaskStore
  /**
   * Creates a task for the call and answers with it; `call` runs in the background, until it
   * ends or the task is cancelled (its signal aborts), and its answer becomes the task's result.
   */
  readonly start: (
    extra: Extra,
    call: (signal: AbortSignal) => Promise<Toolset.ToolResult>
  ) => Promise<CreateTaskResult>
  /** The tasks not yet ended, for tests and status. */
  readonly running: () => number
  /** The session closed: every running task is cancelled, and all are forgotten. */
  readonly close: () => void
}

const isTerminal = (status: Task["status"]) => status === "completed" || status === "failed" || status === "cancelled"

/** The first text of a failed call's answer: the typed error, as the client reads it in the status. */
const statusMessageOf = (result: Result): string | undefined => {
  const content = Predicate.hasProperty(result, "content") && Array.isArray(result.content) ? result.content : []
  const first: unknown = content[0]
  return Predicate.hasProperty(first, "text") && Predicate.isString(first.text)
    ? first.text.slice(0, maxStatusMessage)
    : undefined
}

const notFound = (taskId: string) => new Error(`Task ${taskId.slice(0, 100)} not found`)

/** A failure of the call that is not an answer (invalid params, a defect), as the task's result. */
const errorResult = (cause: unknown): Toolset.ToolResult => ({
  content: [{ type: "text", text: cause instanceof Error ? cause.message : String(cause) }],
  isError: true
})

/** A session's table of tasks, empty until its client asks for one. */
export const make = (): Tasks => {
  const entries = new Map<string, Entry>()

  const forget = (taskId: string) => {
    const entry = entries.get(taskId)
    if (entry === undefined) return
    clearTimeout(entry.expiry)
    entry.controller.abort(new Error(`task ${taskId} ended`))
    entries.delete(taskId)
  }

  /** Room for one more: the oldest ended task goes; when every task still runs, the client is refused. */
  const makeRoom = () => {
    if (entries.size < maxTasks) return
    for (const [taskId, entry] of entries) {
      if (isTerminal(entry.task.status)) return forget(taskId)
    }
    throw new McpError(
      ErrorCode.InvalidRequest,
      `this session has ${maxTasks} tasks running, the most it may have: wait for one to end or cancel one`
    )
  }

  const live = (taskId: string) => {
    const entry = entries.get(taskId)
    if (entry === undefined) throw notFound(taskId)
    if (isTerminal(entry.task.status)) {
      throw new Error(`task ${taskId} has ended (${entry.task.status}); its status cannot change`)
    }
    return entry
  }

  const touch = (task: Task, status: Task["status"], statusMessage: string | undefined) => {
    Object.assign(task, {
      status,
      lastUpdatedAt: new Date().toISOString(),
      ...(statusMessage === undefined ? {} : { statusMessage })
    })
  }

  const store: TaskStore = {
    createTask: async (params: CreateTaskOptions) => {
      makeRoom()
      const ttl = Math.min(params.ttl ?? maxTtl, maxTtl)
      const now = new Date().toISOString()
      const task: Task = {
        taskId: randomUUID(),
        status: "working",
        ttl,
        createdAt: now,
        lastUpdatedAt: now,
        pollInterval
      }
      const expiry = setTimeout(() => forget(task.taskId), ttl)
      expiry.unref()
      entries.set(task.taskId, { task, result: undefined, controller: new AbortController(), expiry })
      return { ...task }
    },
    getTask: async (taskId) => {
      const entry = entries.get(taskId)
      return entry === undefined ? null : { ...entry.task }
    },
    storeTaskResult: async (taskId, status, result) => {
      const entry = live(taskId)
      entry.result = result
      touch(entry.task, status, status === "failed" ? statusMessageOf(result) : undefined)
    },
    getTaskResult: async (taskId) => {
      const result = entries.get(taskId)?.result
      if (result === undefined) throw notFound(taskId)
      return result
    },
    updateTaskStatus: async (taskId, status, statusMessage) => {
      const entry = live(taskId)
      touch(entry.task, status, statusMessage)
      // Cancelled by the client: the call stops, and its backend task is cancelled with it.
      if (status === "cancelled") entry.controller.abort(new Error(`task ${taskId} was cancelled`))
    },
    listTasks: async (cursor) => {
      // A session keeps at most `maxTasks`: one page holds them all, so no cursor is ever issued.
      if (cursor !== undefined) throw new Error(`Invalid cursor: ${cursor.slice(0, 100)}`)
      return { tasks: [...entries.values()].map((entry) => ({ ...entry.task })) }
    }
  }

  const start = async (extra: Extra, call: (signal: AbortSignal) => Promise<Toolset.ToolResult>) => {
    const taskStore = extra.taskStore
    if (taskStore === undefined) throw new McpError(ErrorCode.InternalError, "the session has no task store")
    const task = await taskStore.createTask({ ttl: extra.taskRequestedTtl ?? null })
    const entry = entries.get(task.taskId)
    if (entry === undefined) throw notFound(task.taskId)
    // The request-scoped store also tells the client (notifications/tasks/status). A task that
    // was cancelled, or a session that closed, meanwhile refuses the result: nothing to tell.
    call(entry.controller.signal)
      .catch(errorResult)
      .then((result) =>
        taskStore.storeTaskResult(task.taskId, result.isError === true ? "failed" : "completed", { ...result })
      )
      .catch(() => undefined)
    return { task }
  }

  return {
    store,
    start,
    running: () => [...entries.values()].filter((entry) => !isTerminal(entry.task.status)).length,
    close: () => {
      for (const taskId of [...entries.keys()]) forget(taskId)
    }
  }
}

/**
 * Whether a client may call `name` as a task: the tool's listing says `taskSupport` `optional` or
 * `required`. Otherwise -32601, as the spec has it; a tool no toolset offers is invalid params —
 * once every toolset has listed its tools (while some are down the call runs, and its task says why).
 */
export const admit = (
  registry: ToolsetRegistry.Registry,
  agent: string | undefined,
  name: string,
  own: boolean
): Effect.Effect<void, McpError> =>
  Effect.gen(function* () {
    const catalog = yield* Effect.option(registry.catalog(agent))
    const entry = catalog._tag === "Some" ? catalog.value.tools.find((t) => t.name === name) : undefined
    const support = entry === undefined ? undefined : supportOf(entry.tool)
    if (support === "optional" || support === "required") return
    if (entry !== undefined || own) {
      return yield* Effect.fail(
        new McpError(
          ErrorCode.MethodNotFound,
          `${name.slice(0, 200)} cannot run as a task (its taskSupport is not optional or required)`
        )
      )
    }
    if (catalog._tag === "None" || catalog.value.complete) {
      return yield* Effect.fail(new McpError(ErrorCode.InvalidParams, `no tool named ${name.slice(0, 200)}`))
    }
  })

/** A tool's listed `execution.taskSupport`. */
const supportOf = (tool: Toolset.Tool): unknown =>
  "execution" in tool && Predicate.isObject(tool.execution) && "taskSupport" in tool.execution
    ? tool.execution.taskSupport
    : undefined
