/**
 * The one reader of Linux's /proc: a process's state, group, start time and CPU time, its
 * environment, and which processes exist. Liveness is read here rather than asked with
 * `kill(pid, 0)`, because that also succeeds for zombies a container's init never reaps. Where
 * there is no /proc every reader answers `undefined` and the liveness checks fall back to signals.
 */
import * as NodeFs from "node:fs"

/** The fields of /proc/<pid>/stat that Toolvisor reads. */
export interface Stat {
  /** One letter: R running, S sleeping, T stopped, Z zombie, … */
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  /** CPU time in user and kernel mode, in clock ticks (USER_HZ, 100 on Linux). */
  readonly utime: number
  readonly stime: number
  /** When the process started, in clock ticks since boot: with the pid, it names one process for good. */
  readonly startTime: number
}

/** Whether this system has a /proc to read. */
export const available: boolean = process.platform === "linux" && NodeFs.existsSync("/proc/self/stat")

const read = (path: string): string | undefined => {
  try {
    return NodeFs.readFileSync(path, "utf8")
  } catch {
    // Gone, or not ours to read (another user's environment).
    return undefined
  }
}

/** The process's stat fields; `undefined` if it does not exist. */
export const stat = (pid: number): Stat | undefined => {
  const text = read(`/proc/${pid}/stat`)
  if (text === undefined) return undefined
  // The command name may contain spaces and parentheses: fields start after the last ")", with
  // field 3 (state) at index 0.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
  const field = (n: number) => Number(fields[n - 3])
  return {
    state: fields[0] ?? "",
    ppid: field(4),
    pgrp: field(5),
    utime: field(14),
    stime: field(15),
    startTime: field(22)
  }
}

/** The environment the process started with; `undefined` if it does not exist or is not readable. */
export const environ = (pid: number): ReadonlyMap<string, string> | undefined => {
  const text = read(`/proc/${pid}/environ`)
  if (text === undefined) return undefined
  const env = new Map<string, string>()
  for (const entry of text.split("\0")) {
    const eq = entry.indexOf("=")
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1))
  }
  return env
}

/**
 * The process's pid namespace (`pid:[4026531836]`). Pids, and so owner marks, mean something only
 * inside one namespace: a container's pid 7 is not the host's.
 */
export const pidNamespace = (pid: number): string | undefined => {
  try {
    return NodeFs.readlinkSync(`/proc/${pid}/ns/pid`)
  } catch {
    return undefined
  }
}

/** Every process that exists now (zombies included); empty without /proc. */
export const pids = (): ReadonlyArray<number> =>
  available ? NodeFs.readdirSync("/proc").flatMap((entry) => (/^\d+$/.test(entry) ? [Number(entry)] : [])) : []

const signalZero = (target: number): boolean => {
  try {
    process.kill(target, 0)
    return true
  } catch {
    return false
  }
}

/** True while the process exists and is not a zombie. */
export const isAlive = (pid: number): boolean => {
  if (!available) return signalZero(pid)
  const s = stat(pid)
  return s !== undefined && s.state !== "Z"
}

/** True while any live (non-zombie) process belongs to the group. */
export const groupAlive = (pgid: number): boolean => {
  if (!available) return signalZero(-pgid)
  return pids().some((pid) => {
    const s = stat(pid)
    return s !== undefined && s.pgrp === pgid && s.state !== "Z"
  })
}
