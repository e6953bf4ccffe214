/**
 * A throwaway PostgreSQL server for the tests: a fresh data directory under the system's temp
 * directory, bound to 127.0.0.1 on a free port, durability off (nothing here needs to survive a
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

export class Postgres extends Context.Service<Postgres, { readonly url: string }>()("test/Postgres") {}

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

const freePort = () =>
  Effect.callback<number>((resume) => {
    const server = NodeNet.createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resume(Effect.succeed(port)))
    })
  })

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
  const port = yield* freePort()
  const child = ChildProcess.spawn(
    NodePath.join(bin, "postgres"),
    [
      "-D",
      data,
      "-k",
      dir,
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=200"
    ],
    { detached: true, stdio: "ignore", cwd: dir, ...user }
  )
  yield* Effect.try(() =>
    ChildProcess.execFileSync(NodePath.join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port)], {
      stdio: "ignore"
    })
  ).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 }))
  return { url: `postgres://toolvisor@127.0.0.1:${port}/postgres`, child, dir }
})

const stop = (server: { readonly child: ChildProcess.ChildProcess; readonly dir: string }) =>
  Effect.callback<void>((resume) => {
    const done = () => {
      NodeFs.rmSync(server.dir, { recursive: true, force: true })
      resume(Effect.void)
    }
    if (server.child.exitCode !== null || server.child.signalCode !== null) return done()
    server.child.once("exit", done)
    // SIGINT is PostgreSQL's fast shutdown: clients are disconnected, not waited for.
    process.kill(-(server.child.pid ?? 0), "SIGINT")
  })

export const layer: Layer.Layer<Postgres> = Layer.effect(
  Postgres,
  Effect.map(Effect.acquireRelease(Effect.orDie(start), stop), ({ url }) => ({ url }))
)
