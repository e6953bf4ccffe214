/**
 * Helpers for the MCP integration tests: the real servers' commands, a free loopback port, and
 * waiting on a toolset's state by subscription rather than by sleeping.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Policy, type State, type Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Net from "../../../test/support/Net.ts"
import * as McpSpec from "../src/McpSpec.ts"
import * as McpToolset from "../src/McpToolset.ts"

const root = NodePath.resolve(import.meta.dirname, "../../..")

/** `@modelcontextprotocol/server-everything`, run with the same Node as the tests. */
export const everythingBin = NodePath.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")

export const fixtureServer = NodePath.resolve(import.meta.dirname, "../../../test/support/fixture-server.mjs")

export const everythingStdio = () => McpSpec.Stdio.make({ command: process.execPath, args: [everythingBin, "stdio"] })

export const fixture = (env: Readonly<Record<string, string>> = {}) =>
  McpSpec.Stdio.make({ command: process.execPath, args: [fixtureServer], env })

/** Quick reconnects for tests that crash servers on purpose. */
export const fastPolicy = (overrides: typeof Policy.Lifecycle.Encoded = {}) =>
  Policy.fromLifecycleUnknownSync({
    backoff: { initial: "100ms", max: "400ms" },
    startup_timeout: "20s",
    call_timeout: "20s",
    ...overrides
  })

export const until = (toolset: Toolset.Toolset, p: (s: State.StatusSnapshot) => boolean) =>
  toolset.changes.pipe(Stream.filter(p), Stream.runHead, Effect.map(Option.getOrThrow))

export const inState = (toolset: Toolset.Toolset, state: State.State) => until(toolset, (s) => s.state === state)

/** A port on 127.0.0.1 that was free a moment ago. */
export const freePort = Effect.promise(Net.freePort)

/** Resolves once a TCP connect to the port succeeds (the server's log line is not proof it listens). */
export const awaitListening = (port: number, within = 20_000) => Effect.promise(() => Net.awaitListening(port, within))

export const tempFile = (name: string) =>
  NodePath.join(NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-")), name)

/** The text of a result's first content item. */
export const textOf = (result: Toolset.ToolResult): string => {
  const first = result.content[0]
  return first !== undefined && typeof first.text === "string" ? first.text : ""
}

/** A started toolset over server-everything (unless `options` say otherwise), and how to close it. */
export const openEverything = (options: Partial<McpToolset.Options> = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const toolset = yield* McpToolset.make({
      name: "everything",
      spec: everythingStdio(),
      policy: fastPolicy(),
      ...options
    }).pipe(Scope.provide(scope))
    yield* toolset.start
    return { toolset, close: Scope.close(scope, Exit.void) }
  })
