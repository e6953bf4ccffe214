/**
 * The soak's fault injector: one fault at a time, drawn from a seeded random source, each aimed
 * at the live server of one toolset. After each fault it waits until a call to that toolset
 * succeeds again (or a cap passes), then pauses, so every recovery is measured on its own.
 */
import * as NodePath from "node:path"
import * as Config from "./config.ts"
import * as Procs from "./procs.ts"

export type Kind = "sigkill" | "sigstop" | "hang" | "garbage" | "http-restart"

/** Which toolsets each kind of fault is aimed at. */
export const targets: { readonly [K in Kind]: ReadonlyArray<Config.Soaked> } = {
  sigkill: ["ev", "mem", "fx", "ts"],
  sigstop: ["ev", "mem", "fx", "ts", "http"],
  hang: ["fx"],
  garbage: ["fx"],
  "http-restart": ["http"]
}

export const kinds: ReadonlyArray<Kind> = ["sigkill", "sigstop", "hang", "garbage", "http-restart"]

export interface Fault {
  readonly kind: Kind
  readonly toolset: Config.Soaked
  readonly pid: number
  readonly injectedAt: number
  /**
   * When the fault itself ended and Toolvisor alone had to make the toolset usable again: the
   * SIGCONT of a stop, the restarted HTTP server accepting connections; for a kill, a hang or
   * garbage, the injection itself.
   */
  healedAt: number
  /** How long the server was stopped, or the HTTP server was down. */
  heldMs: number
}

/** The soak's own streamable HTTP server (server-everything), which it kills and restarts. */
export class HttpServer {
  child: Procs.Child | undefined
  starts = 0
  readonly port: number
  private readonly run: string
  private readonly dir: string

  constructor(port: number, run: string, dir: string) {
    this.port = port
    this.run = run
    this.dir = dir
  }

  /** Starts it and waits until it accepts connections; retries a start that lost its port. */
  async start(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      this.starts += 1
      const child = Procs.spawn(process.execPath, [Config.everything, "streamableHttp"], {
        cwd: Config.root,
        env: { ...process.env, PORT: String(this.port), CHAOS_TAG: `${this.run}:http-server` },
        log: NodePath.join(this.dir, "http-server.log")
      })
      this.child = child
      const deadline = Date.now() + 15_000
      while (Date.now() < deadline && child.exitedAt === undefined) {
        if (await Procs.accepts(this.port)) return
        await Procs.sleep(50)
      }
      Procs.killHard(child.pid)
      await child.exited
      await Procs.sleep(300)
    }
    throw new Error(`the HTTP MCP server does not start on port ${this.port}`)
  }

  async kill(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    Procs.signal(-child.pid, "SIGKILL")
    Procs.killHard(child.pid)
    await child.exited
  }
}

/** The live server process of a toolset: the gateway's child carrying the toolset's tag. */
export const serverOf = (run: string, toolset: string, gateway: number): number | undefined =>
  Procs.tagged(`${run}:${toolset}`).find((p) => p.tag === `${run}:${toolset}` && p.ppid === gateway)?.pid

export interface Options {
  readonly run: string
  readonly random: () => number
  readonly gateway: () => number
  readonly http: HttpServer
  /** Whether a call to `toolset` that started at or after `since` has succeeded. */
  readonly recovered: (toolset: string, since: number) => boolean
  /** No fault is injected from then on. */
  readonly stopAt: number
  /** The callers stop then: no recovery can be seen after it. */
  readonly callersStopAt: number
  readonly record: (fault: Fault) => void
  readonly log: (line: string) => void
}

const between = (random: () => number, min: number, max: number) => min + random() * (max - min)

/** How long to wait for a recovery before the next fault regardless. */
export const recoveryCapMs = 30_000

/** Injects faults until `stopAt`; at most one per second, however fast toolsets recover. */
export const inject = async (options: Options): Promise<void> => {
  const { random } = options
  for (let n = 0; n < 100_000 && Date.now() < options.stopAt; n++) {
    await Procs.sleep(between(random, 1_000, 4_000))
    if (Date.now() >= options.stopAt) return
    const kind = kinds[Math.floor(random() * kinds.length)] ?? "sigkill"
    const aimed = targets[kind]
    const toolset = aimed[Math.floor(random() * aimed.length)] ?? "fx"
    const hold = between(random, 1_000, 4_000)
    const pid = toolset === "http" ? options.http.child?.pid : serverOf(options.run, toolset, options.gateway())
    if (pid === undefined) {
      options.log(`fault ${kind} on ${toolset} skipped: no live server`)
      continue
    }
    const fault: Fault = { kind, toolset, pid, injectedAt: Date.now(), healedAt: 0, heldMs: 0 }
    switch (kind) {
      case "sigkill":
        Procs.signal(pid, "SIGKILL")
        break
      case "hang":
        Procs.signal(pid, "SIGUSR2")
        break
      case "garbage":
        Procs.signal(pid, "SIGUSR1")
        break
      case "sigstop":
        Procs.signal(pid, "SIGSTOP")
        await Procs.sleep(hold)
        Procs.signal(pid, "SIGCONT")
        break
      case "http-restart":
        await options.http.kill()
        await Procs.sleep(hold)
        await options.http.start()
        break
    }
    fault.healedAt = Date.now()
    fault.heldMs = fault.healedAt - fault.injectedAt
    options.record(fault)
    options.log(`fault ${kind} on ${toolset} (pid ${pid})${fault.heldMs > 0 ? ` for ${fault.heldMs} ms` : ""}`)
    const deadline = Math.min(fault.healedAt + recoveryCapMs, options.callersStopAt)
    while (Date.now() < deadline && !options.recovered(toolset, fault.healedAt)) await Procs.sleep(50)
  }
}
