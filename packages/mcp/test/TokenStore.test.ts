/**
 * The token store vets what it finds before trusting it: our own loose modes are narrowed (a 0777
 * directory to 0700, a 0644 file to 0600), and what is not ours to narrow — a link, another
 * user's file, a directory that is a file — is refused with the path and the reason. A save never
 * writes through a link.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TokenStore from "../src/TokenStore.ts"

/** A folder of the test's own, removed with its scope; the store lives in `<folder>/oauth`. */
const folder = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "tv-store-"))),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

const key = { serverUrl: "https://mcp.example/mcp" }
const entry = { ...key, tokens: { access_token: "tok-1", token_type: "Bearer" } }

const modeOf = (path: string) => NodeFs.statSync(path).mode & 0o777

const refusal = (effect: Promise<unknown>) =>
  Effect.promise(() =>
    effect.then(
      () => assert.fail("expected a refusal"),
      (error: unknown) => {
        assert.instanceOf(error, TokenStore.TokenFileRefused)
        return error instanceof TokenStore.TokenFileRefused ? error : assert.fail()
      }
    )
  )

describe("TokenStore: what it finds", () => {
  it.effect("an existing 0777 directory of ours is narrowed to 0700, and a 0644 token file to 0600", () =>
    Effect.gen(function* () {
      const dir = NodePath.join(yield* folder, "oauth")
      NodeFs.mkdirSync(dir)
      NodeFs.chmodSync(dir, 0o777)
      const store = TokenStore.make(dir)
      yield* Effect.promise(() => store.save(entry))
      assert.strictEqual(modeOf(dir), 0o700)

      NodeFs.chmodSync(dir, 0o777)
      NodeFs.chmodSync(store.pathOf(key), 0o644)
      assert.strictEqual((yield* Effect.promise(() => store.load(key)))?.tokens?.access_token, "tok-1")
      assert.strictEqual(modeOf(dir), 0o700)
      assert.strictEqual(modeOf(store.pathOf(key)), 0o600)
    })
  )

  it.effect("a token file that is a link is refused on load, and a save replaces the link, not its target", () =>
    Effect.gen(function* () {
      const root = yield* folder
      const store = TokenStore.make(NodePath.join(root, "oauth"))
      yield* Effect.promise(() => store.save(entry))
      const target = NodePath.join(root, "elsewhere.json")
      NodeFs.writeFileSync(
        target,
        JSON.stringify({ ...key, tokens: { access_token: "planted", token_type: "Bearer" } })
      )
      NodeFs.rmSync(store.pathOf(key))
      NodeFs.symlinkSync(target, store.pathOf(key))

      const refused = yield* refusal(store.load(key))
      assert.strictEqual(refused.path, store.pathOf(key))
      assert.strictEqual(refused.reason, "it is a symbolic link")
      assert.include(refused.message, "remove it, then log in again (toolvisor auth)")

      yield* Effect.promise(() => store.save(entry))
      assert.isFalse(NodeFs.lstatSync(store.pathOf(key)).isSymbolicLink())
      assert.include(NodeFs.readFileSync(target, "utf8"), "planted")
      assert.strictEqual((yield* Effect.promise(() => store.load(key)))?.tokens?.access_token, "tok-1")
    })
  )

  it.effect("a store directory that is a link or a file is refused, on save and on load", () =>
    Effect.gen(function* () {
      const root = yield* folder
      const real = NodePath.join(root, "real")
      NodeFs.mkdirSync(real, { mode: 0o700 })
      NodeFs.symlinkSync(real, NodePath.join(root, "oauth"))
      const linked = TokenStore.make(NodePath.join(root, "oauth"))
      assert.strictEqual((yield* refusal(linked.save(entry))).reason, "it is a symbolic link")
      assert.strictEqual((yield* refusal(linked.load(key))).reason, "it is a symbolic link")
      assert.deepStrictEqual(NodeFs.readdirSync(real), [], "nothing was written through the link")

      NodeFs.writeFileSync(NodePath.join(root, "plain"), "")
      const file = TokenStore.make(NodePath.join(root, "plain"))
      assert.strictEqual((yield* refusal(file.load(key))).reason, "it is not a directory")
    })
  )

  it.effect("another user's token file or directory is refused, not narrowed", () =>
    Effect.gen(function* () {
      const root = yield* folder
      const store = TokenStore.make(NodePath.join(root, "oauth"))
      yield* Effect.promise(() => store.save(entry))
      const me = process.getuid?.() ?? 0
      const other = me + 4242
      // Only root can give a file away; the tests run as root here and in CI.
      assert.strictEqual(me, 0, "this test needs to run as root")
      NodeFs.chownSync(store.pathOf(key), other, other)
      NodeFs.chmodSync(store.pathOf(key), 0o644)
      assert.strictEqual(
        (yield* refusal(store.load(key))).reason,
        `it belongs to user ${other}, not to this user (${me})`
      )
      assert.strictEqual(modeOf(store.pathOf(key)), 0o644, "another user's file is not ours to change")
      NodeFs.chownSync(store.dir, other, other)
      assert.include((yield* refusal(store.save(entry))).path, store.dir)
    })
  )

  it.effect("nothing stored is no entry, and no directory is created by a load", () =>
    Effect.gen(function* () {
      const store = TokenStore.make(NodePath.join(yield* folder, "oauth"))
      assert.isUndefined(yield* Effect.promise(() => store.load(key)))
      assert.isFalse(NodeFs.existsSync(store.dir))
    })
  )
})
