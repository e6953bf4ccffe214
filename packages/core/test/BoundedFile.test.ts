/**
 * Reading a file someone else named: a regular file up to a bound, a pipe only when allowed and
 * only until its deadline, and never blocking on a FIFO nobody writes to or a device that never ends.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as NodeTimers from "node:timers/promises"
import { assert, describe, it } from "@effect/vitest"
import * as BoundedFile from "../src/internal/boundedFile.ts"

const dir = () => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-bounded-"))

const fifo = () => {
  const path = NodePath.join(dir(), "fifo")
  NodeChildProcess.execFileSync("mkfifo", [path])
  return path
}

const refusal = (path: string, options: BoundedFile.Options) =>
  BoundedFile.readText(path, options).then(
    () => assert.fail("read"),
    (error: unknown) => (error instanceof BoundedFile.Unreadable ? error.message : String(error))
  )

/** A FIFO read before its writer opened it: nothing yet, try again. */
const noWriter = (error: unknown): string => {
  if (error instanceof BoundedFile.NoWriter) return ""
  throw error
}

describe("BoundedFile", () => {
  it("reads a regular file whole, and gives undefined for one past the bound", async () => {
    const path = NodePath.join(dir(), "a.txt")
    NodeFs.writeFileSync(path, "x".repeat(100))
    assert.strictEqual(await BoundedFile.readText(path, { maxBytes: 100 }), "x".repeat(100))
    assert.isUndefined(await BoundedFile.readText(path, { maxBytes: 99 }))
  })

  it("refuses a FIFO, a device and a directory at once unless pipes are allowed", async () => {
    // Opened for reading, a FIFO nobody writes to blocked until a writer came: forever.
    assert.strictEqual(await refusal(fifo(), { maxBytes: 10 }), "not a regular file (a FIFO)")
    assert.strictEqual(await refusal("/dev/zero", { maxBytes: 10 }), "not a regular file (a character device)")
    assert.strictEqual(
      await refusal("/dev/zero", { maxBytes: 10, pipeMillis: 100 }),
      "not a regular file (a character device)"
    )
    assert.strictEqual(await refusal(dir(), { maxBytes: 10 }), "not a regular file (a directory)")
  })

  it("reads a pipe to its end when pipes are allowed; one that never ends fails at its deadline", async () => {
    const fed = fifo()
    // The writer opens the FIFO, then writes: a read that comes before its open does not leave it
    // writing to no reader (killed by SIGPIPE), since the next read is there when it writes.
    const writer = NodeChildProcess.spawn("sh", ["-c", `exec 3>'${fed}'; sleep 0.2; printf 'agents: {}' >&3`], {
      stdio: "ignore"
    })
    const closed = new Promise((resolve) => writer.once("close", resolve))
    // The writer may not have opened the FIFO yet: a FIFO without one is refused, so wait for it.
    let text = ""
    for (let tries = 0; text === "" && tries < 500; tries++) {
      text = (await BoundedFile.readText(fed, { maxBytes: 100, pipeMillis: 5_000 }).catch(noWriter)) ?? ""
      if (text === "") await NodeTimers.setTimeout(10)
    }
    assert.strictEqual(text, "agents: {}")
    await closed

    const held = fifo()
    const holder = NodeChildProcess.spawn("sh", ["-c", `exec 3>'${held}'; sleep 30`], { stdio: "ignore" })
    try {
      // Opened once the holder has it open for writing: then reads wait for data that never comes.
      // Before, a read finds no writer and is refused as such: try again.
      const started = Date.now()
      let message = ""
      while (message === "" && Date.now() - started < 10_000) {
        const text = await BoundedFile.readText(held, { maxBytes: 100, pipeMillis: 300 })
          .catch(noWriter)
          .catch((error: unknown) => (error instanceof BoundedFile.Unreadable ? error : undefined))
        if (text instanceof BoundedFile.Unreadable) message = text.message
      }
      assert.strictEqual(message, "a FIFO that did not end within 300 ms")
    } finally {
      holder.kill("SIGKILL")
    }
  })

  it("a named pipe with no writer is refused as such, at once; an anonymous pipe that ends empty reads as empty", async () => {
    // A FIFO nobody has open for writing reads as ended: it used to come back as an empty text.
    const started = Date.now()
    const refused = await BoundedFile.readText(fifo(), { maxBytes: 100, pipeMillis: 5_000 }).then(
      (text) => `read ${JSON.stringify(text)}`,
      (error: unknown) => error
    )
    assert.instanceOf(refused, BoundedFile.NoWriter, String(refused))
    assert.strictEqual(refused.message, "a named pipe (FIFO) with no writer: nothing was read")
    assert.isBelow(Date.now() - started, 5_000)

    // `<(true)`: a pipe whose writer ended without writing. Empty is what it holds, so empty is the answer.
    const holder = NodeChildProcess.spawn("bash", ["-c", "exec 3< <(true); echo ready; sleep 30"], {
      stdio: ["ignore", "pipe", "ignore"]
    })
    try {
      await new Promise((resolve) => holder.stdout.once("data", resolve))
      const anonymous = `/proc/${holder.pid}/fd/3`
      assert.match(NodeFs.readlinkSync(anonymous), /^pipe:/)
      assert.strictEqual(await BoundedFile.readText(anonymous, { maxBytes: 100, pipeMillis: 5_000 }), "")
    } finally {
      holder.kill("SIGKILL")
    }
  })

  it("judges a file by what it opened: confine sees through a symlink, sync reads and writes refuse a FIFO", async () => {
    const base = dir()
    const inside = NodePath.join(base, "inside")
    const outside = NodePath.join(base, "outside")
    NodeFs.mkdirSync(inside)
    NodeFs.mkdirSync(outside)
    NodeFs.writeFileSync(NodePath.join(outside, "secret.ts"), "hunter2")
    // A symlink swapped in after its path was checked: the descriptor says where it really leads.
    const link = NodePath.join(inside, "a.ts")
    NodeFs.symlinkSync(NodePath.join(outside, "secret.ts"), link)
    const confine = (real: string) => real.startsWith(`${inside}/`)
    const refusedSync = (run: () => unknown) => {
      try {
        run()
        return "read"
      } catch (error) {
        return error instanceof BoundedFile.Unreadable ? error.message : String(error)
      }
    }
    const outsideReal = NodeFs.realpathSync(NodePath.join(outside, "secret.ts"))
    assert.strictEqual(
      refusedSync(() => BoundedFile.readTextSync(link, { maxBytes: 100, confine })),
      `it is ${outsideReal}, outside where it may be`
    )
    assert.strictEqual(await refusal(link, { maxBytes: 100, confine }), `it is ${outsideReal}, outside where it may be`)
    const written = await BoundedFile.writeText(link, "overwritten", { confine }).then(
      () => "written",
      (error: unknown) => String(error)
    )
    assert.include(written, "outside where it may be")
    assert.strictEqual(NodeFs.readFileSync(NodePath.join(outside, "secret.ts"), "utf8"), "hunter2")

    const pipe = fifo()
    assert.strictEqual(
      refusedSync(() => BoundedFile.readTextSync(pipe, { maxBytes: 100 })),
      "not a regular file (a FIFO)"
    )
    const file = NodePath.join(inside, "b.ts")
    NodeFs.writeFileSync(file, "a longer text than the next")
    await BoundedFile.writeText(file, "short", { confine })
    assert.strictEqual(BoundedFile.readTextSync(file, { maxBytes: 100, confine }), "short")
    assert.isUndefined(BoundedFile.readTextSync(file, { maxBytes: 4 }))
  })
})
