/**
 * The LSP package's errors are Schema tagged errors like every other package's: they carry the
 * toolset and a message, decode from their encoded form (so they cross a process or cluster
 * boundary intact), and are caught by tag.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Documents from "../src/internal/documents.ts"
import * as Edits from "../src/internal/edits.ts"
import * as Requests from "../src/internal/requests.ts"

describe("lsp errors", () => {
  it.effect("a server's error answer is a ResponseFailed with the toolset and message, caught by its tag", () =>
    Effect.gen(function* () {
      const error = new Requests.ResponseFailed({
        toolset: "ts",
        method: "textDocument/hover",
        code: -32601,
        message: "Unhandled method textDocument/hover"
      })
      assert.isTrue(Schema.is(Requests.ResponseFailed)(error))
      const encoded = Schema.encodeSync(Requests.ResponseFailed)(error)
      assert.deepStrictEqual(Schema.decodeUnknownSync(Requests.ResponseFailed)(encoded), error)
      const caught = yield* Effect.fail(error).pipe(
        Effect.catchTag("ResponseFailed", (e) => Effect.succeed(`${e.toolset}: ${e.method} ${e.code} ${e.message}`))
      )
      assert.strictEqual(caught, "ts: textDocument/hover -32601 Unhandled method textDocument/hover")
    })
  )

  it.effect("a file the tool cannot use is a FileProblem with the toolset, the argument and the path", () =>
    Effect.gen(function* () {
      const error = new Documents.FileProblem({
        toolset: "ts",
        argument: "file",
        path: "/w/missing.ts",
        message: "file: cannot read /w/missing.ts: ENOENT"
      })
      assert.isTrue(Schema.is(Documents.FileProblem)(error))
      const caught = yield* Effect.fail(error).pipe(
        Effect.catchTag("FileProblem", (e) => Effect.succeed([e.toolset, e.argument, e.path]))
      )
      assert.deepStrictEqual(caught, ["ts", "file", "/w/missing.ts"])
    })
  )

  it.effect("a failed write of an edit is an EditFailed naming the path, caught by its tag", () =>
    Effect.gen(function* () {
      const error = new Edits.EditFailed({ path: "/w/a.ts", message: "cannot write /w/a.ts: EACCES" })
      assert.isTrue(Schema.is(Edits.EditFailed)(error))
      const caught = yield* Effect.fail(error).pipe(Effect.catchTag("EditFailed", (e) => Effect.succeed(e.path)))
      assert.strictEqual(caught, "/w/a.ts")
    })
  )
})
