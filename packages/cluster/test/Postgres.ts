/**
 * A throwaway PostgreSQL server for the tests: a fresh data directory under the system's temp
 * directory, bound to 127.0.0.1 on a free port below the ephemeral range, durability off (nothing here needs to survive a
 * crash), removed when the scope closes. It needs Debian's `postgresql` package, which `.ci/run`
 * installs; as root, the server runs as the `postgres` user, since PostgreSQL refuses root.
 */
import * as ChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"

export interface Server {
  readonly url: string
  /**
   * Takes the server down: `fast` is PostgreSQL's fast shutdown (clients disconnected, not waited
   * for); `kill` SIGKILLs every process of it, as a crash would. Resolves once it is gone.
   */
  readonly down: (how: "fast" | "kill") => Effect.Effect<void>
  /** Starts it again on the same port and data, after `down`; resolves once it accepts connections. */
  readonly up: Effect.Effect<void>
}

export class Postgres extends Context.Service<Postgres, Server>()("test/Postgres") {}

/** The newest installed server's bin directory, e.g. /usr/lib/postgresql/15/bin. */
const binDir = (): string => {
  const root = "/usr/lib/postgresql"
  const versions = NodeFs.existsSync(root)
    ? NodeFs.readdirSync(root)
        .filter((v) => NodeFs.existsSync(NodePath.join(root, v, "bin", "postgres")))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const newest = versions[0]
  if (newest === undefined) {
    throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install postgresql")
  }
  return NodePath.join(root, newest, "bin")
}

/** Whether nothing listens on 127.0.0.1:`port` now. */
const isFree = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const server = NodeNet.createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

/**
 * A free port picked at random below Linux's ephemeral range (32768–60999): the server is started
 * again on it after `down`, and meanwhile a port in that range can be taken as the local end of
 * any outgoing connection on the host, which would keep it from listening. Above the fixed ports
 * the tests give runners and gateways (24461–26511).
 */
const freePort = Effect.sync(() => 27_000 + Math.floor(Math.random() * 5_768)).pipe(
  Effect.flatMap((port) => Effect.map(isFree(port), (free) => ({ port, free }))),
  Effect.repeat({ until: ({ free }) => free, times: 100 }),
  Effect.map(({ port }) => port)
)

/**
 * Who runs the server: as root, the `postgres` user from /etc/passwd (created by the Debian
 * package), since PostgreSQL refuses root; otherwise this process's own user.
 */
const owner = (): { readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const line = NodeFs.readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  if (uid === undefined || gid === undefined) throw new Error("running as root, but there is no postgres user")
  return { uid: Number(uid), gid: Number(gid) }
}

interface Instance {
  readonly bin: string
  readonly dir: string
  readonly data: string
  readonly port: number
  readonly user: { readonly uid: number; readonly gid: number } | undefined
  child: ChildProcess.ChildProcess
}

const spawn = (instance: Omit<Instance, "child">) =>
  ChildProcess.spawn(
    NodePath.join(instance.bin, "postgres"),
    [
      "-D",
      instance.data,
      "-k",
      instance.dir,
      "-h",
      "127.0.0.1",
      "-p",
      String(instance.port),
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=200"
    ],
    { detached: true, stdio: "ignore", cwd: instance.dir, ...instance.user }
  )

const ready = (instance: Omit<Instance, "child">) =>
  Effect.try(() =>
    ChildProcess.execFileSync(
      NodePath.join(instance.bin, "pg_isready"),
      ["-h", "127.0.0.1", "-p", String(instance.port)],
      {
        stdio: "ignore"
      }
    )
  ).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 }), Effect.orDie)

const start = Effect.gen(function* () {
  const bin = binDir()
  const user = owner()
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-pg-"))
  if (user !== undefined) NodeFs.chownSync(dir, user.uid, user.gid)
  const data = NodePath.join(dir, "data")
  ChildProcess.execFileSync(NodePath.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "toolvisor"], {
    stdio: "ignore",
    cwd: dir,
    ...user
  })
  const port = yield* freePort
  const settings = { bin, dir, data, port, user }
  const instance: Instance = { ...settings, child: spawn(settings) }
  yield* ready(settings)
  return instance
})

const exited = (child: ChildProcess.ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/** Takes the server down and waits until every process of it is gone. */
const down = (instance: Instance, how: "fast" | "kill") =>
  Effect.suspend(() => {
    // SIGINT is PostgreSQL's fast shutdown: clients are disconnected, not waited for.
    process.kill(-(instance.child.pid ?? 0), how === "fast" ? "SIGINT" : "SIGKILL")
    return exited(instance.child)
  })

const stop = (instance: Instance) =>
  Effect.andThen(
    instance.child.exitCode === null && instance.child.signalCode === null ? down(instance, "fast") : Effect.void,
    Effect.sync(() => NodeFs.rmSync(instance.dir, { recursive: true, force: true }))
  )

export const layer: Layer.Layer<Postgres> = Layer.effect(
  Postgres,
  Effect.map(Effect.acquireRelease(Effect.orDie(start), stop), (instance) => ({
    url: `postgres://toolvisor@127.0.0.1:${instance.port}/postgres`,
    down: (how) => down(instance, how),
    up: Effect.suspend(() => {
      instance.child = spawn(instance)
      return ready(instance)
    })
  }))
)
