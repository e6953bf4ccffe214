/**
 * The fault-injection soak in short (test/chaos/soak.ts, `npm run chaos:short` at 45 s): the real
 * `serve` over real servers, four callers, seeded faults, then SIGTERM and SIGKILL + restart of
 * the gateway. Each check of the soak is one test here, read from the run's JSON report.
 *
 * Memory and fd flatness are not judged in a run this short; `npm run chaos` (10 minutes) judges
 * them.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { root } from "./helpers.ts"

interface Check {
  readonly id: string
  readonly name: string
  readonly measured: string
  readonly pass: boolean
}

const soak = NodePath.join(root, "test/chaos/soak.ts")

let checks: ReadonlyArray<Check> = []
let output = ""

const check = (id: string) => {
  const found = checks.find((c) => c.id === id)
  assert.isDefined(found, `no check ${id} in the soak's report; its output:\n${output}`)
  return found
}

const holds = (id: string) => {
  const found = check(id)
  assert.isTrue(found?.pass, `${found?.name}: ${found?.measured}\n${output}`)
}

describe("the chaos soak, 45 s", () => {
  beforeAll(async () => {
    const report = NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-chaos-test-")), "r.json")
    await new Promise<void>((resolve) => {
      const child = NodeChildProcess.spawn(
        process.execPath,
        ["--conditions=@toolvisor/source", soak, "--duration", "45", "--seed", "1311", "--report", report],
        { cwd: root, stdio: ["ignore", "pipe", "pipe"] }
      )
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
      child.on("close", () => resolve())
    })
    if (NodeFs.existsSync(report)) {
      const parsed: { readonly checks: ReadonlyArray<Check> } = JSON.parse(NodeFs.readFileSync(report, "utf8"))
      checks = parsed.checks
      NodeFs.rmSync(NodePath.dirname(report), { recursive: true, force: true })
    }
  }, 300_000)

  it("no wrong or duplicated result", () => holds("results"))
  it("no non-idempotent call runs twice", () => holds("ranTwice"))
  it("no call hangs past call_timeout", () => holds("hangs"))
  it("every failed call is a typed error", () => holds("untyped"))
  it("every fault is recovered from", () => holds("recovered"))
  it("every toolset answers once the faults stop", () => holds("finalCalls"))
  it("a crash loop nobody calls reaches Failed after max_restarts + 1 starts", () => holds("budgetWithoutCalls"))
  it("nothing survives a SIGTERM of the gateway, even with a server stopped", () => holds("orphansAfterSigterm"))
  it("a SIGTERM shutdown with a stopped server is bounded", () => holds("shutdown"))

  it("a tool of a restarting toolset is never UnknownTool", () => holds("unknownTool"))
  it("calls flowing do not stretch the restart budget", () => holds("budgetWithCalls"))
  it("a server left by a SIGKILLed gateway is gone once it restarts", () => holds("orphansAfterSigkill"))
})
