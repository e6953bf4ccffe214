/**
 * The core in action on a real child process: a server that crashes soon after every start.
 * The Supervisor reconnects with growing backoff, never lets the crash loop run forever (the
 * budget resets only after Ready has lasted `reset_after`), ends Failed, recovers on a forced
 * restart, and leaves no process behind on stop.
 *
 *   npm run demo
 */
import * as NodePath from "node:path"
import { Policy, ServerProcess, type Session, Supervisor } from "@toolvisor/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

const server = NodePath.join(import.meta.dirname, "flaky-server.mjs")

/** Reads stdout until the server's first line: our stand-in for a protocol handshake. */
const firstLine = (proc: ServerProcess.ServerProcess) =>
  Effect.callback<string>((resume) => {
    let text = ""
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8")
      const end = text.indexOf("\n")
      if (end < 0) return
      proc.stdout.off("data", onData)
      resume(Effect.succeed(text.slice(0, end)))
    }
    proc.stdout.on("data", onData)
  })

const connector = (lifetimeMs: number): Session.Connector<ServerProcess.ServerProcess> => ({
  connect: Effect.gen(function* () {
    const proc = yield* ServerProcess.spawn("flaky", { command: process.execPath, args: [server, String(lifetimeMs)] })
    yield* proc.whileRunning(firstLine(proc))
    yield* proc.established
    return { handle: proc, ended: proc.exited, pid: proc.pid }
  })
})

const policy = Policy.fromLifecycleUnknownSync({
  max_restarts: 4,
  backoff: { initial: "200ms", max: "2s", reset_after: "5s" },
  startup_timeout: "5s"
})

const program = Effect.gen(function* () {
  const started = Date.now()
  const supervisor = yield* Supervisor.make({ name: "flaky", kind: "demo", connector: connector(400), policy })
  console.log(
    `planned backoff: ${Policy.delays(policy)
      .map((d) => `${d}`)
      .join(", ")}`
  )
  const failed = yield* Deferred.make<number>()
  yield* supervisor.events.pipe(
    Stream.runForEach((t) => {
      const s = t.snapshot
      const error = s.lastError ? `  ${s.lastError.tag}: ${s.lastError.message}` : ""
      const at = `${((Date.now() - started) / 1000).toFixed(2)}s`.padStart(7)
      console.log(
        `${at}  ${t.from.padEnd(10)} → ${s.state.padEnd(10)} restarts=${s.restarts} pid=${s.pid ?? "-"}${error}`
      )
      return s.state === "Failed" ? Deferred.succeed(failed, s.restarts) : Effect.void
    }),
    Effect.forkScoped({ startImmediately: true })
  )
  yield* supervisor.start
  console.log(`gave up as planned after ${yield* Deferred.await(failed)} restarts`)
  console.log("forcing a restart (bypasses the policy):")
  yield* supervisor.restart
  const pid = (yield* supervisor.state).pid
  yield* supervisor.stop
  console.log(`stopped; server pid ${pid} alive afterwards: ${pid !== undefined && ServerProcess.isAlive(pid)}`)
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
