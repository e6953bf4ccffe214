import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { PassThrough } from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import * as Classify from "../src/Classify.ts"
import * as LifecycleError from "../src/LifecycleError.ts"

const classify = (u: unknown) => Classify.classify("mcp", u)

const tagOf = (u: unknown): LifecycleError.Tag => classify(u)._tag

/** A Node system error as Node builds them: an `Error` with a string `code`. */
const systemError = (code: string, message: string): Error => Object.assign(new Error(message), { code })

/** The error a real spawn of `command` emits. */
const spawnError = (command: string): Promise<Error> =>
  new Promise((resolve) => {
    spawn(command).once("error", resolve)
  })

/** The error a real connection to a port nobody listens on emits. */
const connectionRefused = async (): Promise<Error> => {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = address !== null && typeof address === "object" ? address.port : 0
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())))
  return new Promise((resolve) => {
    net.connect(port, "127.0.0.1").once("error", resolve)
  })
}

/** The error a real write to a destroyed stream reports. */
const streamDestroyed = (): Promise<Error> =>
  new Promise((resolve) => {
    const stream = new PassThrough()
    stream.on("error", () => {})
    stream.destroy()
    stream.write("x", (err) => {
      if (err) resolve(err)
    })
  })

/** An HTTP client error: a status, headers and a message, as fetch wrappers and SDKs shape them. */
const httpError = (status: number, message: string, headers?: Headers | Record<string, string>): Error =>
  Object.assign(new Error(message), headers === undefined ? { status } : { status, headers })

/** A JSON-RPC error as the MCP SDK raises it. */
class RpcError extends Error {
  readonly code: number
  constructor(code: number, message: string) {
    super(`MCP error ${code}: ${message}`)
    this.code = code
  }
}

