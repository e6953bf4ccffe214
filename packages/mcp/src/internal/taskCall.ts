/**
 * A call of a tool that runs as an MCP task (2025-11-25, `execution.taskSupport: "required"`):
 * `tools/call` with a `task` creates it, `tasks/get` polls it and `tasks/result` fetches its result.
 * The SDK's own `callToolStream` sleeps a poll interval the server chooses and notices neither a
 * dead server nor an abort while it sleeps; here the wait is cut to at most `maxPoll`, ends at
 * once on abort, and stays within the call's deadline, so a task whose server died fails on the
 * next poll (the request fails at once on a closed session) as a lost connection, never as a call
 * not sent, so it is not run again on the next session. An aborted call cancels its task.
 * Tools whose `taskSupport` is `optional` are called directly (a task adds round trips) unless
 * the caller asks for a task (the gateway, for a client that asked for one).
 *
 * The task's id is handed to the caller as soon as the server created it, so a call whose session
 * was lost can `follow` the same task on the next one (a server may keep tasks across sessions)
 * rather than create it again; a server that no longer knows it answers `TaskUnknown`.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { Toolset } from "@toolvisor/core"
import * as Predicate from "effect/Predicate"
import { NotDelivered } from "./pipeTransport.ts"

/** The longest wait between two polls, whatever the server suggests. */
export const maxPoll = 1_000

/** How long cancelling an abandoned task may take before it is given up. */
const cancelTimeout = 5_000

/** The SDK's code for a request that ran past its `timeout`. */
const requestTimeout = -32001

/** The tool's listed `execution.taskSupport`, when it lists one. */
export const support = (tool: Toolset.Tool | undefined): unknown =>
  tool !== undefined && "execution" in tool && Predicate.isObject(tool.execution) && "taskSupport" in tool.execution
    ? tool.execution.taskSupport
    : undefined

/** Whether the tool must be called as a task (its listing's `execution.taskSupport`). */
export const required = (tool: Toolset.Tool | undefined): boolean => support(tool) === "required"

/** Whether the tool may be called as a task (`taskSupport` is `optional` or `required`). */
export const supported = (tool: Toolset.Tool | undefined): boolean => {
  const listed = support(tool)
  return listed === "optional" || listed === "required"
}

/** The server no longer knows the task (it restarted, or the task expired): the call may have run. */
export class TaskUnknown extends Error {
  readonly taskId: string
  constructor(taskId: string, cause: unknown) {
    super(`the server no longer knows task ${taskId}`, { cause })
    this.taskId = taskId
  }
}

export interface Options {
  readonly signal?: AbortSignal | undefined
  /** When the call's deadline passes (epoch milliseconds); none means no limit. */
  readonly until: number | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
  /** Told the task's id once the server created it, before it is polled. */
  readonly created?: ((taskId: string) => void) | undefined
}

/** Waits `millis`, or until `signal` aborts (then rejects with its reason). */
const pause = (millis: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, millis)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

/**
 * A poll that found the session closed says nothing about the task, which the server did create:
 * it must not read as a call never sent (which is sent again), but as a connection lost mid-call.
 */
const lostTask = (taskId: string, cause: unknown): unknown =>
  cause instanceof NotDelivered || (cause instanceof Error && cause.message === "Not connected")
    ? new McpError(ErrorCode.ConnectionClosed, `the session of task ${taskId} closed while it ran: ${cause.message}`)
    : cause

/** The time left before the call's deadline; past it, a timeout. */
const leftOf = (name: string, options: Options) => () => {
  const remaining = options.until === undefined ? Number.POSITIVE_INFINITY : options.until - Date.now()
  if (remaining <= 0) throw new McpError(requestTimeout, `the task of ${name} ran past the call's deadline`)
  return remaining
}

/** The SDK's options of one request of the call: its signal, and what is left of its deadline. */
const requestOf = (name: string, options: Options) => {
  const left = leftOf(name, options)
  return () => ({
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.until === undefined ? {} : { timeout: left() })
  })
}

/** Runs the call as a task and resolves with its result (what `tools/call` would have answered). */
export const call = async (
  client: Client,
  params: { readonly name: string; readonly arguments: { readonly [key: string]: unknown } },
  options: Options
) => {
  const created = await client.request(
    {
      method: "tools/call",
      params: {
        name: params.name,
        arguments: { ...params.arguments },
        ...(options._meta === undefined ? {} : { _meta: { ...options._meta } })
      }
    },
    CreateTaskResultSchema,
    { ...requestOf(params.name, options)(), task: {} }
  )
  options.created?.(created.task.taskId)
  return follow(client, params.name, created.task.taskId, options)
}

/**
 * Polls a task the server created until it ends and resolves with its result; on a session other
 * than the one that created it, this resumes the call. A server that answers that it does not know
 * the task (invalid params) rejects with `TaskUnknown`.
 */
export const follow = async (client: Client, name: string, taskId: string, options: Options) => {
  const left = leftOf(name, options)
  const request = requestOf(name, options)
  const cancel = () => {
    client.experimental.tasks.cancelTask(taskId, { timeout: cancelTimeout }).catch(() => undefined)
  }
  options.signal?.addEventListener("abort", cancel, { once: true })
  try {
    for (;;) {
      const task = await client.experimental.tasks.getTask(taskId, request()).catch((cause: unknown) => {
        throw cause instanceof McpError && cause.code === ErrorCode.InvalidParams
          ? new TaskUnknown(taskId, cause)
          : cause
      })
      if (task.status === "completed" || task.status === "input_required") {
        return await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, request())
      }
      if (task.status === "failed" || task.status === "cancelled") {
        throw new McpError(
          ErrorCode.InternalError,
          `task ${taskId} ${task.status}${task.statusMessage === undefined ? "" : `: ${task.statusMessage}`}`
        )
      }
      await pause(Math.min(task.pollInterval ?? maxPoll, maxPoll, left()), options.signal)
    }
  } catch (cause) {
    throw lostTask(taskId, cause)
  } finally {
    options.signal?.removeEventListener("abort", cancel)
  }
}
