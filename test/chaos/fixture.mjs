// The chaos soak's own MCP server over stdio: a few tools, a ledger of every non-idempotent
// execution, and faults on demand. Environment:
//   CHAOS_MODE=exit-after-init  exit with code 1 CHAOS_EXIT_AFTER_MS (default 700) after initialize
//   CHAOS_STARTS                append one line per start ("<pid> <epoch ms>") to this file
//   CHAOS_LEDGER                append one line per `increment` execution ("<id> <pid> <seq>")
// Signals:
//   SIGUSR1  spew garbage on stdout: non-JSON lines, a 64 KiB line, bytes that are not UTF-8,
//            JSON that is not JSON-RPC, a response to an id nobody asked for, a bogus request
//   SIGUSR2  hang: from now on read requests and never answer them (pings included)
import { appendFileSync } from "node:fs"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"

const mode = process.env.CHAOS_MODE ?? "normal"
const exitAfter = Number(process.env.CHAOS_EXIT_AFTER_MS ?? 700)
const ledger = process.env.CHAOS_LEDGER
if (process.env.CHAOS_STARTS) appendFileSync(process.env.CHAOS_STARTS, `${process.pid} ${Date.now()}\n`)

let hung = false
let executions = 0

const server = new McpServer({ name: "chaos-fixture", version: "1.0.0" })
const text = (value) => ({ content: [{ type: "text", text: String(value) }] })

server.registerTool(
  "echo",
  { description: "Echoes its message", inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } },
  async ({ message }) => text(message)
)
server.registerTool(
  "increment",
  {
    description: "Counts one execution of call `id` in the ledger and answers {id, pid, seq} (not idempotent)",
    inputSchema: { id: z.string() },
    annotations: { readOnlyHint: false, idempotentHint: false }
  },
  async ({ id }) => {
    executions += 1
    // Written before answering, synchronously: an execution whose answer is lost is still counted.
    if (ledger) appendFileSync(ledger, `${id} ${process.pid} ${executions}\n`)
    return text(JSON.stringify({ id, pid: process.pid, seq: executions }))
  }
)
server.registerTool(
  "slow_read",
  {
    description: "Waits, then answers (read-only: safe to resend)",
    inputSchema: { ms: z.number() },
    annotations: { readOnlyHint: true }
  },
  async ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(text(`read after ${ms}`)), ms))
)

const garbage = () => {
  const lines = [
    "chaos: this line is not JSON-RPC",
    "{ half a json object",
    "x".repeat(64 * 1024),
    JSON.stringify({ hello: "a JSON value that is not a JSON-RPC message" }),
    JSON.stringify({ jsonrpc: "2.0", id: 987654321, result: { content: [] } }),
    JSON.stringify({ jsonrpc: "2.0", id: "chaos-bogus", method: "chaos/bogus", params: {} }),
    "[1, 2, 3]"
  ]
  for (const line of lines) process.stdout.write(`${line}\n`)
  process.stdout.write(Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x0a]))
}

process.on("SIGUSR1", garbage)
process.on("SIGUSR2", () => {
  hung = true
  process.stderr.write("chaos fixture: hanging on request (SIGUSR2)\n")
})

const transport = new StdioServerTransport()
await server.connect(transport)
const receive = transport.onmessage
transport.onmessage = (message, extra) => {
  if (hung) return
  receive?.(message, extra)
}

if (mode === "exit-after-init") {
  server.server.oninitialized = () => {
    setTimeout(() => {
      process.stderr.write("chaos fixture: exiting after initialize, as configured (CHAOS_MODE=exit-after-init)\n")
      process.exit(1)
    }, exitAfter)
  }
}
