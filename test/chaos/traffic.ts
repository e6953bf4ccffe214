/**
 * The soak's callers: SDK clients on the gateway's streamable HTTP endpoint, each calling in a
 * loop bounded in count and time, and judging every answer. Each call carries a fresh id, so an
 * answer meant for another call is a wrong result, and the same answer twice is a duplicate.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { callTimeoutMs } from "./config.ts"
import { sleep } from "./procs.ts"

/**
 * How one call ended. `ok` and `wrong` judge a result; `twice` is a result proving the call's
 * operation had already run (a created entity that already existed); `empty` is a legitimate
 * answer without the expected content (an LSP hover while the project loads); `error` is a typed
 * error result (`tag` is its tag); `protocol` is a failure the client saw as an exception; `hang`
 * is a call the client gave up on after the gateway's own deadline had long passed.
 */
export type Verdict = "ok" | "wrong" | "twice" | "empty" | "error" | "protocol" | "hang"

export interface Outcome {
  readonly caller: number
  readonly toolset: string
  readonly tool: string
  readonly id: string
  readonly start: number
  readonly end: number
  readonly verdict: Verdict
  readonly tag?: string
  readonly detail?: string
  /** For `fx_increment`: the execution that answered, `<pid>/<seq>`. */
  readonly execution?: string
}

interface Op {
  readonly toolset: string
  readonly tool: string
  readonly args: { readonly [key: string]: unknown }
  readonly judge: (text: string) => { readonly verdict: Verdict; readonly execution?: string }
}

const exact =
  (expected: string) =>
  (text: string): { readonly verdict: Verdict } => ({ verdict: text === expected ? "ok" : "wrong" })

/** The calls a caller draws from, each a function of a fresh id and the caller's random source. */
export const ops: ReadonlyArray<(id: string, random: () => number) => Op> = [
  (id) => ({ toolset: "ev", tool: "ev_echo", args: { message: id }, judge: exact(`Echo: ${id}`) }),
  (_id, random) => {
    const a = Math.floor(random() * 1e6)
    const b = Math.floor(random() * 1e6)
    return { toolset: "ev", tool: "ev_get-sum", args: { a, b }, judge: exact(`The sum of ${a} and ${b} is ${a + b}.`) }
  },
  (id) => ({ toolset: "http", tool: "http_echo", args: { message: id }, judge: exact(`Echo: ${id}`) }),
  (id) => ({ toolset: "fx", tool: "fx_echo", args: { message: id }, judge: exact(id) }),
  (id) => ({
    toolset: "fx",
    tool: "fx_increment",
    args: { id },
    judge: (text) => {
      try {
        const answer: unknown = JSON.parse(text)
        if (typeof answer !== "object" || answer === null || !("id" in answer) || answer.id !== id) {
          return { verdict: "wrong" }
        }
        const pid = "pid" in answer ? answer.pid : undefined
        const seq = "seq" in answer ? answer.seq : undefined
        return { verdict: "ok", execution: `${String(pid)}/${String(seq)}` }
      } catch {
        return { verdict: "wrong" }
      }
    }
  }),
  (id) => ({
    toolset: "mem",
    tool: "mem_create_entities",
    args: { entities: [{ name: id, entityType: "chaos", observations: [id] }] },
    judge: (text) => {
      try {
        const created: unknown = JSON.parse(text)
        if (!Array.isArray(created)) return { verdict: "wrong" }
        // server-memory creates only names it does not hold yet: an empty answer for a fresh id
        // means an earlier execution of this same call had created it.
        if (created.length === 0) return { verdict: "twice" }
        const ours = created.length === 1 && typeof created[0] === "object" && created[0]?.name === id
        return { verdict: ours ? "ok" : "wrong" }
      } catch {
        return { verdict: "wrong" }
      }
    }
  }),
  () => ({
    toolset: "ts",
    tool: "ts_lsp_hover",
    args: { file: "src/main.ts", line: 3, character: 23 },
    judge: (text) => ({ verdict: text.includes("add") ? "ok" : "empty" })
  })
]

/** How long a client waits before it calls a call hung: the gateway's deadline plus generous slack. */
export const clientTimeoutMs = callTimeoutMs + 7_000

const textOf = (result: unknown): string => {
  if (typeof result !== "object" || result === null || !("content" in result) || !Array.isArray(result.content)) {
    return ""
  }
  return result.content
    .map((item: unknown) =>
      typeof item === "object" && item !== null && "text" in item && typeof item.text === "string" ? item.text : ""
    )
    .join("")
}

