/**
 * `--otlp URL` against an OTLP/HTTP receiver in the test that decodes what it gets (JSON): the
 * spans of a start and of a call with toolset, tool and outcome, the runtime's metrics, and logs,
 * all flushed by the time `toolvisor run` exits on SIGTERM.
 */
import * as NodeHttp from "node:http"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { mcpEntry, Session, writeConfig, yaml } from "./helpers.ts"

interface Received {
  readonly path: string
  readonly body: { readonly [key: string]: unknown }
}

const servers: Array<NodeHttp.Server> = []
const sessions: Array<Session> = []

afterEach(async () => {
  for (const session of sessions.splice(0)) {
    session.child.kill("SIGKILL")
    await session.exited()
  }
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A collector's OTLP/HTTP endpoints: every JSON body posted to /v1/*, by path. */
const receiver = async () => {
  const received: Array<Received> = []
  const server = NodeHttp.createServer((req, res) => {
    let text = ""
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: JSON.parse(text) })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return { url: `http://127.0.0.1:${port}`, received }
}

interface Span {
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }>
}

const spans = (received: ReadonlyArray<Received>): ReadonlyArray<Span> =>
  received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => JSON.parse(JSON.stringify(r.body.resourceSpans ?? [])))
    .flatMap((rs: { scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<Span> }> }) => rs.scopeSpans)
    .flatMap((ss: { spans: ReadonlyArray<Span> }) => ss.spans)

const attribute = (span: Span, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue

describe("toolvisor run --otlp", () => {
  it("exports the spans of a connect, start, restart and call (toolset, tool, outcome), the metrics and the logs", async () => {
    const collector = await receiver()
    const session = new Session([
      "run",
      writeConfig(yaml([mcpEntry("fx")])),
      "--json",
      "--http",
      "0",
      "--otlp",
      collector.url
    ])
    sessions.push(session)
    await session.waitFor((l) => l.type === "status" && l.toolset === "fx" && l.state === "Ready")
    session.send({ cmd: "call", id: 1, tool: "fx_echo", args: { message: "traced" } })
    await session.waitFor((l) => l.type === "result" && l.id === 1)
    session.send({ cmd: "restart", id: 2, toolset: "fx" })
    await session.waitFor((l) => l.type === "result" && l.id === 2)
    session.child.kill("SIGTERM")
    assert.strictEqual(await session.exited(), 0)

    const all = spans(collector.received)
    const call = all.find((s) => s.name === "toolvisor.callTool")
    assert.isDefined(call, `spans: ${all.map((s) => s.name).join(", ")}`)
    if (call === undefined) return
    assert.strictEqual(attribute(call, "toolset"), "fx")
    assert.strictEqual(attribute(call, "tool"), "fx_echo")
    assert.strictEqual(attribute(call, "outcome"), "ok")
    for (const name of ["toolvisor.start", "toolvisor.restart", "toolvisor.connect"]) {
      const span = all.find((s) => s.name === name)
      assert.strictEqual(span === undefined ? undefined : attribute(span, "toolset"), "fx", name)
    }
    const metrics = JSON.stringify(collector.received.filter((r) => r.path === "/v1/metrics").map((r) => r.body))
    assert.include(metrics, "toolvisor_tool_call_duration_ms")
    assert.include(metrics, "toolvisor_toolset_state")
    const logs = JSON.stringify(collector.received.filter((r) => r.path === "/v1/logs").map((r) => r.body))
    assert.include(logs, "status at http://127.0.0.1:")
  })
})