describe("Classify", () => {
  describe("Node error codes", () => {
    it("ENOENT on spawn is ServerUnavailable", async () => {
      const error = await spawnError("toolvisor-no-such-binary-for-tests")
      assert.strictEqual(Reflect.get(error, "code"), "ENOENT")
      const classified = classify(error)
      assert.instanceOf(classified, LifecycleError.ServerUnavailable)
      assert.strictEqual(classified.cause, error)
      assert.include(classified.message, "server unavailable")
      assert.include(classified.message, "ENOENT")
    })

    it("EACCES on spawn of a file that is not executable is ServerUnavailable", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolvisor-classify-"))
      try {
        const file = path.join(dir, "not-executable")
        fs.writeFileSync(file, "#!/bin/sh\necho hi\n", { mode: 0o644 })
        const error = await spawnError(file)
        assert.strictEqual(Reflect.get(error, "code"), "EACCES")
        assert.strictEqual(tagOf(error), "ServerUnavailable")
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it("ECONNREFUSED from a real connection to a closed localhost port is ServerUnavailable", async () => {
      const error = await connectionRefused()
      assert.strictEqual(Reflect.get(error, "code"), "ECONNREFUSED")
      const classified = classify(error)
      assert.instanceOf(classified, LifecycleError.ServerUnavailable)
      assert.include(classified.message, "ECONNREFUSED")
    })

    it("ERR_STREAM_DESTROYED from a real write to a destroyed stream is TransportError", async () => {
      const error = await streamDestroyed()
      assert.strictEqual(Reflect.get(error, "code"), "ERR_STREAM_DESTROYED")
      assert.strictEqual(tagOf(error), "TransportError")
    })

    it("ECONNRESET, EPIPE and ETIMEDOUT are TransportError", () => {
      for (const code of ["ECONNRESET", "EPIPE", "ETIMEDOUT"]) {
        const classified = classify(systemError(code, `write ${code}`))
        assert.strictEqual(classified._tag, "TransportError", code)
        assert.include(classified.message, "transport failure")
        assert.include(classified.message, code)
      }
    })

    it("a classified error keeps the toolset it was classified for", () => {
      const classified = Classify.classify("gopls", systemError("ENOENT", "spawn gopls ENOENT"))
      assert.strictEqual(classified.toolset, "gopls")
      assert.include(classified.message, "gopls")
    })
  })

  describe("cause chains", () => {
    it("a wrapped error is classified by its cause: fetch failed caused by ECONNREFUSED is ServerUnavailable", () => {
      const inner = systemError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:3000")
      const outer = new TypeError("fetch failed", { cause: inner })
      const classified = classify(outer)
      assert.instanceOf(classified, LifecycleError.ServerUnavailable)
      assert.strictEqual(classified.cause, outer)
      assert.include(classified.message, "ECONNREFUSED")
    })

    it("a real refused connection wrapped twice is still ServerUnavailable", async () => {
      const refused = await connectionRefused()
      const wrapped = new Error("client failed", { cause: new TypeError("fetch failed", { cause: refused }) })
      assert.strictEqual(tagOf(wrapped), "ServerUnavailable")
    })

    it("an AggregateError is classified by the errors it holds", () => {
      const aggregate = new AggregateError(
        [systemError("ECONNREFUSED", "connect ECONNREFUSED ::1:3000"), new Error("other")],
        "all addresses failed"
      )
      assert.strictEqual(tagOf(aggregate), "ServerUnavailable")
    })

    it("a cause chain that loops back on itself terminates", () => {
      const a = new Error("a")
      const b = new Error("b", { cause: a })
      Object.assign(a, { cause: b })
      const classified = classify(a)
      assert.strictEqual(classified._tag, "TransportError")
      assert.strictEqual(classified.cause, a)
    })

    it("message text along the chain counts: a wrapped broken pipe is TransportError", () => {
      const wrapped = new Error("tools/list failed", { cause: new Error("write: broken pipe") })
      assert.strictEqual(tagOf(wrapped), "TransportError")
    })
  })

  describe("HTTP status", () => {
    it("401 with a WWW-Authenticate header (Headers object) is AuthRequired and keeps the challenge", () => {
      const challenge = 'Bearer realm="mcp", resource_metadata="https://mcp.example.com/.well-known/oauth"'
      const classified = classify(httpError(401, "Unauthorized", new Headers({ "WWW-Authenticate": challenge })))
      assert.instanceOf(classified, LifecycleError.AuthRequired)
      assert.strictEqual(classified.challenge, challenge)
      assert.isTrue(LifecycleError.isPermanent(classified))
    })

    it("401 with a WWW-Authenticate header (plain record, any case) is AuthRequired and keeps the challenge", () => {
      for (const name of ["www-authenticate", "WWW-Authenticate"]) {
        const classified = classify(httpError(401, "Unauthorized", { [name]: 'Bearer realm="mcp"' }))
        assert.instanceOf(classified, LifecycleError.AuthRequired, name)
        assert.strictEqual(classified.challenge, 'Bearer realm="mcp"')
      }
    })

    it("401 with invalid_token in its body is AuthRequired", () => {
      const classified = classify(httpError(401, '{"error":"invalid_token","error_description":"expired"}'))
      assert.instanceOf(classified, LifecycleError.AuthRequired)
      assert.isUndefined(classified.challenge)
    })

    it("403 with a challenge is AuthRequired", () => {
      const classified = classify(
        httpError(403, "Forbidden", { "www-authenticate": 'Bearer error="insufficient_scope"' })
      )
      assert.strictEqual(classified._tag, "AuthRequired")
    })

    it("a bare 401 Unauthorized from an application is not AuthRequired but TransportError", () => {
      assert.strictEqual(tagOf(httpError(401, "Unauthorized")), "TransportError")
      assert.strictEqual(tagOf(new Error("401 Unauthorized")), "TransportError")
      assert.strictEqual(tagOf({ statusCode: 401, message: "unauthorized" }), "TransportError")
    })

    it("404 mentioning a session is SessionMissing", () => {
      const classified = classify(httpError(404, "Session not found"))
      assert.instanceOf(classified, LifecycleError.SessionMissing)
      assert.include(classified.message, "HTTP 404")
    })

    it("404 without a session is ServerUnavailable, not SessionMissing", () => {
      assert.strictEqual(tagOf(httpError(404, "Not Found")), "ServerUnavailable")
    })

    it("a 5xx is TransportError", () => {
      assert.strictEqual(tagOf(httpError(502, "Bad Gateway")), "TransportError")
      assert.strictEqual(tagOf({ status: 503, message: "Service Unavailable" }), "TransportError")
    })
  })

  describe("JSON-RPC codes", () => {
    it("-32000 (MCP connection closed) is TransportError", () => {
      const classified = classify(new RpcError(-32000, "Connection closed"))
      assert.strictEqual(classified._tag, "TransportError")
      assert.include(classified.message, "code -32000")
    })

    it("-32601 (method not found) is CapabilityMissing, and permanent", () => {
      const classified = classify(new RpcError(-32601, "Method not found"))
      assert.instanceOf(classified, LifecycleError.CapabilityMissing)
      assert.isTrue(LifecycleError.isPermanent(classified))
      assert.strictEqual(tagOf({ code: -32601, message: "Method not found" }), "CapabilityMissing")
    })
  })

  describe("message text", () => {
    it("a URL that is not an MCP endpoint says what to check: https against plain HTTP, an HTML page", () => {
      const tls = classify(
        new TypeError("fetch failed", {
          cause: Object.assign(
            new Error("C0CC8E9F:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl"),
            { code: "ERR_SSL_WRONG_VERSION_NUMBER" }
          )
        })
      )
      assert.strictEqual(tls._tag, "TransportError")
      assert.include(tls.message, "try http:// instead of https://")
      const html = classify(
        Object.assign(new Error("Streamable HTTP error: Unexpected content type: text/html"), { code: -1 })
      )
      assert.strictEqual(html._tag, "TransportError")
      assert.include(html.message, "the URL answered with an HTML page (a login or error page?), not MCP")
    })

    it("the SDK's refusal of a server's protocol version is CapabilityMissing, and permanent", () => {
      const classified = classify(new Error("Server's protocol version is not supported: 1999-01-01"))
      assert.instanceOf(classified, LifecycleError.CapabilityMissing)
      assert.isTrue(LifecycleError.isPermanent(classified))
    })

    it("failed to send initialized notification is InitNotification", () => {
      const classified = classify(new Error("failed to send initialized notification: bad"))
      assert.instanceOf(classified, LifecycleError.InitNotification)
      assert.isTrue(LifecycleError.isTransient(classified))
    })

    it("session not found and session missing are SessionMissing", () => {
      assert.strictEqual(tagOf(new Error("session not found")), "SessionMissing")
      assert.strictEqual(tagOf(new Error("Session Missing on server")), "SessionMissing")
    })

    it("connection reset by peer, broken pipe and unexpected EOF are TransportError", () => {
      for (const text of ["read tcp: connection reset by peer", "write |1: broken pipe", "unexpected EOF"]) {
        assert.strictEqual(tagOf(new Error(text)), "TransportError", text)
      }
    })

    it("connection refused is ServerUnavailable", () => {
      assert.strictEqual(tagOf(new Error("dial tcp 127.0.0.1:80: Connection Refused")), "ServerUnavailable")
    })

    it("invalid_token, invalid token and INVALID_TOKEN are AuthRequired, and permanent", () => {
      const texts = ['{"error":"invalid_token","error_description":"expired"}', "invalid token", "INVALID_TOKEN: nope"]
      for (const text of texts) {
        const classified = classify(new Error(text))
        assert.strictEqual(classified._tag, "AuthRequired", text)
        assert.isTrue(LifecycleError.isPermanent(classified), text)
      }
    })

    it("the first matching rule wins: an init-notification failure over a broken pipe is InitNotification", () => {
      assert.strictEqual(tagOf(new Error("failed to send initialized notification: broken pipe")), "InitNotification")
    })

    it("EOF wins over invalid_token, as in the Go classifier", () => {
      assert.strictEqual(tagOf(new Error("unexpected EOF reading invalid_token response")), "TransportError")
    })

    it("structure wins over text: an ECONNRESET saying session not found is TransportError", () => {
      assert.strictEqual(tagOf(systemError("ECONNRESET", "session not found")), "TransportError")
    })
  })

  describe("idempotence", () => {
    it("classifying a classified error returns the identical value", () => {
      const inputs: ReadonlyArray<unknown> = [
        systemError("ENOENT", "spawn x ENOENT"),
        systemError("EPIPE", "write EPIPE"),
        httpError(404, "session not found"),
        new RpcError(-32601, "Method not found"),
        new Error("failed to send initialized notification"),
        new Error("something odd")
      ]
      for (const input of inputs) {
        const once = classify(input)
        assert.strictEqual(classify(once), once, once._tag)
        assert.strictEqual(Classify.classify("another-toolset", once), once)
      }
    })

    it("an AuthRequired from invalid_token stays the identical AuthRequired with its cause", () => {
      const original = new Error("invalid_token")
      const once = classify(original)
      const twice = classify(once)
      assert.strictEqual(twice, once)
      assert.strictEqual(twice._tag, "AuthRequired")
      assert.strictEqual(twice.cause, original)
    })

    it("a hand-made lifecycle error passes through unchanged", () => {
      const error = new LifecycleError.CallTimeout({ toolset: "lsp", message: "slow", afterMillis: 10 })
      assert.strictEqual(classify(error), error)
    })
  })

  describe("unclassified failures", () => {
    it("an unknown error becomes a transient TransportError marked unclassified, with the identical cause", () => {
      const original = new Error("the moon is in the wrong phase")
      const classified = classify(original)
      assert.instanceOf(classified, LifecycleError.TransportError)
      assert.isTrue(classified.unclassified)
      assert.strictEqual(classified.cause, original)
      assert.isTrue(LifecycleError.isTransient(classified))
      assert.include(classified.message, "the moon is in the wrong phase")
    })

    it("a classified error is not marked unclassified", () => {
      const classified = classify(systemError("ECONNRESET", "read ECONNRESET"))
      assert.instanceOf(classified, LifecycleError.TransportError)
      assert.isUndefined(classified.unclassified)
    })
  })

  describe("messages", () => {
    it("the message of a classified error contains both the class wording and the original text", () => {
      const cases: ReadonlyArray<readonly [unknown, string, string]> = [
        [systemError("ENOENT", "spawn gopls ENOENT"), "server unavailable", "spawn gopls ENOENT"],
        [new Error("unexpected EOF"), "transport failure", "unexpected EOF"],
        [new Error("session not found: abc"), "session missing", "session not found: abc"],
        [new Error("failed to send initialized notification: x"), "failed to send initialized notification", ": x"],
        [new RpcError(-32601, "Method not found"), "capability not supported", "Method not found"],
        [new Error("invalid_token"), "authentication required", "invalid_token"]
      ]
      for (const [input, wording, original] of cases) {
        const message = classify(input).message
        assert.include(message, wording)
        assert.include(message, original)
      }
    })

    it("a message carrying a secret comes out redacted, while the cause keeps the original", () => {
      const original = new Error("GET https://bob:pa55word@api.example.com/?api_key=k3y failed: Bearer s3cr3t-t0ken")
      const classified = classify(original)
      for (const secret of ["pa55word", "k3y", "s3cr3t-t0ken"]) assert.notInclude(classified.message, secret)
      assert.include(classified.message, "api.example.com")
      assert.strictEqual(classified.cause, original)
    })

    it("a secret in a structural path is redacted too", () => {
      const classified = classify(systemError("ECONNREFUSED", "connect ECONNREFUSED https://u:hunter2@h/?token=abc"))
      assert.strictEqual(classified._tag, "ServerUnavailable")
      assert.notInclude(classified.message, "hunter2")
      assert.notInclude(classified.message, "token=abc")
    })
  })

  describe("non-Error inputs", () => {
    it("a string is classified by its text", () => {
      assert.strictEqual(tagOf("connection refused"), "ServerUnavailable")
      const classified = classify("no idea")
      assert.strictEqual(classified._tag, "TransportError")
      assert.strictEqual(classified.cause, "no idea")
      assert.include(classified.message, "no idea")
    })

    it("a number, null and undefined become unclassified TransportErrors", () => {
      for (const input of [42, null, undefined]) {
        const classified = classify(input)
        assert.instanceOf(classified, LifecycleError.TransportError)
        assert.isTrue(classified.unclassified)
        assert.strictEqual(classified.cause, input)
      }
      assert.include(classify(42).message, "42")
    })

    it("an object without a message is classified by its JSON", () => {
      const classified = classify({ reason: "session not found" })
      assert.strictEqual(classified._tag, "SessionMissing")
      assert.include(classify({ weird: true }).message, '{"weird":true}')
    })

    it("an object whose JSON.stringify throws is classified without throwing", () => {
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      const throwing = {
        toJSON(): never {
          throw new Error("no JSON for you")
        }
      }
      for (const input of [cyclic, throwing, { big: 1n }]) {
        const classified = classify(input)
        assert.strictEqual(classified._tag, "TransportError")
        assert.strictEqual(classified.cause, input)
      }
    })

    it("an object whose message is not a string is classified without throwing", () => {
      assert.strictEqual(tagOf({ message: 42 }), "TransportError")
      assert.strictEqual(tagOf({ code: { nested: true } }), "TransportError")
    })
  })
})
