/**
 * What the soak reads from /proc and the processes it starts. Every server the soak's config
 * runs carries `CHAOS_TAG=<run>:<toolset>` in its environment (children inherit it), so the soak
 * finds a toolset's server, counts orphans and kills whatever it started by that marker alone,
 * never by a process name another user's processes could share.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeNet from "node:net"
import * as Net from "../support/Net.ts"

/** A process seen in /proc. */
export interface Proc {
  readonly pid: number
  readonly ppid: number
  /** One letter: R, S, D, T (stopped), Z (zombie)… */
  readonly state: string
  readonly tag: string
  readonly command: string
}

const statFields = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    const stat = NodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name, which may itself contain ") ": state is field 3.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** True while the process exists and is not a zombie. */
export const isAlive = (pid: number): boolean => {
  const state = statFields(pid)?.[0]
  return state !== undefined && state !== "Z"
}

const tagOf = (pid: number): string | undefined => {
  try {
    const environ = NodeFs.readFileSync(`/proc/${pid}/environ`, "utf8")
    const entry = environ.split("\0").find((e) => e.startsWith("CHAOS_TAG="))
    return entry?.slice("CHAOS_TAG=".length)
  } catch {
    return undefined
  }
}

const commandOf = (pid: number): string => {
  try {
    return NodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim().slice(0, 160)
  } catch {
    return "?"
  }
}

/** Every live (not zombie) process whose CHAOS_TAG starts with `prefix`. */
export const tagged = (prefix: string): Array<Proc> => {
  const found: Array<Proc> = []
  for (const entry of NodeFs.readdirSync("/proc")) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    const tag = tagOf(pid)
    if (tag === undefined || !tag.startsWith(prefix)) continue
    const fields = statFields(pid)
    if (fields === undefined || fields[0] === "Z") continue
    found.push({ pid, ppid: Number(fields[1]), state: fields[0] ?? "?", tag, command: commandOf(pid) })
  }
  return found
}

/** Resident memory in MiB and open file descriptors of a process; undefined once it is gone. */
export const usage = (pid: number): { readonly rssMiB: number; readonly fds: number } | undefined => {
  try {
    const status = NodeFs.readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1])
    const fds = NodeFs.readdirSync(`/proc/${pid}/fd`).length
    return { rssMiB: kb / 1024, fds }
  } catch {
    return undefined
  }
}

/** Sends a signal; false when the process was already gone. */
export const signal = (pid: number, sig: NodeJS.Signals): boolean => {
  try {
    process.kill(pid, sig)
    return true
  } catch {
    return false
  }
}

/** Kills a process for good, even a stopped one (SIGKILL ends a stopped process too; SIGCONT reaps nothing but is harmless). */
export const killHard = (pid: number): void => {
  signal(pid, "SIGKILL")
  signal(pid, "SIGCONT")
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `done` every `every` ms until it holds or `within` ms pass; true if it held. */
export const until = async (done: () => boolean, within: number, every = 50): Promise<boolean> => {
  const deadline = Date.now() + within
  for (;;) {
    if (done()) return true
    if (Date.now() >= deadline) return false
    await sleep(every)
  }
}

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export const freePort = Net.freePort

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = NodeNet.connect(port, "127.0.0.1")
    socket.setTimeout(1_000)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", () => resolve(false))
  })

/** A child the soak started in its own process group, with its output appended to a log file. */
export interface Child {
  readonly pid: number
  readonly process: NodeChildProcess.ChildProcess
  readonly exited: Promise<void>
  exitedAt: number | undefined
}

/** The children the soak started and has not seen exit: what a cleanup must end. */
export const started = new Set<Child>()

export const spawn = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly log: string }
): Child => {
  const out = NodeFs.openSync(options.log, "a")
  const child = NodeChildProcess.spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    // Its own process group: Ctrl-C in the soak's terminal reaches the soak only, which then
    // stops its children in order (the gateway first, so that it can stop its servers).
    detached: true,
    stdio: ["ignore", out, out]
  })
  NodeFs.closeSync(out)
  if (child.pid === undefined) throw new Error(`cannot start ${command}`)
  const handle: Child = {
    pid: child.pid,
    process: child,
    exitedAt: undefined,
    exited: new Promise<void>((resolve) => {
      child.once("exit", () => {
        handle.exitedAt = Date.now()
        started.delete(handle)
        resolve()
      })
    })
  }
  started.add(handle)
  return handle
}

/** SIGTERM, then SIGKILL to the group after `grace` ms; resolves once the child has exited. */
export const stop = async (child: Child, grace: number): Promise<void> => {
  if (child.exitedAt !== undefined) return
  signal(child.pid, "SIGTERM")
  const timer = setTimeout(() => {
    signal(-child.pid, "SIGKILL")
    signal(child.pid, "SIGKILL")
  }, grace)
  await child.exited
  clearTimeout(timer)
}
