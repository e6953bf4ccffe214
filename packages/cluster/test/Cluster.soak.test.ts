/**
 * The cluster soak, short, as part of the test suite: the real processes of `chaos:cluster`
 * (PostgreSQL, three runners, a gateway, a client) through every fault kind once (`--duration 0`:
 * one of each, about 70 s), on the short timers (a 4 s lease), with a fixed seed. Its checks are
 * the soak's own; its summary is printed.
 */
import * as ChildProcess from "node:child_process"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"

const soak = NodePath.resolve(import.meta.dirname, "../../../test/chaos/cluster/soak.ts")

describe("the cluster soak (every fault once, short timers)", () => {
  it("holds every check through runner crashes, pauses and SIGTERMs, store restarts and crashes, and killed servers, clients and gateways", async () => {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = ChildProcess.spawn(
        process.execPath,
        [
          "--conditions=@toolvisor/source",
          soak,
          "--duration",
          "0",
          "--timers",
          "fast",
          "--seed",
          "28",
          "--base-port",
          "26501"
        ],
        { stdio: ["ignore", "pipe", "pipe"] }
      )
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.on("close", (exit) => resolve({ code: exit, output }))
    })
    console.log(output)
    assert.strictEqual(
      code,
      0,
      output
        .split("\n")
        .filter((l) => l.includes("FAIL"))
        .join("\n")
    )
  }, 420_000)
})
