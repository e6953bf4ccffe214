/**
 * A task call over streamable HTTP whose session is lost: on a real server that keeps its tasks
 * across sessions (`test/support/task-server.mjs`, one task store for every session), the call
 * follows the same task on the next session and returns its result — the task is created once,
 * never again behind the caller's back. On a server that restarted and so no longer knows the
 * task, the call fails at once with `CallOutcomeUnknown` (it may have run), not at its deadline.
 * (server-everything keeps one task store per session, so it cannot show a resume.)
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ServerProcess } from "@toolvisor/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"
import { awaitListening, fastPolicy, freePort, tempFile, textOf } from "./helpers.ts"

const taskServer = NodePath.resolve(import.meta.dirname, "../../../test/support/task-server.mjs")

/** The task server over HTTP on `port`, logging task events to `log`, in a scope of its own. */
const startServer = (port: number, log: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const server = yield* ServerProcess.spawn("task-server", {
      command: process.execPath,
      args: [taskServer, "http"],
      env: { PORT: String(port), TASKS_LOG: log }
    }).pipe(Scope.provide(scope))
    yield* awaitListening(port)
    return { pid: server.pid, stop: Scope.close(scope, Exit.void) }
  })

const open = (port: number) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const toolset = yield* McpToolset.make({
      name: "tasks",
      spec: McpSpec.Http.make({ url: `http://127.0.0.1:${port}/mcp` }),
      policy: fastPolicy({ call_timeout: "60s" })
    }).pipe(Scope.provide(scope))
    yield* toolset.start
    return { toolset, close: Scope.close(scope, Exit.void) }
  })

/** The task events the server logged, as `[event, taskId]`. */
const events = (log: string) =>
  (NodeFs.existsSync(log) ? NodeFs.readFileSync(log, "utf8") : "")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.split(" "))

/** Waits until the server logged `count` tasks created. */
const created = (log: string, count: number) =>
  Effect.sync(() => events(log).filter(([event]) => event === "created").length).pipe(
    Effect.repeat({ until: (n) => n >= count, schedule: Schedule.spaced("20 millis") }),
    Effect.timeout("20 seconds")
  )

const failureOf = (exit: Exit.Exit<unknown, { readonly _tag: string; readonly message: string }>) => {
  const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
  return error?._tag === "Some" ? error.value : undefined
}

describe("a task call whose HTTP session is lost", () => {
  it.live("resumes on the next session when the server still knows the task: created once, result returned", () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const log = tempFile("tasks.log")
      const server = yield* startServer(port, log)
      const { toolset, close } = yield* open(port)
      const call = yield* Effect.forkChild(toolset.callTool("slow", { ms: 1_500, label: "kept" }), {
        startImmediately: true
      })
      yield* created(log, 1)
      // The server forgets every session (a request with the old id answers 404) but keeps its tasks.
      const dropped = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/drop`, { method: "POST" }))
      assert.strictEqual(yield* Effect.promise(() => dropped.text()), "1")
      const result = yield* Fiber.join(call)
      assert.strictEqual(textOf(result), "done: kept")
      assert.deepStrictEqual(
        events(log).map(([event]) => event),
        ["created", "completed"],
        "the task was followed on the new session, not created again"
      )
      yield* close
      yield* server.stop
    })
  )

  it.live("fails at once with CallOutcomeUnknown when the restarted server no longer knows the task", () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const log = tempFile("tasks.log")
      const first = yield* startServer(port, log)
      const { toolset, close } = yield* open(port)
      const call = yield* Effect.forkChild(toolset.callTool("slow", { ms: 30_000, label: "lost" }), {
        startImmediately: true
      })
      yield* created(log, 1)
      const taskId = events(log)[0]?.[1]
      process.kill(first.pid, "SIGKILL")
      yield* first.stop
      const second = yield* startServer(port, log)
      const exit = yield* Fiber.await(call).pipe(Effect.timeout("20 seconds"))
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "CallOutcomeUnknown")
      assert.include(error?.message ?? "", "may have run")
      assert.include(error?.message ?? "", taskId ?? "?")
      assert.strictEqual(
        events(log).filter(([event]) => event === "created").length,
        1,
        "not created again on the new server"
      )
      yield* close
      yield* second.stop
    })
  )
})
