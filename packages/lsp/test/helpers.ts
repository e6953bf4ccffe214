/**
 * Helpers for the LSP integration tests: the real servers' commands, fixture projects copied
 * to a temporary directory per test, and waiting on a toolset's state by subscription.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { Policy, ServerProcess, type State, type Toolset } from "@toolvisor/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as LspSpec from "../src/LspSpec.ts"
import * as LspToolset from "../src/LspToolset.ts"

const bin = (name: string) => NodePath.resolve(import.meta.dirname, "../../../node_modules/.bin", name)

import { fixtures } from "../../../test/support/LspProjects.ts"

export { brokenSource, fixtures, project } from "../../../test/support/LspProjects.ts"

export const typescript = (cwd: string, settings?: { readonly [section: string]: unknown }) =>
  LspSpec.make({
    command: bin("typescript-language-server"),
    args: ["--stdio"],
    cwd,
    fileTypes: ["ts", ".TSX"],
    ...(settings === undefined ? {} : { settings })
  })

/** bash-language-server, which finishes starting only once its settings request is answered. */
export const bash = (cwd: string) =>
  LspSpec.make({ command: bin("bash-language-server"), args: ["start"], cwd, fileTypes: ["sh"] })

export const pyright = (cwd: string) =>
  LspSpec.make({ command: bin("pyright-langserver"), args: ["--stdio"], cwd, fileTypes: ["py"] })

/** clangd from the system (`apt-get install clangd`, which `.ci/run` does). */
export const clangd = (cwd: string) => LspSpec.make({ command: "clangd", cwd, fileTypes: ["cpp", "h"] })

/**
 * The fake server; `marker` is an extra argument that lets a test find its processes, `cwd` the
 * workspace root, which the files the test asks about must lie in.
 */
export const fake = (
  mode: "silent" | "wedge" | "dynamic" | "hang" | "pull" | "busy" | "busy-on-open" | "flood" | "raw",
  marker = `toolvisor-test-${process.pid}-${Date.now()}`,
  cwd = fixtures,
  env: { readonly [name: string]: string } = {}
) =>
  LspSpec.make({
    command: process.execPath,
    args: [NodePath.join(fixtures, "fake-server.mjs"), marker],
    env: { FAKE_LSP_MODE: mode, ...env },
    cwd
  })

/** Pids of live processes whose command line contains `marker`. */
export const processesWith = (marker: string): ReadonlyArray<number> =>
  NodeFs.readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return NodeFs.readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)
      } catch {
        return false
      }
    })
    .map(Number)
    .filter(ServerProcess.isAlive)

/** Quick reconnects for tests that crash servers on purpose. */
export const fastPolicy = (overrides: typeof Policy.Lifecycle.Encoded = {}) =>
  Policy.fromLifecycleUnknownSync({
    backoff: { initial: "100ms", max: "400ms" },
    startup_timeout: "30s",
    call_timeout: "30s",
    ...overrides
  })

/** A toolset in its own scope, so a test can close it and then check what is left. */
export const open = (options: LspToolset.Options) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    // Also closed with the test's scope, so a failing assertion leaves no server behind.
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const toolset = yield* LspToolset.make(options).pipe(Scope.provide(scope))
    return { toolset, close: Scope.close(scope, Exit.void) }
  })

export const until = (toolset: Toolset.Toolset, p: (s: State.StatusSnapshot) => boolean) =>
  toolset.changes.pipe(Stream.filter(p), Stream.runHead, Effect.map(Option.getOrThrow))

export const inState = (toolset: Toolset.Toolset, state: State.State) => until(toolset, (s) => s.state === state)

/** The text of a result's first content item. */
export const textOf = (result: Toolset.ToolResult): string => {
  const first = result.content[0]
  return first !== undefined && typeof first.text === "string" ? first.text : ""
}

export const toolNames = (listing: Toolset.Listing<Toolset.Tool>) => listing.items.map((t) => t.name)

/**
 * A workspace with a way out of it at every turn, for the confinement tests. `<base>/ws` is a copy
 * of the TypeScript project whose tsconfig also takes in `../outside`; `<base>/outside` is another
 * project (`secret.ts`, an unformatted `ugly.ts`, and `consumer.ts`, which uses the workspace's
 * `add`); `<base>/other` a third folder. Inside the workspace, `src/uses.ts` has a type error about
 * a value from `consumer.ts`, `linked.ts` is a symlink to the outside `secret.ts` and `outdir` one
 * to the outside folder.
 */
export const escapes = () => {
  const base = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "toolvisor-lsp-confine-"))
  const root = NodePath.join(base, "ws")
  const outside = NodePath.join(base, "outside")
  const other = NodePath.join(base, "other")
  NodeFs.cpSync(NodePath.join(fixtures, "ts-project"), root, { recursive: true })
  const tsconfig = JSON.parse(NodeFs.readFileSync(NodePath.join(root, "tsconfig.json"), "utf8"))
  NodeFs.writeFileSync(
    NodePath.join(root, "tsconfig.json"),
    JSON.stringify({ ...tsconfig, include: ["src", "../outside"] }, null, 2)
  )
  NodeFs.mkdirSync(outside)
  NodeFs.mkdirSync(other)
  NodeFs.writeFileSync(NodePath.join(outside, "secret.ts"), '/** Not yours. */\nexport const secret = "hunter2"\n')
  NodeFs.writeFileSync(
    NodePath.join(outside, "ugly.ts"),
    NodeFs.readFileSync(NodePath.join(fixtures, "ts-project/unformatted.ts.txt"), "utf8")
  )
  NodeFs.writeFileSync(
    NodePath.join(outside, "consumer.ts"),
    'import { add } from "../ws/src/math.ts"\n\nexport const four = add(2, 2)\n'
  )
  NodeFs.writeFileSync(NodePath.join(other, "note.ts"), "export const note = 1\n")
  NodeFs.writeFileSync(
    NodePath.join(root, "src/uses.ts"),
    'import { four } from "../../outside/consumer.ts"\n\nexport const wrong: string = four\n'
  )
  NodeFs.symlinkSync(NodePath.join(outside, "secret.ts"), NodePath.join(root, "linked.ts"))
  NodeFs.symlinkSync(outside, NodePath.join(root, "outdir"))
  return { base, root, outside, other }
}

/** Every file under `dir` (symlinks not followed) with its text and mtime, to prove none changed. */
export const snapshot = (dir: string): Readonly<Record<string, string>> =>
  Object.fromEntries(
    NodeFs.readdirSync(dir, { recursive: true, encoding: "utf8" })
      .map((name) => NodePath.join(dir, name))
      .filter((path) => NodeFs.lstatSync(path).isFile())
      .map((path) => [path, `${NodeFs.statSync(path).mtimeMs} ${NodeFs.readFileSync(path, "utf8")}`])
  )