/** A connected client; counts the `tools/list_changed` notifications it hears. */
export const connect = async (url: string, name: string) => {
  const client = new Client({ name, version: "1.0.0" })
  const heard = { listChanged: 0 }
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    heard.listChanged += 1
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return { client, heard }
}

/** One call, judged. Never throws. */
export const call = async (client: Client, caller: number, op: Op, id: string): Promise<Outcome> => {
  const start = Date.now()
  const base = { caller, toolset: op.toolset, tool: op.tool, id, start }
  try {
    const result = await client.callTool({ name: op.tool, arguments: { ...op.args } }, undefined, {
      timeout: clientTimeoutMs
    })
    const end = Date.now()
    const text = textOf(result)
    if (result.isError === true) {
      const tag = /^([A-Za-z]+):/.exec(text)?.[1] ?? "Untagged"
      return { ...base, end, verdict: "error", tag, detail: text.slice(0, 300) }
    }
    const judged = op.judge(text)
    return {
      ...base,
      end,
      verdict: judged.verdict,
      ...(judged.execution === undefined ? {} : { execution: judged.execution }),
      ...(judged.verdict === "ok" ? {} : { detail: text.slice(0, 300) })
    }
  } catch (cause) {
    const end = Date.now()
    const message = cause instanceof Error ? cause.message : String(cause)
    const timedOut = /timed out/i.test(message) && end - start >= clientTimeoutMs - 100
    return { ...base, end, verdict: timedOut ? "hang" : "protocol", detail: message.slice(0, 300) }
  }
}

/** A fresh call id: the run, the caller and a sequence number. */
export const idFor = (run: string, caller: number, n: number) => `${run}-c${caller}-${n}`

export interface Loop {
  readonly caller: number
  readonly done: Promise<void>
  readonly heard: { listChanged: number }
}

/**
 * One caller: until `stopAt` (and at most `maxCalls` calls) draws an op, calls, records, pauses
 * `pauseMs` ± half. A caller whose client fails to connect reconnects, at most once a second.
 */
export const loop = (options: {
  readonly url: string
  readonly run: string
  readonly caller: number
  readonly random: () => number
  readonly choose: ReadonlyArray<(id: string, random: () => number) => Op>
  readonly stopAt: () => number
  readonly maxCalls: number
  readonly pauseMs: number
  readonly record: (outcome: Outcome) => void
  /** Calls that must not overlap (server-memory rewrites its whole file per call). */
  readonly exclusive?: (toolset: string) => { readonly acquire: () => Promise<() => void> } | undefined
}): Loop => {
  const heard = { listChanged: 0 }
  const done = (async () => {
    let connection: Awaited<ReturnType<typeof connect>> | undefined
    let heardBefore = 0
    for (let n = 0; n < options.maxCalls && Date.now() < options.stopAt(); n++) {
      if (connection === undefined) {
        try {
          heardBefore = heard.listChanged
          connection = await connect(options.url, `chaos-caller-${options.caller}`)
        } catch {
          await sleep(1_000)
          continue
        }
      }
      const draw = options.choose[Math.floor(options.random() * options.choose.length)]
      if (draw === undefined) continue
      const id = idFor(options.run, options.caller, n)
      const op = draw(id, options.random)
      const lock = options.exclusive?.(op.toolset)
      const release = lock === undefined ? undefined : await lock.acquire()
      const outcome = await call(connection.client, options.caller, op, id)
      release?.()
      options.record(outcome)
      heard.listChanged = heardBefore + connection.heard.listChanged
      if (
        outcome.verdict === "protocol" &&
        /fetch failed|ECONNREFUSED|Session not found|socket/i.test(outcome.detail ?? "")
      ) {
        await connection.client.close().catch(() => undefined)
        connection = undefined
      }
      await sleep(options.pauseMs * (0.5 + options.random()))
    }
    await connection?.client.close().catch(() => undefined)
  })()
  return { caller: options.caller, done, heard }
}

/** A lock that lets one holder in at a time, in arrival order. */
export const mutex = () => {
  let tail = Promise.resolve()
  return {
    acquire: () =>
      new Promise<() => void>((resolve) => {
        const previous = tail
        let release = () => {}
        tail = new Promise<void>((r) => {
          release = r
        })
        void previous.then(() => resolve(release))
      })
  }
}
