/**
 * The app's sampling, elicitation and roots through the registry: services provided where the
 * registry is made reach every MCP toolset it builds, a caller attaches its origin to a call
 * (`CallOrigin.attach` for `callTool`, the `origin` argument of `callToolNow`), roots default to
 * the folder a server runs in and the config's folder, and a toolset's `log_level` is asked of its
 * server on every connect. Over server-everything, a real server.
 */
import * as NodeOs from "node:os"
import * as NodeUrl from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { CallOrigin } from "@toolvisor/core"
import { Roots, Sampling } from "@toolvisor/mcp"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { server as everything } from "../../../test/support/Everything.ts"
import { config, fixtureEntry, open, text } from "../../../test/support/Registry.ts"

const everythingEntry = (
  name: string,
  extra: { readonly cwd?: string; readonly logLevel?: "warning" | "error" } = {}
) => {
  const base = fixtureEntry(name, { command: process.execPath })
  return {
    ...base,
    transport: { ...base.transport, args: [everything, "stdio"], cwd: extra.cwd },
    signature: `${base.signature}:everything`,
    ...(extra.logLevel === undefined ? {} : { logLevel: extra.logLevel })
  }
}

const session = (key: string): CallOrigin.CallOrigin => ({ key })

describe("registry: the app's client features", () => {
  it.live("sampling provided to the registry answers its toolsets' requests, with each call's origin", () =>
    Effect.gen(function* () {
      const origins: Array<string | undefined> = []
      const sampling = Sampling.layer((request) =>
        Effect.sync(() => {
          origins.push(request.origin?.key)
          return {
            role: "assistant" as const,
            content: { type: "text" as const, text: `for ${request.toolset}` },
            model: "app-model"
          }
        })
      )
      const { registry, close } = yield* open(config([everythingEntry("e")])).pipe(Effect.provide(sampling))
      yield* registry.start
      const result = yield* registry
        .callTool("trigger-sampling-request", { prompt: "hello" })
        .pipe(CallOrigin.attach(session("one")))
      assert.include(text(result), "for e")
      const now = registry.callToolNow(
        "trigger-sampling-request",
        { prompt: "fast" },
        undefined,
        undefined,
        session("two")
      )
      const exit = yield* Effect.promise(() => now ?? Promise.reject(new Error("the call should be sent at once")))
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(origins, ["one", "two"])
      yield* close
    })
  )

  it.live("roots default to the folder the server runs in and the config's folder", () =>
    Effect.gen(function* () {
      const cwd = NodeOs.tmpdir()
      const folder = NodeOs.homedir()
      const { registry, close } = yield* open({ ...config([everythingEntry("e", { cwd })]), folder }).pipe(
        Effect.provide(Roots.layer)
      )
      yield* registry.start
      const listed = text(yield* registry.callTool("get-roots-list", {}))
      assert.include(listed, `URI: ${NodeUrl.pathToFileURL(cwd).href}`)
      assert.include(listed, `URI: ${NodeUrl.pathToFileURL(folder).href}`)
      yield* close
    })
  )

  it.live("a toolset's log_level is asked of its server: messages below it never arrive", () =>
    Effect.gen(function* () {
      // With roots, the server logs "Roots updated" at info level once it has read them, which it
      // has done when `get-roots-list` answers: without the level asked, that is the first message;
      // with it, the first is one of the simulated ones at a severe level (one every 5 s, of a random
      // level: "warning" lets 5 of the 8 through, so the wait is short).
      const { registry, close } = yield* open(config([everythingEntry("e", { logLevel: "warning" })])).pipe(
        Effect.provide(Roots.layer)
      )
      const first = yield* Effect.forkChild(Stream.runHead(registry.logs), { startImmediately: true })
      yield* registry.start
      yield* registry.callTool("get-roots-list", {})
      yield* registry.callTool("toggle-simulated-logging", {})
      const event = yield* Fiber.join(first)
      assert.include(
        ["warning", "error", "critical", "alert", "emergency"],
        event._tag === "Some" ? event.value.level : "none"
      )
      yield* close
    })
  )
})
